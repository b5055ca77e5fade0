#!/usr/bin/env bash
# GPU: cuBLASLt's handle is destroyed when tilebench exits (issue 13: LeakSanitizer reported it).
# A script creates and runs one cuBLASLt matmul; cuBLASLt's own API trace (CUBLASLT_LOG_LEVEL=5,
# to a file) must then show cublasLtDestroy after cublasLtCreate. Exits 77 without a GPU.
set -u
: "${TILEBENCH:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/one_matmul.lua" <<'LUA'
local ok, why = require("tb.device").available()
if not ok then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local blas = require("tb.blas")
local okb, whyb = blas.available()
if not okb then io.stderr:write("skip: ", tostring(whyb), "\n") os.exit(77) end
local tensor = require("tb.tensor")
local a = tensor.from_table({1, 2, 3, 4}, "fp32", {4})
local b = tensor.from_table({1, 0, 0, 1}, "fp32", {4})
local c = tensor.empty({4}, "fp32")
local op = blas.matmul{a = a, b = b, c = c, m = 2, n = 2, k = 2}
op:run()
op:close()
print("matmul ran")
LUA
CUBLASLT_LOG_LEVEL=5 CUBLASLT_LOG_FILE="$tmp/lt.log" "$TILEBENCH" script "$tmp/one_matmul.lua" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 77 ] && { cat "$tmp/out"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: the script exited $rc"; cat "$tmp/out"; exit 1; }
grep -q "cublasLtCreate" "$tmp/lt.log" || { echo "FAIL: no cublasLtCreate in cuBLASLt's API trace"; head -20 "$tmp/lt.log"; exit 1; }
awk '/cublasLtCreate/ {created=1} /cublasLtDestroy/ && created {destroyed=1} END {exit !destroyed}' "$tmp/lt.log" \
  || { echo "FAIL: the handle was not destroyed at exit (no cublasLtDestroy after cublasLtCreate)"; tail -20 "$tmp/lt.log"; exit 1; }
echo "ok   cuBLASLt handle destroyed at exit"
