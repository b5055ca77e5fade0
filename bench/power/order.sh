#!/usr/bin/env bash
# bench/power/order.sh: issue 19's target for power-capped kernels. A case's result must not depend
# on what ran before it: for each case, 5 processes (REPEATS) in each order -- lib then cuda, cuda
# then lib, lib alone, cuda alone -- each a fresh `tilebench run` PAUSE seconds after the last;
# then summary.lua prints, per case, each implementation's median per process and order, its
# spread over all processes ((max - min) / median of the per-process medians), the SM clock and
# the share of samples under a power or thermal cap, and E_lib (lib / cuda time, the processes that
# ran both) with its spread. Target: every spread <= 1 % (H200).
# usage: bench/power/order.sh OUTDIR [CASE...]
#   CASE: matmul (matmul_fp32_fp16_fp8 fp16, K = 20480: 4096 x 4096 x 20480), bmm (batched_matmul
#   fp16 at its largest case), or OPERATOR:DTYPE:CASES (CASES as --cases takes it). Default: both.
#   env: TB (default build/tilebench), REPEATS (5), PAUSE (seconds between processes, 5),
#        GPU_LABEL (H200), FLAGS (more `run` flags, e.g. "--conditions cooldown",
#        "--conditions sequential" or "--exposure-scope case --preload-scope device" to measure
#        another protocol; default: the timer's defaults)
# Results go to OUTDIR/results (results/ of the tree is left alone); OUTDIR/order.md holds the table
# (give each protocol its own OUTDIR; scripts/gpu-session.sh's $SUFFIX does).
# The device tool allows 10 minutes a command: one case per call (about 20 processes of 5-15 s).
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: order.sh OUTDIR [CASE...]}
shift
TB=${TB:-build/tilebench}
REPEATS=${REPEATS:-5}
PAUSE=${PAUSE:-5}
LABEL=${GPU_LABEL:-H200}
[ -x "$TB" ] || { echo "no tilebench binary at $TB (build first)"; exit 2; }
[ $# -gt 0 ] || set -- matmul bmm
mkdir -p "$OUT"
export TILEBENCH_RESULTS_DIR=$OUT/results
runs=$OUT/runs.txt
for spec in "$@"; do
  case $spec in
    matmul) spec=matmul_fp32_fp16_fp8:fp16:last ;;
    bmm) spec=batched_matmul:fp16:last ;;
  esac
  IFS=: read -r op dtype cases <<< "$spec"
  for rep in $(seq 1 "$REPEATS"); do
    for order in lib,cuda cuda,lib lib cuda; do
      sleep "$PAUSE"
      log=$OUT/$op-$dtype-${order/,/-}-$rep.log
      t0=$(date +%s)
      # shellcheck disable=SC2086
      "$TB" run --operator "$op" --dtype "$dtype" --cases "$cases" --impl "$order" --gpu "$LABEL" \
        --quiet ${FLAGS:-} > "$log" 2>&1
      rc=$?
      id=$(sed -n 's/^run \([^ :]*\)[: ].*/\1/p' "$log" | head -1)
      echo "$op $dtype $order $rep $id rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$runs"
    done
  done
done
"$TB" script bench/power/summary.lua "$OUT/results/$LABEL/runs" "$runs" | tee "$OUT/order.md"
