#!/usr/bin/env bash
# The cuDNN `lib` of batch_normalization, flash_attention, the convolutions and 2d_max_pooling where
# cuDNN cannot be used, without a GPU:
#  1. TILEBENCH_CUDNN_LIB naming a missing file: tb.dnn.available() is false with the path and
#     the loader's reason, and the implementation's supports() says unsupported with that reason;
#  2. TILEBENCH_CUDNN_LIB naming a library (the test stub of cuDNN 9): it opens and reports its
#     version and path; with no GPU the probe then fails like any GPU work (no_driver), which is
#     not an "unsupported" answer;
#  3. the stub reporting version 8.9 (STUB_CUDNN_VERSION): unsupported, naming the version.
set -u
TB=${TILEBENCH:?}
stub=${TB_BUILD_DIR:?}/libstub_cudnn.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
cat >"$work/probe.lua" <<'LUA'
local dnn = require("tb.dnn")
local ok, why = dnn.available()
print("available", ok, why)
if ok then local v = dnn.version(); print("version", v.version, v.path) end
for _, name in ipairs({ "batch_normalization", "flash_attention", "1d_conv", "2d_conv", "3d_conv", "2d_max_pooling" }) do
  local op = require("tilebench.operator").load(name)
  local case = require("tilebench.operator").cases_of(op, "fp16")[1]
  local okc, sup, reason = pcall(op.module.implementations.lib.supports, case)
  print(name .. " supports", okc, sup, reason)
  if not okc then print(name .. " class", require("tb.error").class(sup)) end
end
LUA
out=$(TILEBENCH_CUDNN_LIB=/nonexistent/tb/libcudnn.so.9 "$TB" script "$work/probe.lua" 2>&1)
echo "$out"
check "absent: not available, naming the path" grep -q "^available	false	cuDNN not found: TILEBENCH_CUDNN_LIB=/nonexistent/tb/libcudnn.so.9" <<<"$out"
check "absent: the loader's reason" grep -q "No such file or directory" <<<"$out"
for op in batch_normalization flash_attention 1d_conv 2d_conv 3d_conv 2d_max_pooling; do
  check "absent: $op lib is unsupported with the reason" \
    grep -q "^$op supports	true	false	cuDNN: cuDNN not found: TILEBENCH_CUDNN_LIB=" <<<"$out"
done
if [ -f "$stub" ]; then
  out=$(TILEBENCH_CUDNN_LIB="$stub" "$TB" script "$work/probe.lua" 2>&1)
  echo "$out"
  check "stub: available" grep -q "^available	true" <<<"$out"
  check "stub: version and path" grep -q "^version	91900	$stub" <<<"$out"
  out=$(STUB_CUDNN_VERSION=8907 TILEBENCH_CUDNN_LIB="$stub" "$TB" script "$work/probe.lua" 2>&1)
  echo "$out"
  for op in batch_normalization flash_attention 1d_conv 2d_conv 3d_conv 2d_max_pooling; do
    check "stub as cuDNN 8.9: $op lib is unsupported, naming the version" \
      grep -q "^$op supports	true	false	cuDNN: cuDNN ($stub) is version 8907; tilebench speaks cuDNN 9's backend API" <<<"$out"
  done
  out=$(TILEBENCH_CUDNN_LIB="$stub" "$TB" script "$work/probe.lua" 2>&1)
  if "$TB" devices >/dev/null 2>&1; then
    echo "skip the no-GPU probe check: a GPU is present"
  else
    for op in batch_normalization flash_attention 1d_conv 2d_conv 3d_conv 2d_max_pooling; do
      check "stub, no GPU: $op's probe fails as no_driver, not unsupported" grep -q "^$op class	no_driver" <<<"$out"
    done
  fi
else
  echo "FAIL the stub library $stub was not built"; fail=1
fi
exit $fail
