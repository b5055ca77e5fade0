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
TILEBENCH_RESULTS_DIR="$OUT/eager" "$TB" run "${opflag[@]}" --impl torch --cases first --gpu xcheck \
  --no-graph --quiet || echo "tilebench eager run exited $?"
TILEBENCH_RESULTS_DIR="$OUT/graph" "$TB" run "${opflag[@]}" --impl torch --cases first --gpu xcheck \
  --quiet || echo "tilebench graph run exited $?"
python3 "$HERE/crosscheck.py" "$OUT/cases.json" "$OUT/eager/xcheck/csv" "$OUT/crosscheck" || exit 1
python3 "$HERE/crosscheck.py" "$OUT/cases.json" "$OUT/graph/xcheck/csv" "$OUT/crosscheck_graph" --repeat 250 || true
cat "$OUT/crosscheck.md"
echo "(graph mode against the same plain-Python eager times: $OUT/crosscheck_graph.md)"
