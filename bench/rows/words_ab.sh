#!/usr/bin/env bash
# words_ab.sh: A/B of two versions of one shared header on the row operators' default
# grids (layernorm, rmsnorm, mean_reduction), interleaved A B A B in fresh runs, then `tilebench
# compare` of each pair (and of A against A, for the noise). The fifth session's A/B of the word
# loader: HEADER_A = git show 21528f3:host/kernels/tb_common.cuh (tb_row_load through
# tb_load_part), HEADER_B = the same with tb_row_load's body replaced by tb_row_load_words' (the
# word loader for every row kernel), the operators' sources of 21528f3; results in
# bench/results/rows_words_ab_H200_* (pair1, pair2: t_B / t_A per case; AA: A against A).
# usage (repo root, GPU machine): bash bench/rows/words_ab.sh OUTDIR HEADER_A HEADER_B
# HEADER (default operators/_shared/tb_rows.cuh, where tb_row_load lives since issue 12; it was
# host/kernels/tb_common.cuh at 21528f3) is the file replaced by each variant; it is left as it
# was found. TILEBENCH_CACHE_DIR may hold both variants'
# kernels (compiled ahead with `tilebench compile` under each header); else they compile here.
set -u
OUT=${1:?usage: words_ab.sh OUTDIR HEADER_A HEADER_B}
HA=${2:?header A}
HB=${3:?header B}
TB=${TILEBENCH:-./build/tilebench}
OPS=${OPS:-layernorm,rmsnorm,mean_reduction}
HEADER=${HEADER:-operators/_shared/tb_rows.cuh}
mkdir -p "$OUT/runs"
keep=$(mktemp)
cp "$HEADER" "$keep"
trap 'cp "$keep" "$HEADER"; rm -f "$keep"' EXIT
declare -a ids
for v in A B A B; do
  if [ "$v" = A ]; then cp "$HA" "$HEADER"; else cp "$HB" "$HEADER"; fi
  timeout 300 "$TB" run --operator "$OPS" --gpu H200 --quiet > "$OUT/run_$v.log" 2>&1
  id=$(grep -o "run [0-9TZ-]*[a-f0-9]* finished" "$OUT/run_$v.log" | awk '{print $2}')
  echo "$v ${id:-FAILED} $(tail -1 "$OUT/run_$v.log")"
  [ -n "$id" ] && cp -r "results/H200/runs/$id" "$OUT/runs/${v}_$id"
  ids+=("$id")
done
"$TB" compare "results/H200/runs/${ids[0]}" "results/H200/runs/${ids[1]}" --all --csv "$OUT/pair1.csv" > "$OUT/pair1.txt" 2>&1
"$TB" compare "results/H200/runs/${ids[2]}" "results/H200/runs/${ids[3]}" --all --csv "$OUT/pair2.csv" > "$OUT/pair2.txt" 2>&1
"$TB" compare "results/H200/runs/${ids[0]}" "results/H200/runs/${ids[2]}" > "$OUT/AA.txt" 2>&1
tail -4 "$OUT/pair1.txt" "$OUT/pair2.txt" "$OUT/AA.txt"
