#!/usr/bin/env bash
# diag.sh: where ncu's gpu__time_duration and CUPTI's kernel records part (issue 3). Runs on the
# GPU machine; writes OUTDIR/diag.txt and the raw files:
#   1. ncu (kernel replay, the fidelity flags) with the duration and the clocks of each kernel:
#      gpc__cycles_elapsed.max / gpc__cycles_elapsed.avg.per_second is the time the GPCs were
#      counting, which sits inside the duration; sm__cycles_elapsed.avg.per_second the SM clock.
#   2. the tilebench sweep with the default options, graph_group=8 and graph=false, for the
#      enqueue/collect breakdown (enqueue_events_s, group_setup_s).
# usage (repo root, GPU machine): bash bench/timing_fidelity/diag.sh OUTDIR
set -uo pipefail
OUT=${1:?usage: diag.sh OUTDIR}
. "$(dirname "$0")/common.sh"
K='regex:^(copy4|scale4|add4|fma_loop|nop)$'
M=gpu__time_duration.sum,gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg.per_second,sm__cycles_active.max,dram__cycles_elapsed.avg.per_second
if command -v ncu >/dev/null; then
  step "ncu kernel replay with clocks"
  timeout 300 ncu --cache-control all --clock-control none --metrics "$M" --csv --print-units base -k "$K" \
    --log-file "$OUT/ncu_clocks.csv" "$W/fid_cases" --ncu 3 > "$OUT/ncu_clocks_manifest.txt" 2> "$OUT/ncu_clocks.log" ||
    { echo "ncu (clocks) failed"; tail -5 "$OUT/ncu_clocks.log"; }
  ncu --query-metrics --chip gh100 2>/dev/null | grep -i -E "time|duration|front|launch" > "$OUT/ncu_time_metrics.txt"
fi
for v in default graph_group=8 graph=false; do
  step "tilebench sweep: $v"
  opt=$v; [ "$v" = default ] && opt=
  "$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/cases.txt" "$OUT/tb_${v//=/_}.csv" sweep $opt \
    > "$OUT/tb_${v//=/_}.txt" 2>&1; cat "$OUT/tb_${v//=/_}.txt"
done
python3 "$HERE/diag_summary.py" "$OUT" | tee "$OUT/diag.txt"
