#!/usr/bin/env bash
# fidelity_operators.sh: the GPU-free parts of bench/timing_fidelity/operators.sh (issue 19,
# section 2). tests/fixtures/fidelity_operators is a hand-made OUTDIR as operators.sh leaves it
# (make_out lays it out: tilebench_raw/ holds what a run writes under
# tilebench_results/<GPU>/runs/<id>/raw/, kept flat so no results tree is tracked):
# raw results of the `tilebench run` side (one cuda row per case; relu bf16 last failed to
# launch; layernorm fp16 first has 2 kernels per run), ncu logs in ncu's --csv --print-units base
# layout (==PROF== lines around the table, a thousands separator here and there; the reference
# launch before each case's 7 cuda launches), the empty kernel's two times (ncu 1.568 us,
# tilebench 0.576 us: excess 0.992 us); and the diagnosis variant's logs (ncu_evict_*: ncu without
# cache control, each case's verification run slow and to be left out, softmax fp16 last at
# 38.4 us; the empty kernel at 1.248 us after a first launch of 2 us). Checked: the group list,
# argument handling, the verdicts against the restated target worked by hand, the variant's, the
# notes of missing rows, and the merge into bench/results/timing_fidelity_<GPU>.csv.
set -u
: "${TILEBENCH_HOME:?}"
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
B="$TILEBENCH_HOME/bench/timing_fidelity"
fx="$TILEBENCH_HOME/tests/fixtures/fidelity_operators"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the fixture as operators.sh leaves an OUTDIR, at $1
make_out() {
  cp -r "$fx" "$1" && mkdir -p "$1/tilebench_results/H200/runs/20261201T000000Z-abc123" &&
    mv "$1/tilebench_raw" "$1/tilebench_results/H200/runs/20261201T000000Z-abc123/raw"
}

# ---- the groups: one `tilebench run` and one ncu process each, every row of the issue once
python3 "$B/operators.py" groups > "$tmp/groups" || fail "groups"
[ "$(wc -l < "$tmp/groups")" -eq 4 ] || fail "groups: want 4 lines: $(cat "$tmp/groups")"
grep -Fqx 'fp16 first matmul_fp32_fp16_fp8 regex:^(matmul_ref|gemm_(tma|wgmma|wgmma_ws|mma))$' "$tmp/groups" ||
  fail "groups: matmul line"
grep -Fqx 'bf16 ends rmsnorm,relu regex:^(rmsnorm_ref|rmsnorm_(cuda|stream)|relu_ref|relu_(cuda|stream))$' "$tmp/groups" ||
  fail "groups: bf16 line"
n=$(awk '{n += split($3, a, ",") * ($2 == "ends" ? 2 : 1)} END {print n}' "$tmp/groups")
[ "$n" -eq 19 ] || fail "groups: want 19 rows (9 operators x first, last + matmul first), got $n"
# each operator/dtype the issue names
for od in vector_add:fp32 vector_add:fp16 softmax:fp16 layernorm:fp16 rmsnorm:bf16 argmax:fp32 swiglu:fp16 \
          mean_reduction:fp32 relu:bf16 matmul_fp32_fp16_fp8:fp16; do
  awk -v o="${od%%:*}" -v d="${od##*:}" '$1 == d && ("," $3 ",") ~ ("," o ",") {f = 1} END {exit !f}' "$tmp/groups" ||
    fail "groups: no $od"
done
# the operators and dtypes exist and the subsets select what the row names say (dry run: no GPU)
if [ -n "${TILEBENCH:-}" ]; then
  while read -r dtype cases ops regex; do
    TILEBENCH_RESULTS_DIR="$tmp/res" "$TILEBENCH" run --operator "$ops" --dtype "$dtype" --cases "$cases" \
      --impl cuda --dry-run > "$tmp/dry" 2>&1 || fail "dry run $ops $dtype: $(cat "$tmp/dry")"
    want=$(( $(echo "$ops" | tr ',' '\n' | wc -l) * ($([ "$cases" = ends ] && echo 2 || echo 1)) ))
    grep -q "^$want work items" "$tmp/dry" || fail "dry run $ops $dtype: want $want work items: $(cat "$tmp/dry")"
  done < "$tmp/groups"
fi

# ---- argument handling
python3 "$B/operators.py" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] || fail "no arguments: want 2"
grep -q '^usage: operators.py' "$tmp/err" || fail "no usage line"
python3 "$B/operators.py" table "$tmp/nowhere" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] || fail "table of a missing dir: want 2"
grep -q 'is not a directory' "$tmp/err" || fail "missing dir: no message"
python3 "$B/operators.py" merge "$tmp/none.csv" "$tmp/x.csv" > /dev/null 2>&1; [ $? -eq 2 ] || fail "merge missing: want 2"
python3 "$B/operators.py" bogus > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown subcommand: want 2"
bash "$B/operators.sh" > /dev/null 2> "$tmp/err"; [ $? -eq 2 ] || fail "operators.sh without OUTDIR: want 2"
grep -q '^usage: bash bench/timing_fidelity/operators.sh OUTDIR' "$tmp/err" || fail "operators.sh: no usage"
bash "$B/operators.sh" a b > /dev/null 2>&1; [ $? -eq 2 ] || fail "operators.sh with two arguments: want 2"

# ---- the table on the sample
make_out "$tmp/out"
python3 "$B/operators.py" table "$tmp/out" H200 > "$tmp/table"; rc=$?
[ $rc -eq 1 ] || fail "table: a FAIL and a missing row: want exit 1, got $rc"
cmp -s "$tmp/table" "$tmp/out/fidelity_operators.txt" || fail "table: printed and written differ"
grep -q '^excess: ncu nop_1 1.568 us - tilebench nop_1 0.576 us = 0.992 us$' "$tmp/table" || fail "excess line"
row() { sed '/^Variant/,$d' "$tmp/table" | awk -v k="$1" '$1 == k'; }
# ncu median 5.440 - 0.992 = 4.448; 4.300 / 4.448 = 0.967: within 10 %
[ "$(row vector_add_fp32_first | awk '{print $2, $3, $4, $5, $6 $7, $8}')" = "5.440 4.448 4.300 0.967 10% ok" ] ||
  fail "vector_add_fp32_first: $(row vector_add_fp32_first)"
# 40.000 - 0.992 = 39.008; 37.5 / 39.008 = 0.961: more than 3 % off
[ "$(row softmax_fp16_last | awk '{print $3, $5, $6 $7, $8}')" = "39.008 0.961 3% FAIL" ] ||
  fail "softmax_fp16_last: $(row softmax_fp16_last)"
# 2.816 - 0.992 = 1.824 us: under 2 us, no target
[ "$(row argmax_fp32_first | awk '{print $3, $6, $7}')" = "1.824 - -" ] || fail "argmax_fp32_first: $(row argmax_fp32_first)"
# 2 kernels a run: the median of the 7 runs' sums (3.488 + 3.520 ...) is 7.008
# and the excess comes off once per kernel: 7.008 - 2 x 0.992 = 5.024
[ "$(row layernorm_fp16_first | awk '{print $2, $3, $8, $9, $10}')" = "7.008 5.024 ok 2 7" ] ||
  fail "layernorm_fp16_first: $(row layernorm_fp16_first)"
[ "$(row matmul_fp32_fp16_fp8_fp16_first | awk '{print $2, $3, $8}')" = "232.000 231.008 ok" ] ||
  fail "matmul row: $(row matmul_fp32_fp16_fp8_fp16_first)"
row relu_bf16_last | grep -q 'missing  1    0  tilebench: status failed: cuLaunchKernel: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES' ||
  fail "relu_bf16_last: $(row relu_bf16_last)"
row relu_bf16_last | grep -q 'ncu profiled no launch of the cuda kernel' || fail "relu_bf16_last: ncu note"
[ "$(row nop_1 | awk '{print $2, $3, $4, $5, $6, $7}')" = "1.568 - 0.576 - - -" ] || fail "nop_1: $(row nop_1)"
grep -q '^17 rows judged: 16 ok, 1 FAIL; 1 missing; 2 without a target' "$tmp/table" || fail "summary line"
# the variant: its own excess (the first empty-kernel launch left out: 1.248 - 0.576), the
# verification runs left out (else the medians would move), softmax fp16 last within 3 % there
sed -n '/^Variant (diagnosis only)/,$p' "$tmp/table" > "$tmp/variant"
grep -qx 'excess: ncu nop_1 1.248 us - tilebench nop_1 0.576 us = 0.672 us' "$tmp/variant" || fail "variant excess"
vrow() { awk -v k="$1" '$1 == k {print $2, $3, $4, $5, $6 $7, $8}' "$tmp/variant"; }
[ "$(vrow softmax_fp16_last)" = "38.400 37.728 37.500 0.994 3% ok" ] || fail "variant softmax: $(vrow softmax_fp16_last)"
[ "$(vrow vector_add_fp32_first)" = "5.120 4.448 4.300 0.967 10% ok" ] || fail "variant vector_add: $(vrow vector_add_fp32_first)"
# 2 kernels a run: (3.488 + 3.520 - 0.32) = 6.656 less 2 x 0.672
[ "$(vrow layernorm_fp16_first | cut -d' ' -f1,2)" = "6.656 5.312" ] || fail "variant layernorm: $(vrow layernorm_fp16_first)"
[ "$(vrow relu_bf16_last)" = "- - - - -missing " ] || fail "variant relu: $(vrow relu_bf16_last)"
csvf="$tmp/out/timing_fidelity_operators_H200.csv"
[ "$(head -1 "$csvf")" = "kernel,bytes,ncu_us,tilebench_us,events_us,ref_us,tb_over_ref,target,verdict,kernels_per_run,ncu_runs,note,ncu_evict_us,ref_evict_us,tb_over_ref_evict,verdict_evict,launch_shape,excess_shape_us,ref_shape_us,tb_over_ref_shape,verdict_shape_diag,excess_shape_evict_us,tb_over_ref_shape_evict" ] ||
  fail "csv header"
[ "$(wc -l < "$csvf")" -eq 21 ] || fail "csv: want 20 rows"
grep -qx 'vector_add_fp32_last,251658240,66.0160,64.2000,67.1000,65.0240,0.9873,0.03,ok,1,7,,65.7120,65.0400,0.9871,ok,528x256,,,,,,' "$csvf" ||
  fail "csv: vector_add_fp32_last: $(grep vector_add_fp32_last "$csvf")"
# every row the issue names, by name, in order, nop_1 last
cut -d, -f1 "$csvf" | tail -n +2 | tr '\n' ' ' > "$tmp/names"
[ "$(cat "$tmp/names")" = "vector_add_fp32_first vector_add_fp32_last argmax_fp32_first argmax_fp32_last mean_reduction_fp32_first mean_reduction_fp32_last vector_add_fp16_first vector_add_fp16_last softmax_fp16_first softmax_fp16_last layernorm_fp16_first layernorm_fp16_last swiglu_fp16_first swiglu_fp16_last rmsnorm_bf16_first rmsnorm_bf16_last relu_bf16_first relu_bf16_last matmul_fp32_fp16_fp8_fp16_first nop_1 " ] ||
  fail "csv names: $(cat "$tmp/names")"

# ---- the boundaries of the target (20 us: 3 %; 2 to 20 us: 10 %; reference = ncu - excess)
python3 - "$B" <<'EOF' || fail "fidelity_target boundaries"
import sys
sys.path.insert(0, sys.argv[1])
from fidelity_target import judge, excess
e = excess(1.5, 0.5)
assert e == 1.0
j = judge(21.0, 20.0 * 1.0299, e)
assert j["ref"] == 20.0 and j["tol"] == 0.03 and j["verdict"] == "ok" and abs(j["ratio"] - 1.0299) < 1e-12, j
assert judge(21.0, 20.0 * 1.0301, e)["verdict"] == "FAIL"
assert judge(21.0, 20.0 * 0.9701, e)["verdict"] == "ok" and judge(21.0, 20.0 * 0.9699, e)["verdict"] == "FAIL"
assert judge(20.9, 19.9 * 1.09, e)["tol"] == 0.10 and judge(20.9, 19.9 * 1.09, e)["verdict"] == "ok"
assert judge(3.0, 2.0 * 0.89, e)["verdict"] == "FAIL"
assert judge(2.9, 1.5, e)["verdict"] == "-"
assert judge(None, 1.0, e)["verdict"] == "missing" and judge(5.0, 4.0, None)["verdict"] == "missing"
EOF

# ---- a case whose reference ncu did not see: both rows of that operator say why
make_out "$tmp/out2"
python3 - "$tmp/out2/ncu_2.csv" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p).read().splitlines(True)
i = [k for k, l in enumerate(lines) if '"rmsnorm_ref"' in l][1]
open(p, "w").writelines(lines[:i] + lines[i + 1:])
EOF
python3 "$B/operators.py" table "$tmp/out2" H200 > "$tmp/table2"
sed -i '/^Variant/,$d' "$tmp/table2"
awk '$1 ~ /^rmsnorm_bf16_/' "$tmp/table2" | grep -c 'missing  1    0  ncu: 1 reference launches of rmsnorm bf16, expected 2' |
  grep -qx 2 || fail "lost reference: $(grep rmsnorm "$tmp/table2")"
awk '$1 == "relu_bf16_first" {print $8}' "$tmp/table2" | grep -qx ok || fail "lost reference: relu must stay"

# ---- nothing measured (no GPU, no ncu): every row missing, the excess unknown, exit 1
mkdir "$tmp/empty"
python3 "$B/operators.py" table "$tmp/empty" H200 > "$tmp/table3"; [ $? -eq 1 ] || fail "empty: want 1"
grep -q '^excess: unknown' "$tmp/table3" || fail "empty: excess line"
grep -q '^0 rows judged: 0 ok, 0 FAIL; 20 missing' "$tmp/table3" || fail "empty: summary: $(tail -1 "$tmp/table3")"
grep -q '^vector_add_fp32_first .* missing  1    0  tilebench: 0 rows for vector_add fp32, expected 2 (see tilebench_run.log); ncu: not run' "$tmp/table3" ||
  fail "empty: note: $(grep vector_add_fp32_first "$tmp/table3")"

# ---- ncu that cannot profile (a runtime without counter access): its error is in the note
make_out "$tmp/out5"
printf '==PROF== Connected to process 99 (/x/tilebench)\n==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n' \
  > "$tmp/out5/ncu_2.csv"
python3 "$B/operators.py" table "$tmp/out5" H200 > "$tmp/table5"
sed '/^Variant/,$d' "$tmp/table5" | grep -c 'ncu: no kernel in ncu_2.csv (see ncu_2.log): ==ERROR== Failed to initialize the profiler: LibraryNotLoaded$' |
  grep -qx 4 || fail "ncu error: $(grep bf16 "$tmp/table5")"

# ---- new NVRTC cache entries while ncu ran: said, and the check fails
make_out "$tmp/out4"
echo "./0123abcd.cubin" > "$tmp/out4/cache_new.txt"
python3 "$B/operators.py" table "$tmp/out4" H200 > "$tmp/table4"; [ $? -eq 1 ] || fail "cache: want 1"
grep -q '^WARNING: 1 NVRTC cache entries appeared while ncu ran' "$tmp/table4" || fail "cache warning"

# ---- merge into the results CSV: same kernels replaced, new ones appended, columns and others kept
printf 'kernel,bytes,ncu_us,tilebench_us,events_us,do_bench_us\ncopy_32K,65536,2.2400,1.4400,4.5120,3.8080\nnop_1,0,1.5700,0.5800,3.5800,3.6960\nfma_6k,0,60.0000,58.9110,61.9840,62.2720\n' > "$tmp/res.csv"
python3 "$B/operators.py" merge "$csvf" "$tmp/res.csv" > /dev/null || fail "merge"
[ "$(head -1 "$tmp/res.csv")" = "kernel,bytes,ncu_us,tilebench_us,events_us,do_bench_us" ] || fail "merge: header"
sed -n 2p "$tmp/res.csv" | grep -qx 'copy_32K,65536,2.2400,1.4400,4.5120,3.8080' || fail "merge: copy_32K changed"
sed -n 3p "$tmp/res.csv" | grep -qx 'nop_1,0,1.5680,0.5760,3.5840,' || fail "merge: nop_1 not replaced in place: $(sed -n 3p "$tmp/res.csv")"
sed -n 4p "$tmp/res.csv" | grep -qx 'fma_6k,0,60.0000,58.9110,61.9840,62.2720' || fail "merge: fma_6k changed"
# 18 measured operator rows appended (relu_bf16_last has no number: left out)
[ "$(wc -l < "$tmp/res.csv")" -eq 22 ] || fail "merge: want 21 rows, got $(( $(wc -l < "$tmp/res.csv") - 1 ))"
grep -q '^relu_bf16_last,' "$tmp/res.csv" && fail "merge: a row without numbers was written"
grep -qx 'matmul_fp32_fp16_fp8_fp16_first,67108864,232.0000,230.5000,233.4000,' "$tmp/res.csv" || fail "merge: matmul row"
# again: nothing duplicates
python3 "$B/operators.py" merge "$csvf" "$tmp/res.csv" > /dev/null || fail "merge twice"
[ "$(wc -l < "$tmp/res.csv")" -eq 22 ] || fail "merge twice: rows duplicated"
# the committed results CSV has the columns the merge needs
head -1 "$TILEBENCH_HOME/bench/results/timing_fidelity_H200.csv" | grep -q '^kernel,bytes,ncu_us,tilebench_us,' ||
  fail "bench/results/timing_fidelity_H200.csv: columns"
echo "ok"
