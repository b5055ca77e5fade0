#!/usr/bin/env bash
# crosscheck.sh: issue 15's cross-check. tilebench times every operator's torch implementation at
# its first case per dtype (eager: --no-graph, and with graphs as the configs say), then
# crosscheck.py times the same torch calls in a plain Python process under the same protocol with
# CUPTI (torch.profiler) and writes the table OUTDIR/crosscheck.{md,csv} (target: within 5 %).
# usage: bash bench/torch/crosscheck.sh TILEBENCH OUTDIR [OPERATOR,...]
set -u
TB=${1:?usage: crosscheck.sh TILEBENCH OUTDIR [OPERATORS]}
OUT=${2:?usage: crosscheck.sh TILEBENCH OUTDIR [OPERATORS]}
OPS=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
# every operator unless named: `run` needs --operator (or a campaign)
[ -n "$OPS" ] || OPS=$(ls "$HERE/../../operators" | grep -v '^_' | tr '\n' ',' | sed 's/,$//')
opflag=(--operator "$OPS")
"$TB" script "$HERE/cases.lua" ${OPS//,/ } > "$OUT/cases.json" || exit 1
# ROUNDS (default 3) eager tilebench runs and Python passes, alternating; each side's time of a
# case is the median of its rounds (crosscheck.py says why)
ROUNDS=${ROUNDS:-3}
eager_dirs="" py_files=""
for r in $(seq 1 "$ROUNDS"); do
  TILEBENCH_RESULTS_DIR="$OUT/eager$r" "$TB" run "${opflag[@]}" --impl torch --cases first --gpu xcheck \
    --no-graph --quiet || echo "tilebench eager run $r exited $?"
  python3 "$HERE/crosscheck.py" "$OUT/cases.json" --time-only "$OUT/python$r.json" || echo "python pass $r exited $?"
  eager_dirs="$eager_dirs${eager_dirs:+,}$OUT/eager$r/xcheck/csv"
  [ -f "$OUT/python$r.json" ] && py_files="$py_files${py_files:+,}$OUT/python$r.json"
done
[ -n "$py_files" ] || { echo "no Python pass finished"; exit 1; }
TILEBENCH_RESULTS_DIR="$OUT/graph" "$TB" run "${opflag[@]}" --impl torch --cases first --gpu xcheck \
  --quiet || echo "tilebench graph run exited $?"
python3 "$HERE/crosscheck.py" "$OUT/cases.json" "$eager_dirs" "$OUT/crosscheck" --python-times "$py_files" || exit 1
python3 "$HERE/crosscheck.py" "$OUT/cases.json" "$OUT/graph/xcheck/csv" "$OUT/crosscheck_graph" --python-times "$py_files" || true
cat "$OUT/crosscheck.md"
echo "(graph mode against the same plain-Python eager times: $OUT/crosscheck_graph.md)"
