#!/usr/bin/env bash
# triton_missing.sh: where triton does not import (here: a `triton` package on PYTHONPATH that
# raises ImportError) or there is no interpreter, the triton implementation is `unsupported` with
# the reason, `tilebench compile --impl triton` plans nothing for it and exits 0, and nothing
# crashes; the operators still load and list.
set -u
: "${TILEBENCH:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/shadow/triton"
echo 'raise ImportError("no triton in this test")' > "$tmp/shadow/triton/__init__.py"

cat > "$tmp/probe.lua" <<'LUA'
local spec = require("tilebench.operator").load("vector_add").module.implementations.triton
local sup, reason = spec.supports({ params = {}, dtype = "fp32" }, { props = { index = 0 } })
io.write(tostring(sup), "\n", tostring(reason), "\n")
LUA
out=$(PYTHONPATH="$tmp/shadow" "$TILEBENCH" script "$tmp/probe.lua" 2>"$tmp/err") || fail "raised: $(cat "$tmp/err")"
[ "$(sed -n 1p <<<"$out")" = false ] || fail "triton supported while it does not import: $out"
grep -q "^triton does not import .*no triton in this test" <<<"$(sed -n 2p <<<"$out")" || fail "reason: $out"

out=$(TILEBENCH_PYTHON="$tmp/no-such-python3" "$TILEBENCH" script "$tmp/probe.lua" 2>"$tmp/err") || fail "raised: $(cat "$tmp/err")"
[ "$(sed -n 1p <<<"$out")" = false ] || fail "triton supported without python: $out"
grep -q "^no python: .*no-such-python3" <<<"$(sed -n 2p <<<"$out")" || fail "reason without python: $out"

# compile: the triton plans are left out (unsupported), the reference still compiles
out=$(PYTHONPATH="$tmp/shadow" TILEBENCH_CACHE_DIR="$tmp/cache" "$TILEBENCH" compile --operator mul2 --impl triton \
      --cases first 2>&1) || fail "compile failed without triton: $out"
grep -qi "triton" <<<"$out" && grep -q "Traceback\|attempt to" <<<"$out" && fail "compile crashed: $out"
"$TILEBENCH" list >/dev/null 2>&1 || fail "list failed"
echo ok
