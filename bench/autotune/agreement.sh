#!/usr/bin/env bash
# bench/autotune/agreement.sh: on the H200, how close the halving search's choice is to the best
# of an exhaustive search (issue 14's "within 2 %"). For each operator (one at a time, so a chunk
# fits the device tool's 10-minute limit), the middle case of every dtype (37 cases over the 12
# operators) is autotuned twice in separate runs: --autotune-search exhaustive (every valid
# candidate gets the full protocol) and halving (the default). compare.lua then prints, per case
# and implementation, both choices, the ratio of the two runs' final times, and the ratio
# exhaustive-time-of-halving's-choice / exhaustive-best (the same run's measurements, so no
# run-to-run noise), and writes the table to OUTDIR/agreement.md.
# usage: bench/autotune/agreement.sh OUTDIR [OPERATOR[:DTYPE,...]...]   (default: every operator,
#   every dtype; OPERATOR:DTYPES restricts an operator to those dtypes)
#   env: TB (default build/tilebench), CASES (default middle), GPU_LABEL (default H200),
#        CASE_TIMEOUT (default 600: the exhaustive search times ~100 candidates fully inside one
#        implementation's limit)
# On the device tool (10 minutes a command, a fresh OUTDIR each call) run it in chunks of
# operators; each chunk prints its own table and summary.
# Results go to OUTDIR/results (results/ of the tree is left alone).
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: agreement.sh OUTDIR [OPERATOR...]}
shift
TB=${TB:-build/tilebench}
CASES=${CASES:-middle}
LABEL=${GPU_LABEL:-H200}
[ -x "$TB" ] || { echo "no tilebench binary at $TB (build first)"; exit 2; }
if [ $# -gt 0 ]; then ops=("$@"); else ops=($(ls operators | grep -v '^_')); fi
mkdir -p "$OUT"
export TILEBENCH_RESULTS_DIR=$OUT/results
runs=$OUT/runs.txt
for spec in "${ops[@]}"; do
  op=${spec%%:*}
  dflag=()
  [ "$spec" != "$op" ] && dflag=(--dtype "${spec#*:}")
  for search in exhaustive halving; do
    t0=$(date +%s)
    log=$OUT/$op-$search.log
    "$TB" run --operator "$op" --autotune --autotune-search "$search" --cases "$CASES" "${dflag[@]}" --gpu "$LABEL" \
      --case-timeout "${CASE_TIMEOUT:-600}" --quiet > "$log" 2>&1
    rc=$?
    id=$(sed -n 's/^run \([^ :]*\)[: ].*/\1/p' "$log" | head -1)
    echo "$op $search $id rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$runs"
  done
done
"$TB" script bench/autotune/compare.lua "$OUT/results/$LABEL/runs" "$runs" | tee "$OUT/agreement.md"
