#!/usr/bin/env bash
# `tilebench compile` (NVRTC, no GPU): fills the NVRTC cache with what the same `run` would
# compile, in several processes; a second call finds everything cached; --autotune covers every
# valid candidate; a kernel that does not compile fails the command (exit 1) with the operator,
# case and configuration named, while the other plans still compile; so does an operator that
# does not load; an unusable cache directory
# fails every plan, naming it; a damaged cache entry is recompiled with a warning; a bad option is
# a usage error (exit 2).
set -u
TB=${TILEBENCH:?}
HOME_DIR=${TILEBENCH_HOME:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TILEBENCH_CACHE_DIR="$work/cache"
fail=0
expect() { # status, pattern, args...
  local want=$1 pat=$2; shift 2
  local out rc
  out=$("$TB" compile "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pat" <<<"$out"; then
    echo "FAIL compile $* -> rc=$rc (want $want, /$pat/), output: $out"; fail=1
  else
    echo "ok   compile $* -> $rc"
  fi
}
cd "$HOME_DIR"
# vector_add, first case of each of its 4 dtypes: a reference and a default plan each.
expect 0 "^compiled 8 plans \(8 kernels: 8 compiled, 0 cached\) of 8 in .* with 2 processes; 0 failed" --operator vector_add --cases first --jobs 2
n=$(ls "$TILEBENCH_CACHE_DIR" | wc -l)
if [ "$n" -lt 2 ]; then echo "FAIL the cache holds $n files"; fail=1; else echo "ok   the cache holds $n files"; fi
expect 0 "^compiled 8 plans \(8 kernels: 0 compiled, 8 cached\) .* 0 failed" --operator vector_add --cases first --jobs 3
[ "$(ls "$TILEBENCH_CACHE_DIR" | wc -l)" -eq "$n" ] && echo "ok   nothing new compiled" || { echo "FAIL recompiled"; fail=1; }
# --autotune: the reference plus every valid candidate (fp32, last case: 32 candidates)
expect 0 "^compiled 33 plans \(17 kernels: 15 compiled, 2 cached\) of 33 .* 0 failed" --operator vector_add --dtype fp32 --cases last --autotune --jobs 2
# A kernel source that does not compile: named, exit 1, the rest compiled.
mkdir -p "$work/ops"
cp -r tests/fixtures/operators/broken_oob_write "$work/ops/broken_compile"
sed -i 's/broken_oob_write/broken_compile/g' "$work/ops/broken_compile/operator.lua"
mv "$work/ops/broken_compile/broken_oob_write.cu" "$work/ops/broken_compile/broken_compile.cu"
printf '\nextern "C" __global__ void not_c(float *p) { p[0] = undeclared_name; }\n' >> "$work/ops/broken_compile/broken_compile.cu"
TILEBENCH_OPERATOR_PATH="$work/ops" expect 1 "broken_compile .* (good|broken|reference).*undeclared_name" --operator broken_compile --jobs 2
out=$(TILEBENCH_OPERATOR_PATH="$work/ops" "$TB" compile --operator broken_compile --jobs 2 2>&1)
grep -qE "^compiled 0 plans .* failed" <<<"$out" && echo "ok   failures counted" || { echo "FAIL summary: $out"; fail=1; }
# An operator that does not load (its config.yaml does not parse) fails the command, named, while
# the others still compile.
cp -r operators/vector_add "$work/ops/bad_yaml"
printf 'case_grid:\n  n: [1024, 2048\ndtype: [fp32]\n' >"$work/ops/bad_yaml/config.yaml"
TILEBENCH_OPERATOR_PATH="$work/ops" expect 1 "FAIL bad_yaml: failed to load: .*bad_yaml/config.yaml:3" --operator bad_yaml,vector_add --cases first --jobs 1
out=$(TILEBENCH_OPERATOR_PATH="$work/ops" "$TB" compile --operator bad_yaml,vector_add --cases first --jobs 1 2>&1)
grep -qE "^compiled 8 plans .* of 8 .* 0 failed" <<<"$out" && echo "ok   the others compiled" || { echo "FAIL others: $out"; fail=1; }
# A cache directory that cannot be used fails the command, naming it (never "0 failed" with nothing kept).
touch "$work/not-a-dir"
TILEBENCH_CACHE_DIR="$work/not-a-dir/cache" expect 1 "compile cache $work/not-a-dir/cache is unusable: Not a directory" --operator vector_add --cases first --jobs 1
out=$(TILEBENCH_CACHE_DIR="$work/not-a-dir/cache" "$TB" compile --operator vector_add --cases first --jobs 1 2>&1)
grep -qE "^compiled 0 plans .* 8 failed" <<<"$out" && echo "ok   unusable cache: every plan failed" || { echo "FAIL summary: $out"; fail=1; }
# A damaged entry (a cubin cut in half keeps its ELF header) is a miss: recompiled and replaced,
# with a warning that reaches the user from compile's processes (and through `script` below).
sumsize() { sed -n 's/^size //p' "$1.sum"; }
for f in "$TILEBENCH_CACHE_DIR"/*.cubin; do
  head -c $(( $(stat -c %s "$f") / 2 )) "$f" > "$work/half" && cat "$work/half" > "$f"
done
expect 0 "^compiled 8 plans .* 0 failed" --operator vector_add --cases first --jobs 1
for f in "$TILEBENCH_CACHE_DIR"/*.cubin; do
  head -c $(( $(stat -c %s "$f") / 2 )) "$f" > "$work/half" && cat "$work/half" > "$f"
done
expect 0 "warning: compile cache entry .*\.cubin is damaged .*; recompiling" --operator vector_add --cases first --jobs 2
whole=0
for f in "$TILEBENCH_CACHE_DIR"/*.cubin; do [ "$(stat -c %s "$f")" = "$(sumsize "$f")" ] && whole=$((whole + 1)); done
[ "$whole" -ge 4 ] && echo "ok   $whole damaged entries replaced" || { echo "FAIL $whole entries replaced"; fail=1; }
cat > "$work/recompile.lua" <<'LUA'
local kernel = require("tb.kernel")
local src = 'extern "C" __global__ void k(float *p) { p[0] = 1.0f; }'
local a = assert(kernel.compile(src, { name = "k.cu", arch = "sm_90", load = false }))
local path = os.getenv("TILEBENCH_CACHE_DIR") .. "/" .. a.key .. ".cubin"
local f = assert(io.open(path, "rb")); local image = f:read("a"); f:close()
f = assert(io.open(path, "wb")); f:write(image:sub(1, #image // 2)); f:close()
local b = assert(kernel.compile(src, { name = "k.cu", arch = "sm_90", load = false }))
local c = assert(kernel.compile(src, { name = "k.cu", arch = "sm_90", load = false }))
print(string.format("sizes %d %d %d, cached %s %s", a.size, b.size, c.size, tostring(b.from_cache), tostring(c.from_cache)))
LUA
out=$("$TB" script "$work/recompile.lua" 2>&1)
if grep -qE "warning: compile cache entry .*\.cubin is damaged \([0-9]+ bytes where [0-9]+ were written\); recompiling" <<<"$out" &&
   grep -qE "^sizes ([0-9]+) \1 \1, cached false true$" <<<"$out"; then
  echo "ok   truncated cubin: warning, recompiled, then a hit"
else
  echo "FAIL truncated cubin: $out"; fail=1
fi
expect 2 "unknown operator" --operator no_such_op
expect 2 "jobs" --operator vector_add --jobs 0
exit $fail
