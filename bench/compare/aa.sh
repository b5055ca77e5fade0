#!/usr/bin/env bash
# aa.sh: does `tilebench compare` cry wolf, and does it catch a real 5 % slowdown (issue 19,
# section 3)? On the GPU machine, with ./build/tilebench, in steps (a device call may run 10
# minutes; a default run of the 12 operators takes a few):
#   bash bench/compare/aa.sh DIR run N      default run N (1, 2, 3) of $OPS into DIR/runN
#   bash bench/compare/aa.sh DIR overlay [OV]   only the planted operators' folder (OV, default
#                                           DIR/overlay; tests/cli/compare_plant.sh compiles it)
#   bash bench/compare/aa.sh DIR planted    the same build with a planted slowdown (plant.lua:
#                                           each plan followed by a spin of 5 % of run 1's time
#                                           for the case) into DIR/planted
#   bash bench/compare/aa.sh DIR analyse    the run-to-run noise from runs 1 and 2
#                                           (DIR/noise.json, to commit as peaks/noise/<gpu>.json);
#                                           the A/A check on runs 1 and 3 (no FAST, no SLOW) and the
#                                           planted check (SLOW on every case), both with that
#                                           noise; DIR/summary.txt; exit 1 when either fails
# DIR must outlive the device tool's calls (its OUTDIR does not): /tmp/tilebench-aa by default in
# scripts/gpu-session.sh. AA_OPS: the operators (default: the first 12; not gpu-session's OPS), GPU: the label (H200).
# The A/A check uses runs 1 and 3, not the pair the noise came from.
set -u
DIR=${1:?usage: aa.sh DIR run N | overlay [OV] | planted | analyse}
what=${2:?usage: aa.sh DIR run N | overlay [OV] | planted | analyse}
cd "$(dirname "$0")/../.."
ROOT=$PWD
TB=${TB:-$ROOT/build/tilebench}
GPU=${GPU:-H200}
IMPLS=${AA_IMPLS:-cuda}
OPS=${AA_OPS:-vector_add,mul2,relu,sigmoid,swiglu,softmax,layernorm,rmsnorm,argmax,mean_reduction,matmul_fp32_fp16_fp8,batched_matmul}
mkdir -p "$DIR"
run_dir() { ls -d "$DIR/$1/$GPU/runs/"*/ 2>/dev/null | head -1 | sed 's:/$::'; }

# A run's results go to DIR/<name> (never results/: the committed CSVs stay as they are).
one_run() {
  local name=$1; shift
  rm -rf "${DIR:?}/$name"
  local impl=()
  [ "$IMPLS" = all ] || impl=(--impl "$IMPLS")
  TILEBENCH_RESULTS_DIR="$DIR/$name" "$@" "$TB" run --operator "$OPS" "${impl[@]}" --gpu "$GPU" --quiet
  local rc=$?
  echo "$name: rc=$rc, run $(run_dir "$name")"
  return $rc
}

case $what in
  run)
    n=${3:?usage: aa.sh DIR run N}
    one_run "run$n" ;;
  overlay)
    # The overlay: each operator's folder with operator.lua replaced by a wrapper of the real one
    # (plant.lua) and the spin kernel beside the real sources (symbolic links).
    ov=${3:-$DIR/overlay}
    rm -rf "$ov"
    for op in ${OPS//,/ }; do
      mkdir -p "$ov/$op"
      for f in "$ROOT/operators/$op"/*; do
        [ "$(basename "$f")" = operator.lua ] || ln -s "$f" "$ov/$op/"
      done
      cat >"$ov/$op/plant_spin.cu" <<'CU'
// plant_spin.cu (bench/compare/aa.sh): spins for `cycles` SM clock cycles, touching no memory.
extern "C" __global__ void plant_spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
}
CU
      printf 'return dofile("%s").wrap(dofile("%s"), "%s")\n' "$ROOT/bench/compare/plant.lua" \
        "$ROOT/operators/$op/operator.lua" "$op" >"$ov/$op/operator.lua"
    done
    echo "overlay: $ov" ;;
  planted)
    ref=$(run_dir run1)
    [ -n "$ref" ] || { echo "aa.sh planted: no run 1 in $DIR (run 'aa.sh $DIR run 1' first)"; exit 2; }
    bash "$0" "$DIR" overlay "$DIR/overlay" || exit 2
    one_run planted env TILEBENCH_OPERATOR_PATH="$DIR/overlay" TB_PLANT_REF="$ref" TB_PLANT_FRACTION=${FRACTION:-0.05} ;;
  analyse)
    r1=$(run_dir run1); r2=$(run_dir run2); r3=$(run_dir run3); pl=$(run_dir planted)
    for v in r1 r2 r3 pl; do [ -n "${!v}" ] || { echo "aa.sh analyse: $v is missing in $DIR"; exit 2; }; done
    out=$DIR/summary.txt
    "$TB" compare "$r1" "$r2" --record-noise "$DIR/noise.json" --gpu "$GPU" >"$DIR/noise_pair.txt" 2>&1
    "$TB" compare "$r1" "$r3" --noise "$DIR/noise.json" --csv "$DIR/aa.csv" >"$DIR/aa.txt" 2>&1
    "$TB" compare "$r1" "$r3" --gpu NONE --csv "$DIR/aa_default.csv" >"$DIR/aa_default.txt" 2>&1
    "$TB" compare "$r1" "$pl" --noise "$DIR/noise.json" --csv "$DIR/planted.csv" >"$DIR/planted.txt" 2>&1
    # verdict counts from the CSVs; the planted slowdown as measured (ratio) per case
    count() { awk -F, -v want="$2" 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} $c["verdict"] == want {n++} END {print n+0}' "$1"; }
    aa_alarms=$(( $(count "$DIR/aa.csv" FAST) + $(count "$DIR/aa.csv" SLOW) ))
    aa_default_alarms=$(( $(count "$DIR/aa_default.csv" FAST) + $(count "$DIR/aa_default.csv" SLOW) ))
    timed=$(( $(count "$DIR/planted.csv" SLOW) + $(count "$DIR/planted.csv" SAME) + $(count "$DIR/planted.csv" FAST) ))
    missed=$(( timed - $(count "$DIR/planted.csv" SLOW) ))
    {
      echo "run-to-run noise (runs 1, 2): $(grep '^wrote' "$DIR/noise_pair.txt")"
      echo "A/A (runs 1, 3) with it: $aa_alarms FAST or SLOW of $(( $(count "$DIR/aa.csv" SAME) + aa_alarms )) cases (target 0)"
      echo "A/A with the 1 % default: $aa_default_alarms FAST or SLOW"
      echo "planted 5 % (run 1 vs planted): $missed of $timed cases not SLOW (target 0)"
      awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} $c["ratio"] != "" {r=$c["ratio"]; n++; s+=log(r); if (!lo || r<lo) lo=r; if (r>hi) hi=r}
        END {if (n) printf "planted slowdown as measured: geomean %.3f, range [%.3f, %.3f] over %d cases\n", exp(s/n), lo, hi, n}' "$DIR/planted.csv"
      echo "min effect over the A/A cases:"
      awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} $c["threshold"] != "" {t=$c["threshold"]; n++; s+=t; if (t>hi) hi=t; if (!lo || t<lo) lo=t}
        END {if (n) printf "  mean %.2f %%, range [%.2f, %.2f] %%\n", 100*s/n, 100*lo, 100*hi}' "$DIR/aa.csv"
      echo "A/A alarms (if any):"; grep -E '^(FAST|SLOW) ' "$DIR/aa.txt" | head -20
      echo "planted misses (if any):"
      awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} $c["verdict"] == "SAME" || $c["verdict"] == "FAST" {print "  " $0}' "$DIR/planted.csv" | head -20
    } | tee "$out"
    [ "$aa_alarms" -eq 0 ] && [ "$missed" -eq 0 ] && [ "$timed" -gt 0 ] ;;
  *)
    echo "aa.sh: unknown step '$what' (run N, overlay, planted, analyse)"; exit 2 ;;
esac
