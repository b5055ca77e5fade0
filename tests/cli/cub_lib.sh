#!/usr/bin/env bash
# The sorting operators' `lib` (CUB through libtb_cub.so, host/cub/tb_cub.cu), without a GPU:
#  1. TILEBENCH_CUB_LIB naming a missing file: tb.cub.available() is false with that path and the
#     loader's reason, and radix_sort's and top_k_selection's lib.supports() say unsupported with it;
#  2. where this build made libtb_cub.so (nvcc found): it opens, reports CUB's version (CUB_VERSION,
#     e.g. 300001) and its path, and lib.supports records the version as the row's configuration;
#     without a GPU, tb.cub.temp_bytes (CUB asks the device) fails as an error, not a crash.
# TILEBENCH_CUB_LIB, when set, is the only place looked at (no silent fallback to the build's copy).
set -u
TB=${TILEBENCH:?}
lib=${TB_BUILD_DIR:?}/libtb_cub.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
cat >"$work/probe.lua" <<'LUA'
local cub = require("tb.cub")
local ok, why = cub.available()
print("available", ok, why)
if ok then local v = cub.version(); print("version", v.version, v.path) end
local opm = require("tilebench.operator")
for _, name in ipairs({ "radix_sort", "top_k_selection" }) do
  local op = opm.load(name)
  local case = opm.cases_of(op, name == "radix_sort" and "int32" or "fp32")[1]
  local spec = op.module.implementations.lib
  local sup, reason = spec.supports(case)
  print("supports", name, sup, reason, spec.default and spec.default.cub)
end
if ok and not require("tb.device").available() then
  local okq, err = pcall(cub.temp_bytes, "sort_i32", 1000)
  print("temp_bytes", okq, err)
end
LUA
out=$(TILEBENCH_CUB_LIB=/nonexistent/tb/libtb_cub.so "$TB" script "$work/probe.lua" 2>&1)
echo "$out"
check "absent: not available" grep -q "^available	false	libtb_cub.so (CUB's sorts.*not found (TILEBENCH_CUB_LIB)" <<<"$out"
check "absent: naming the path" grep -q "^  /nonexistent/tb/libtb_cub.so: " <<<"$out"
check "absent: the loader's reason" grep -q "No such file or directory" <<<"$out"
check "absent: radix_sort's lib unsupported with the reason" grep -q "^supports	radix_sort	false	CUB: libtb_cub.so" <<<"$out"
check "absent: top_k_selection's lib unsupported with the reason" grep -q "^supports	top_k_selection	false	CUB: libtb_cub.so" <<<"$out"
if [ -f "$lib" ]; then
  out=$("$TB" script "$work/probe.lua" 2>&1)
  echo "$out"
  check "built: available" grep -q "^available	true" <<<"$out"
  check "built: CUB's version and the path" grep -Eq "^version	[1-9][0-9]{5}	$lib" <<<"$out"
  check "built: lib supported, CUB's version in the configuration" grep -Eq "^supports	radix_sort	true	nil	[0-9]+\.[0-9]+\.[0-9]+" <<<"$out"
  if "$TB" devices >/dev/null 2>&1; then
    echo "skip the no-GPU query check: a GPU is present"
  else
    check "built, no GPU: CUB's storage query is an error, not a crash" grep -q "^temp_bytes	false	." <<<"$out"
  fi
else
  echo "skip: this build has no libtb_cub.so (no nvcc)"
fi
exit $fail
