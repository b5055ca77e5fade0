#!/usr/bin/env bash
# Shows how to compare two runs (or CSV sets) case by case: FAST / SLOW / SAME with each side's noise.
# usage: examples/compare_runs.sh [A B]   (default: the two fixture runs shipped in tests/fixtures)
# A and B may be run dirs (results/<gpu>/runs/<id>), results/<gpu>, a CSV dir such as TileBench's
# published anchors, or single CSV / raw JSON files. Needs no GPU.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tilebench=${TILEBENCH:-$here/build/tilebench}
a=${1:-$here/tests/fixtures/resultsets/H200-test/runs/run-a}
b=${2:-$here/tests/fixtures/resultsets/H200-test/runs/run-b}

# 1. Two runs with raw samples: each case is decided by a Mann-Whitney U test.
"$tilebench" compare "$a" "$b"

# 2. Every case, and a CSV of the comparison for a spreadsheet.
out=$(mktemp -d)
"$tilebench" compare "$a" "$b" --all --csv "$out/compare.csv" > "$out/compare.txt"
echo "every case: $out/compare.txt, $out/compare.csv ($(($(wc -l < "$out/compare.csv") - 1)) rows)"

# 3. Ours against TileBench's published CSV, pairing our library baseline with their PyTorch:
#    rounded CSV times carry no samples, so the relative-noise rule decides.
"$tilebench" compare "$here/tests/fixtures/resultsets/H200-test/csv/vector_add_default.csv" \
  "$here/tests/fixtures/resultsets/tilebench-style/vector_add_default.csv" --map lib=torch --all
