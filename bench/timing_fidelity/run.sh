#!/usr/bin/env bash
# run.sh: the timing-fidelity benchmark (issue 3). Times the cases of kernels.cu with tilebench
# (./build/tilebench), with ncu (--cache-control all --clock-control none, gpu__time_duration.sum)
# and with triton.testing.do_bench where python3, torch and triton exist; then stability (one
# case table over 5 fresh processes) and overhead (sweep wall time vs GPU busy time).
# usage (repo root): bash bench/timing_fidelity/run.sh [OUTDIR]    ~3-5 minutes on an H200
# writes OUTDIR/timing_fidelity_H200.csv (and the raw files) and copies the CSVs to bench/results/.
set -uo pipefail
OUT=${1:-bench/results/timing_fidelity_raw}
GPU=${TB_GPU_LABEL:-H200}
mkdir -p bench/results
echo "== $(date +%T) building kernels.cu (cubin for tilebench and do_bench, program for ncu)"
. "$(dirname "$0")/common.sh"
cat "$W/cases.txt"

# Stability first: its processes also fill the NVRTC cache with the timer's two kernels (evict.cu,
# clock_probe.cu), a one-time cost per machine that would otherwise land in the overhead sweep.
step "stability: 5 fresh processes"
for i in 1 2 3 4 5; do
  "$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/cases.txt" "$OUT/stability_$i.csv" stability 2>> "$OUT/tilebench.log" ||
    echo "stability run $i failed (see tilebench.log)"
done

step "tilebench sweep (defaults: adaptive, CUPTI, graph, 2 x L2 read eviction, clock check)"
"$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/cases.txt" "$OUT/tilebench.csv" sweep 2>> "$OUT/tilebench.log" | tee "$OUT/overhead.txt"
cat "$OUT/tilebench.log" >&2

# Protocol variants, for comparison only (the CSV's tilebench_us is the default above):
# flush_mode=write is the old memset eviction (leaves dirty lines in the L2); flush_tlb_bytes adds
# a sweep of one read per 2 MiB page over 32 GiB to each eviction (cold TLBs, as after ncu's flush?).
step "tilebench variant: flush_mode=write"
"$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/cases.txt" "$OUT/tilebench_write.csv" sweep flush_mode=write \
  2>> "$OUT/tilebench.log" | tee "$OUT/overhead_write.txt"
step "tilebench variant: flush_tlb_bytes=32 GiB"
"$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/cases.txt" "$OUT/tilebench_tlb.csv" sweep flush_tlb_bytes=34359738368 \
  2>> "$OUT/tilebench.log" | tee "$OUT/overhead_tlb.txt"

if command -v ncu >/dev/null; then
  step "ncu (--cache-control all --clock-control none, gpu__time_duration.sum), 3 launches per case"
  timeout 240 ncu --cache-control all --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    -k 'regex:^(copy4|scale4|add4|fma_loop|nop)$' --log-file "$OUT/ncu.csv" "$W/fid_cases" --ncu 3 \
    > "$OUT/ncu_manifest.txt" 2> "$OUT/ncu.log" || { echo "ncu failed (exit $?):"; tail -5 "$OUT/ncu.log"; }
  # The plan protocol: ncu without its own cache control, the program evicting the L2 once before
  # each launch sequence (fid_evict, a 2 x L2 read), as tilebench does before each run. ncu's
  # --cache-control all flushes before each kernel, so a plan's kernels 2 and 3 start with an
  # L2 that kernel 1 did not leave dirty (docs/MEASUREMENT.md).
  step "ncu --cache-control none, one read eviction before each launch sequence (tilebench's protocol)"
  timeout 240 ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    -k 'regex:^(copy4|scale4|add4|fma_loop|nop)$' --log-file "$OUT/ncu_evict.csv" "$W/fid_cases" --ncu 3 evict \
    > "$OUT/ncu_evict_manifest.txt" 2> "$OUT/ncu_evict.log" || { echo "ncu (eviction protocol) failed (exit $?)"; }
else
  echo "ncu not on PATH: the ncu_us column stays empty"
fi

if python3 -c 'import torch, triton' 2>/dev/null; then
  step "triton.testing.do_bench on the same cubin"
  timeout 240 python3 "$HERE/do_bench.py" "$W/fid.cubin" "$W/cases.txt" "$OUT/do_bench.csv" 2> "$OUT/do_bench.log" ||
    { echo "do_bench failed:"; tail -5 "$OUT/do_bench.log"; }
else
  echo "python3 with torch and triton not found: the do_bench_us column stays empty"
fi

step "summary"
python3 "$HERE/merge.py" "$W/cases.txt" "$OUT" "$GPU"
# merged, not copied: bench/results/timing_fidelity_<GPU>.csv also holds operators.sh's rows of the
# suite's kernels, which a copy would drop (rows of the same kernel, nop_1 included, replaced)
if [ -f "$OUT/timing_fidelity_$GPU.csv" ]; then
  python3 "$HERE/operators.py" merge "$OUT/timing_fidelity_$GPU.csv" "bench/results/timing_fidelity_$GPU.csv" ||
    echo "merging into bench/results/timing_fidelity_$GPU.csv failed"
fi
for f in tilebench.csv tilebench_write.csv tilebench_tlb.csv do_bench.csv overhead.txt overhead_write.txt overhead_tlb.txt variants.csv; do
  [ -f "$OUT/$f" ] && cp "$OUT/$f" "bench/results/timing_fidelity_${GPU}_${f}"
done
cat "$OUT"/stability_*.csv > "bench/results/timing_fidelity_${GPU}_stability.csv" 2>/dev/null
exit 0
