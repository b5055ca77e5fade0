#!/bin/bash
# bench/matmul/ncu.sh: ncu's speed-of-light, memory and compute sections for the `cuda` default
# and the cuBLASLt `lib` kernel at the largest case of batched_matmul fp16 and matmul fp16
# (bench/matmul/profile.lua runs each plan; ncu flushes caches and leaves clocks alone).
# usage: bench/matmul/ncu.sh OUTDIR [path/to/tilebench]
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: ncu.sh OUTDIR [tilebench]}
TB=${2:-build/tilebench}
mkdir -p "$OUT"
prof() { # name op dtype impl cfg|-
  local name=$1; shift
  timeout 120 ncu --cache-control all --clock-control none -k regex:'gemm|nvjet|sm90|cutlass|xmma' -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section Occupancy "$TB" script bench/matmul/profile.lua "$@" 1 > "$OUT/$name.txt" 2>&1
  echo "$name: rc=$?"
}
prof batched_fp16_cuda batched_matmul fp16 cuda pp:128:4
prof batched_fp16_lib batched_matmul fp16 lib -
prof matmul_fp16_cuda matmul_fp32_fp16_fp8 fp16 cuda tma:256:3
prof matmul_fp16_lib matmul_fp32_fp16_fp8 fp16 lib -
