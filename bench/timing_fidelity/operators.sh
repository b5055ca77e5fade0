#!/usr/bin/env bash
# operators.sh: the timer checked on the suite's own kernels (issue 19, section 2). For each row
# of operators.py's GROUPS (the `cuda` implementation of vector_add fp32/fp16, softmax fp16,
# layernorm fp16, rmsnorm bf16, argmax fp32, swiglu fp16, mean_reduction fp32, relu bf16 at their
# first and last case, matmul fp16 at its first):
#   1. tilebench's time: `tilebench run --impl cuda --cases ends|first` with the default protocol
#      (CUPTI, adaptive, graph, read eviction before each run), results under OUTDIR;
#   2. the empty kernel (kernels.cu's nop_1) by tilebench (fidelity.lua, defaults);
#   3. ncu's time of the same kernels: the same `tilebench run` (same cases, so the same inputs;
#      no precompile, so every kernel is loaded from the NVRTC cache step 1 used) in one process
#      under ncu --cache-control all --clock-control none, gpu__time_duration.sum, the
#      operators' reference and cuda kernels only (the reference launch separates the cases),
#      with CUDA events as tilebench's clock (ncu is a CUPTI subscriber itself) and a short fixed
#      protocol (1 verification run, 1 warm-up, 5 samples: 7 launches per case); then the empty
#      kernel the same way, launched by fidelity.lua under ncu;
#   4. operators.py: the table against the restated target (fidelity_target.py), in
#      OUTDIR/fidelity_operators.txt and OUTDIR/timing_fidelity_operators_<GPU>.csv; the rows are
#      merged into bench/results/timing_fidelity_<GPU>.csv (same kernel replaced);
#   5. for diagnosis (FID_NCU_EVICT=0 skips it): step 3 again under ncu --cache-control none, so
#      the kernels see tilebench's own read eviction before each run; the table gains a second part.
#   6. for diagnosis (FID_DIAG=0 skips it; shapes.py, docs/MEASUREMENT.md "The small-kernel misses
#      of session 12"): after step 3, the empty kernel at each launch shape ncu saw there, with 64
#      bytes of parameters, and the code-size pair (fma_loop / code_line), timed by tilebench
#      (fidelity.lua, defaults) and by ncu like nop_1, under each cache control of steps 3 and 5;
#      the table gains the excess per launch shape and each row judged against it (diagnosis only,
#      the target and the exit status stay step 4's).
# ncu and tilebench's CUPTI never run at the same time (steps 1-2, then 3 and 5).
# usage (repo root, GPU machine, ./build/tilebench): bash bench/timing_fidelity/operators.sh OUTDIR
#   ~3-5 minutes on an H200 with a warm NVRTC cache. Exit 0 when every row meets its target.
set -uo pipefail
OUT=${1:-}
if [ -z "$OUT" ] || [ $# -ne 1 ]; then
  echo "usage: bash bench/timing_fidelity/operators.sh OUTDIR" >&2
  exit 2
fi
GPU=${TB_GPU_LABEL:-H200}
HERE=$(cd "$(dirname "$0")" && pwd)
PY="$HERE/operators.py"
command -v python3 >/dev/null || { echo "operators.sh: python3 is needed for the table" >&2; exit 2; }
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/tilebench_results" "$OUT/ncu_results" "$OUT"/ncu_*.csv "$OUT"/ncu_*.log "$OUT"/ncu_*groups.txt \
  "$OUT/tilebench_run.log" "$OUT"/tilebench_nop.* "$OUT"/tilebench_diag.* "$OUT/diag_cases.txt" "$OUT"/timing_fidelity_diag_*.csv
. "$HERE/common.sh" # builds $W/fid.cubin (the empty kernel) and $W/cases.txt; sets TB, W, step
grep '^nop_1 ' "$W/cases.txt" > "$W/nop.txt" || { echo "operators.sh: no nop_1 case in kernels.cu's table" >&2; exit 1; }
# The NVRTC cache tilebench uses (rtc_cache_dir in host/gpu/rtc.c, the same order)
if [ -n "${TILEBENCH_CACHE_DIR:-}" ]; then CACHE=$TILEBENCH_CACHE_DIR
elif [ -n "${XDG_CACHE_HOME:-}" ]; then CACHE=$XDG_CACHE_HOME/tilebench/rtc
elif [ -n "${HOME:-}" ]; then CACHE=$HOME/.cache/tilebench/rtc
else CACHE=/tmp/tilebench-$(id -u)/rtc; fi
cache_list() { (cd "$CACHE" 2>/dev/null && find . -type f ! -name '*.tmp*' | sort); }

python3 "$PY" groups > "$W/groups.txt" || exit 1
step "tilebench: the cuda implementation, default protocol ($(wc -l < "$W/groups.txt") runs)"
while read -r dtype cases ops regex; do
  echo "== tilebench run --operator $ops --dtype $dtype --cases $cases --impl cuda" >> "$OUT/tilebench_run.log"
  TILEBENCH_RESULTS_DIR="$OUT/tilebench_results" timeout 180 "$TB" run --operator "$ops" --dtype "$dtype" \
    --cases "$cases" --impl cuda --gpu "$GPU" >> "$OUT/tilebench_run.log" 2>&1 ||
    echo "tilebench run ($ops $dtype) failed (exit $?): see tilebench_run.log"
done < "$W/groups.txt"
step "tilebench: the empty kernel (fidelity.lua, defaults)"
"$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/nop.txt" "$OUT/tilebench_nop.csv" sweep \
  > "$OUT/tilebench_nop.log" 2>&1 || echo "tilebench (empty kernel) failed: see tilebench_nop.log"

# ncu over the groups and the empty kernel: PREFIX (ncu or ncu_evict) names the logs, CC is ncu's
# --cache-control. tilebench's side of these runs is not a measurement: CUDA events (no CUPTI under
# ncu), no graph, no clock probe, 1 warm-up and 5 samples (each after tilebench's read eviction);
# every launch of the cuda kernel is profiled.
run_ncu() {
  local prefix=$1 cc=$2 i=0
  local ncu=("$NCU" --cache-control "$cc" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base
             --target-processes application-only)
  local short=(--no-isolate --no-precompile --quiet --protocol fixed --warmup 1 --repeat 5 --timer events --no-graph
               --no-clock-check)
  while read -r dtype cases ops regex; do
    step "ncu --cache-control $cc: $ops $dtype ($cases)"
    echo "$i $dtype $cases $ops" >> "$OUT/${prefix}_groups.txt"
    TILEBENCH_RESULTS_DIR="$OUT/ncu_results" timeout 150 "${ncu[@]}" -k "$regex" --log-file "$OUT/${prefix}_$i.csv" \
      "$TB" run --operator "$ops" --dtype "$dtype" --cases "$cases" --impl cuda --gpu "$GPU-ncu" "${short[@]}" \
      > "$OUT/${prefix}_$i.log" 2>&1 || { echo "ncu failed (exit $?):"; tail -5 "$OUT/${prefix}_$i.log"; }
    i=$((i + 1))
  done < "$W/groups.txt"
  step "ncu --cache-control $cc: the empty kernel, launched by tilebench"
  timeout 60 "${ncu[@]}" -k 'regex:^nop$' --log-file "$OUT/${prefix}_nop.csv" \
    "$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/nop.txt" "$OUT/${prefix}_nop_tb.csv" stability \
    clock=events graph=false clock_check=false mode=fixed warmup=1 repeat=5 \
    > "$OUT/${prefix}_nop.log" 2>&1 || { echo "ncu (empty kernel) failed (exit $?):"; tail -5 "$OUT/${prefix}_nop.log"; }
}

# The diagnosis (step 6): its cases from the launch shapes in ncu's logs of step 3, timed by
# tilebench once; run_ncu_diag PREFIX CC times them under ncu like the empty kernel above. The
# kernel names are shapes.py's KIND_KERNEL (tests/cli/fidelity_operators_script.sh checks they agree).
DIAG_REGEX='regex:^(code_line|fma_loop|nop|nop_p8)$'
diag_tilebench() {
  [ "${FID_DIAG:-1}" != 0 ] || return 0
  if ! python3 "$PY" diag-cases "$OUT" > "$OUT/diag_cases.txt"; then
    echo "no diagnosis cases (see above)"
    rm -f "$OUT/diag_cases.txt"
    return 0
  fi
  step "diagnosis: $(wc -l < "$OUT/diag_cases.txt") cases (empty kernels per launch shape, code size) by tilebench"
  timeout 120 "$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$OUT/diag_cases.txt" "$OUT/tilebench_diag.csv" sweep \
    > "$OUT/tilebench_diag.log" 2>&1 || echo "tilebench (diagnosis cases) failed: see tilebench_diag.log"
}
run_ncu_diag() {
  local prefix=$1 cc=$2
  [ "${FID_DIAG:-1}" != 0 ] && [ -s "$OUT/diag_cases.txt" ] || return 0
  step "ncu --cache-control $cc: the diagnosis cases, launched by tilebench"
  timeout 120 "$NCU" --cache-control "$cc" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    --target-processes application-only -k "$DIAG_REGEX" --log-file "$OUT/${prefix}_diag.csv" \
    "$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$OUT/diag_cases.txt" "$OUT/${prefix}_diag_tb.csv" stability \
    clock=events graph=false clock_check=false mode=fixed warmup=1 repeat=5 \
    > "$OUT/${prefix}_diag.log" 2>&1 ||
    { echo "ncu (diagnosis cases) failed (exit $?):"; tail -5 "$OUT/${prefix}_diag.log"; }
}

# The table (and the rows merged into bench/results), written after each ncu pass so that the
# target's rows exist even if the variant pass is cut short.
table() {
  cache_list > "$OUT/cache_after.txt"
  comm -13 "$OUT/cache_before.txt" "$OUT/cache_after.txt" > "$OUT/cache_new.txt"
  step "table"
  python3 "$PY" table "$OUT" "$GPU"
  rc=$?
  mkdir -p bench/results
  python3 "$PY" merge "$OUT/timing_fidelity_operators_$GPU.csv" "bench/results/timing_fidelity_$GPU.csv"
  cp "$OUT/timing_fidelity_operators_$GPU.csv" bench/results/
  cp "$OUT/fidelity_operators.txt" "bench/results/timing_fidelity_${GPU}_operators.txt"
  if [ -f "$OUT/timing_fidelity_diag_$GPU.csv" ]; then
    cp "$OUT/timing_fidelity_diag_$GPU.csv" "bench/results/timing_fidelity_${GPU}_diag.csv"
  fi
}

cache_list > "$OUT/cache_before.txt"
rc=1
# ncu from PATH, else where the CUDA toolkit puts it
NCU=$(command -v ncu || { [ -x /usr/local/cuda/bin/ncu ] && echo /usr/local/cuda/bin/ncu; })
if [ -n "$NCU" ]; then
  echo "ncu: $NCU ($("$NCU" --version 2>/dev/null | tail -1))"
  # the target: ncu's flush of every cache before each profiled kernel
  run_ncu ncu all
  diag_tilebench
  run_ncu_diag ncu all
  table
  # diagnosis (FID_NCU_EVICT=0 skips it): ncu without cache control, under tilebench's own
  # read eviction before each run (the first run of a case, the verification, is left out)
  if [ "${FID_NCU_EVICT:-1}" != 0 ]; then
    run_ncu ncu_evict none
    run_ncu_diag ncu_evict none
    table
  fi
else
  echo "ncu not on PATH: no ncu_us column"
  table
fi
exit $rc
