#!/usr/bin/env bash
# cpu-check-each.sh: tests/gpu/operators_cpu_check.lua one operator at a time, each under its own
# time limit, with its wall time: finds the operator that hangs or dominates the GPU test's time.
#   bash scripts/cpu-check-each.sh LOGDIR [PER_OP_SECONDS=90] [OPERATOR...]
# Uses the build in ./build and its test cache (as ctest does). Prints one line per operator;
# each operator's output is in LOGDIR/<operator>.log. Exit 1 when any operator failed or timed out.
set -u
LOGDIR=${1:?usage: cpu-check-each.sh LOGDIR [PER_OP_SECONDS] [OPERATOR...]}
LIMIT=${2:-90}
shift $(( $# >= 2 ? 2 : 1 ))
cd "$(dirname "$0")/.."
export TILEBENCH=$PWD/build/tilebench TILEBENCH_HOME=$PWD TB_BUILD_DIR=$PWD/build
export TILEBENCH_CACHE_DIR=${TILEBENCH_CACHE_DIR:-$PWD/build/test-cache}
mkdir -p "$LOGDIR"
ops=("$@")
[ ${#ops[@]} -eq 0 ] && mapfile -t ops < <(ls operators | grep -v '^_')
bad=0
for op in "${ops[@]}"; do
  t0=$(date +%s.%N)
  timeout "$LIMIT" "$TILEBENCH" script tests/gpu/operators_cpu_check.lua "$op" > "$LOGDIR/$op.log" 2>&1
  rc=$?
  dt=$(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}')
  last=$(tail -n 1 "$LOGDIR/$op.log")
  if [ $rc -ne 0 ] && grep -q "no small cases for operator" "$LOGDIR/$op.log"; then
    rc=- last="not in this check (the GEMMs are gpu_matmul_check's)"
  elif [ $rc -ne 0 ] && [ $rc -ne 77 ]; then # 77: no GPU here, skipped
    bad=1
  fi
  printf '%-24s rc=%-3s %6s s  %s\n' "$op" "$rc" "$dt" "$last"
done
exit $bad
