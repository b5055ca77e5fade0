#!/usr/bin/env bash
# no_driver.sh: on a machine without a CUDA driver, a script that needs a device fails with the
# driver message naming libcuda.so.1 and a non-zero exit; available() says the same without
# raising; compiling with load = false still works (NVRTC needs no driver). Skips (77) where
# libcuda.so.1 is loadable, since an explicit empty TILEBENCH_CUDA_LIB_DIR cannot hide it.
set -u
: "${TILEBENCH:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty"
export TILEBENCH_CUDA_LIB_DIR="$tmp/empty"

cat > "$tmp/probe.lua" <<'LUA'
local v = require("tb.device").versions()
io.write(v.driver_path or "", "\n", v.nvrtc or "", "\n")
LUA
probe=$("$TILEBENCH" script "$tmp/probe.lua" 2>"$tmp/err") || fail "versions() raised: $(cat "$tmp/err")"
found=$(sed -n 1p <<<"$probe")
nvrtc=$(sed -n 2p <<<"$probe")
if [ -n "$found" ]; then
  echo "skipped: libcuda.so.1 is loadable here ($found)"
  exit 77
fi

cat > "$tmp/count.lua" <<'LUA'
print(require("tb.device").count())
LUA
out=$("$TILEBENCH" script "$tmp/count.lua" 2>"$tmp/err"); rc=$?
[ $rc -ne 0 ] || fail "count() without a driver exited 0 (stdout: $out)"
[ -z "$out" ] || fail "count() printed: $out"
grep -Eq '^tilebench: no CUDA driver found \(libcuda\.so\.1: .*libcuda\.so\.1.*\)$' "$tmp/err" \
  || fail "message: $(cat "$tmp/err")"

cat > "$tmp/available.lua" <<'LUA'
local ok, why = require("tb.device").available()
print(ok, why)
LUA
out=$("$TILEBENCH" script "$tmp/available.lua" 2>"$tmp/err") || fail "available() raised: $(cat "$tmp/err")"
grep -Eq '^false	no CUDA driver found \(libcuda\.so\.1: ' <<<"$out" || fail "available(): $out"

cat > "$tmp/compile.lua" <<'LUA'
local r = assert(require("tb.kernel").compile('extern "C" __global__ void k(int *p) { *p = 1; }',
                                              { load = false, arch = "sm_90" }))
print(r.size > 0, #r.key)
LUA
if [ -n "$nvrtc" ]; then
  out=$("$TILEBENCH" script "$tmp/compile.lua" 2>"$tmp/err") || fail "compile without a driver: $(cat "$tmp/err")"
  [ "$out" = "true	64" ] || fail "compile result: $out"
fi
# The class travels: the worker's hello carries error_class = no_driver over its JSON pipe and
# the parent exits 2 with the driver's message alone (cli.lua reads the class, not the text).
for iso in "" "--no-isolate"; do
  TILEBENCH_RESULTS_DIR="$tmp/results" "$TILEBENCH" run --operator vector_add --gpu nodriver --quiet $iso \
    >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] || fail "run $iso without a driver exited $rc: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "run $iso: more than the message: $(cat "$tmp/err")"
  grep -Eq '^tilebench: no CUDA driver found \(libcuda\.so\.1: ' "$tmp/err" || fail "run $iso message: $(cat "$tmp/err")"
done
echo ok
