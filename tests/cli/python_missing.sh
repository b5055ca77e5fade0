#!/usr/bin/env bash
# python_missing.sh: with no usable interpreter ($TILEBENCH_PYTHON naming a missing one, or a file
# that is not libpython) tb.python.available() says why without raising, and the torch
# implementation is `unsupported` with that reason; $TILEBENCH_PYTHON naming libpython itself works.
set -u
: "${TILEBENCH:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/probe.lua" <<'LUA'
local ok, why = require("tb.python").available()
io.write(tostring(ok), "\n", tostring(why), "\n")
local spec = require("tilebench.operator").load("vector_add").module.implementations.torch
local sup, reason = spec.supports({ params = {}, dtype = "fp32" }, { props = { index = 0 } })
io.write(tostring(sup), "\n", tostring(reason), "\n")
LUA
out=$(TILEBENCH_PYTHON="$tmp/no-such-python3" "$TILEBENCH" script "$tmp/probe.lua" 2>"$tmp/err") \
  || fail "available() raised: $(cat "$tmp/err")"
[ "$(sed -n 1p <<<"$out")" = false ] || fail "available() true without an interpreter: $out"
grep -q "no-such-python3" <<<"$(sed -n 2p <<<"$out")" || fail "reason does not name the interpreter: $out"
[ "$(sed -n 3p <<<"$out")" = false ] || fail "torch supported without python: $out"
grep -q "^no python: python interpreter .*no-such-python3" <<<"$(sed -n 4p <<<"$out")" || fail "unsupported reason: $out"

echo 'not a library' > "$tmp/libpython3.99.so"
out=$(TILEBENCH_PYTHON="$tmp/libpython3.99.so" "$TILEBENCH" script "$tmp/probe.lua" 2>"$tmp/err") \
  || fail "available() raised on a bad library: $(cat "$tmp/err")"
[ "$(sed -n 1p <<<"$out")" = false ] || fail "a text file accepted as libpython: $out"
grep -q "libpython not found" <<<"$out" || fail "bad library reason: $out"

# The interpreter's own library, named directly (what the GPU machine's libpython3.12.so.1.0 is).
if lib=$(python3 -c 'import sysconfig, os; print(os.path.join(sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")))' 2>/dev/null) \
   && [ -f "$lib" ]; then
  out=$(TILEBENCH_PYTHON="$lib" "$TILEBENCH" script "$tmp/probe.lua" 2>"$tmp/err") || fail "raised: $(cat "$tmp/err")"
  [ "$(sed -n 1p <<<"$out")" = true ] || fail "TILEBENCH_PYTHON=$lib not usable: $out"
fi
echo ok
