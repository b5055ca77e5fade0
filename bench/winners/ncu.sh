#!/bin/bash
# bench/winners/ncu.sh: the ncu profiles that would settle the lines docs/WINNERS.md
# (bench/winners/notes.md) leaves "not established": occupancy, warp stall reasons, memory and
# compute throughput of one kernel each, at the operator's largest case of one dtype, with the
# implementation's default configuration. Each profile runs the plan alone through
# bench/matmul/profile.lua (no timer, no reference; ncu flushes the caches and leaves the clocks
# alone, as bench/matmul/ncu.sh). One text file per profile in OUTDIR; a summary line each.
# usage: bench/winners/ncu.sh OUTDIR [path/to/tilebench] [NAME...]   (NAMEs: only those profiles)
# On the GPU machine: bash scripts/gpu-session.sh OUT 'bash bench/winners/ncu.sh OUT/ncu-winners'
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: ncu.sh OUTDIR [tilebench] [NAME...]}
TB=${2:-build/tilebench}
shift $(( $# >= 2 ? 2 : 1 ))
ONLY=" $* "
command -v ncu >/dev/null || { echo "ncu not found"; exit 1; }
mkdir -p "$OUT"
prof() { # name kernel-regex operator dtype impl
  local name=$1 re=$2; shift 2
  [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $name "* ]] || return 0
  timeout 180 ncu --cache-control all --clock-control none -k regex:"$re" -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats \
    "$TB" script bench/matmul/profile.lua "$@" - 2 > "$OUT/$name.txt" 2>&1
  echo "$name ($*): rc=$?"
}
# softmax: our Triton kernel holds the row padded to 16384 lanes, one fp32 program an SM
prof softmax_fp32_triton 'softmax_kernel' softmax fp32 triton
prof softmax_fp32_cuda 'softmax_(cuda|stream)' softmax fp32 cuda
# layernorm: the default cuda layout at K = 10240, fp16 (rho 0.62-0.73)
prof layernorm_fp16_cuda 'layernorm_(cuda|stream)' layernorm fp16 cuda
# jacobi_stencil_2d: Triton's scalar neighbour loads, fp16 against fp32 (rho 0.47 vs 0.83)
prof jacobi_fp16_triton 'jacobi_stencil_2d_kernel' jacobi_stencil_2d fp16 triton
prof jacobi_fp32_triton 'jacobi_stencil_2d_kernel' jacobi_stencil_2d fp32 triton
# 2d_max_pooling: our Triton tile kernel (rho 0.27 fp16)
prof maxpool_fp16_triton 'max_pool2d_kernel' 2d_max_pooling fp16 triton
# gaussian_blur: the pipelined cuda kernel short of its expected time (fp32 slower than one-tile)
prof gaussian_fp32_cuda 'gaussian_blur_(pipe|mma)' gaussian_blur fp32 cuda
prof gaussian_fp16_cuda 'gaussian_blur_(pipe|mma)' gaussian_blur fp16 cuda
# block_sparse_attention: cuda (mma.sync) against Triton (wgmma), both under rho 0.5
prof bsa_fp16_cuda 'block_sparse_attention_cuda' block_sparse_attention fp16 cuda
prof bsa_fp16_triton 'block_sparse_attention_kernel' block_sparse_attention fp16 triton
# 2d_conv: the wgmma implicit GEMM at 0.66-0.71 of cuDNN
prof conv2d_fp16_cuda 'conv_wgmma$' 2d_conv fp16 cuda
# streamk_matmul: cuda at 0.79 of cuBLASLt (the largest case of the grid)
prof streamk_fp16_cuda 'gemm|nvjet|sm90|cutlass|xmma' streamk_matmul fp16 cuda
prof streamk_fp16_lib 'gemm|nvjet|sm90|cutlass|xmma' streamk_matmul fp16 lib
exit 0
