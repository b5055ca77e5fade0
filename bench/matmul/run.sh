#!/bin/bash
# bench/matmul/run.sh: on the H200 (about 3 minutes): correctness of every matmul kernel variant
# on small odd-sized problems and at the largest cases, then TFLOP/s of `cuda` against cuBLASLt
# `lib` at the largest case of every dtype of matmul_fp32_fp16_fp8 and batched_matmul.
# usage: bench/matmul/run.sh [path/to/tilebench]   (default: build/tilebench)
set -u
cd "$(dirname "$0")/../.."
TB=${1:-${TILEBENCH:-build/tilebench}}
[ -x "$TB" ] || { echo "no tilebench binary at $TB (build first, or pass its path)"; exit 2; }
echo "== device"; "$TB" devices
echo "== tb.blas"; "$TB" script tests/gpu/blas.lua; blas_rc=$?
echo "== correctness (small: every variant vs CPU; largest: cuda and lib vs reference)"
"$TB" script tests/gpu/matmul_check.lua; check_rc=$?
echo "== timing at the largest cases (median, L2 flushed)"
"$TB" script bench/matmul/time.lua; time_rc=$?
echo "== exit codes: blas $blas_rc, matmul_check $check_rc, time $time_rc"
[ $blas_rc -eq 0 ] && [ $check_rc -eq 0 ] && [ $time_rc -eq 0 ]
