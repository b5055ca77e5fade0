#!/usr/bin/env bash
# proton.sh: issue 21's check of tilebench's timer against triton's own profiler (Proton). For
# each OPERATOR:DTYPE:CASE, tilebench times its `triton` implementation (eager launches,
# --no-graph, like Proton's; and with graphs, the default protocol), then proton_check.py times the
# same cubin through triton's launcher under Proton with the same eviction. Table: OUT/proton.md.
# usage: bash bench/triton/proton.sh TILEBENCH OUTDIR [OPERATOR:DTYPE:CASE ...]
set -u
TB=${1:?usage: proton.sh TILEBENCH OUTDIR [OPERATOR:DTYPE:CASE ...]}
OUT=${2:?usage: proton.sh TILEBENCH OUTDIR [OPERATOR:DTYPE:CASE ...]}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
specs=("$@")
# kernels of 20 us or more at their last case (H200): five families, one dtype each
[ ${#specs[@]} -eq 0 ] && specs=(vector_add:fp32:last softmax:fp16:last layernorm:fp16:last
  rmsnorm:bf16:last relu:fp16:last swiglu:fp16:last matmul_fp32_fp16_fp8:fp16:first)
"$TB" script "$HERE/launches.lua" "${specs[@]}" > "$OUT/launches.json" || exit 1
for mode in eager graph; do
  flag=(); [ $mode = eager ] && flag=(--no-graph)
  for s in "${specs[@]}"; do
    IFS=: read -r op dt which <<< "$s"
    TILEBENCH_RESULTS_DIR="$OUT/$mode" "$TB" run --operator "$op" --dtype "$dt" --cases "$which" \
      --impl triton --gpu proton "${flag[@]}" --quiet || echo "tilebench $s ($mode) exited $?"
  done
done
python3 "$HERE/proton_check.py" "$OUT/launches.json" "$OUT/eager/proton/csv" "$OUT/proton" || exit 1
python3 "$HERE/proton_check.py" "$OUT/launches.json" "$OUT/graph/proton/csv" "$OUT/proton_graph" || true
cat "$OUT/proton.md"
echo "(tilebench with CUDA graphs against the same Proton times: $OUT/proton_graph.md)"
