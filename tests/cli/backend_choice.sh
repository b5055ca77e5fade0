#!/usr/bin/env bash
# backend_choice.sh: the GPU backend is chosen at run time by TILEBENCH_BACKEND. An unknown name
# stops every command at start-up with status 2, naming the known backends; "cuda" is what runs
# without the variable (the same answer from tb.device.versions()).
set -u
: "${TILEBENCH:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(TILEBENCH_BACKEND=nosuch "$TILEBENCH" list 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown backend: exit $rc ($out)"
grep -qx "tilebench: TILEBENCH_BACKEND='nosuch': unknown GPU backend 'nosuch' (known: cuda)" <<<"$out" ||
  fail "unknown backend message: $out"
cat > "$tmp/which.lua" <<'LUA'
local v = require("tb.device").versions()
io.write(tostring(v.backend), " ", tostring(v.nvrtc ~= nil), "\n")
LUA
a=$("$TILEBENCH" script "$tmp/which.lua" 2>&1) || fail "default: $a"
b=$(TILEBENCH_BACKEND=cuda "$TILEBENCH" script "$tmp/which.lua" 2>&1) || fail "cuda: $b"
[ "$a" = "$b" ] || fail "TILEBENCH_BACKEND=cuda ($b) differs from the default ($a)"
grep -q "^cuda " <<<"$a" || fail "default backend: $a"
echo ok
