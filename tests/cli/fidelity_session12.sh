#!/usr/bin/env bash
# fidelity_session12.sh: operators.py on the data of the H200 run of session 12 (2026-12-02,
# `scripts/gpu-session.sh OUT fidelity-operators`, tree 66e46ff), and its diagnosis part (shapes.py).
# tests/fixtures/fidelity_session12 holds that run's ncu logs, empty-kernel times and the cuda rows
# of its raw results (trimmed to the fields the table reads; vector_add fp32's two rows rebuilt from
# the merged CSV, as the stash kept only the fp16 run's vector_add.json). Checked: the table
# reproduces that run's verdicts (14 ok, 5 FAIL), the diagnosis cases come from the launch shapes
# in ncu's logs, and, on hand-made diagnosis times (made here, below), the per-shape excess, the
# code-fetch and parameter lines, the per-shape judgement and the diagnosis CSV, while the target's
# part and the exit status stay as they were.
set -u
: "${TILEBENCH_HOME:?}"
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
B="$TILEBENCH_HOME/bench/timing_fidelity"
fx="$TILEBENCH_HOME/tests/fixtures/fidelity_session12"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="$tmp/out"
cp -r "$fx" "$out" && mkdir -p "$out/tilebench_results/H200/runs/20261202T094158Z-c7bacc" &&
  mv "$out/tilebench_raw" "$out/tilebench_results/H200/runs/20261202T094158Z-c7bacc/raw" || fail "fixture"

# ---- the run's table: the five misses, as recorded
python3 "$B/operators.py" table "$out" H200 > "$tmp/t0"; rc=$?
[ $rc -eq 1 ] || fail "table: 5 FAIL rows: want exit 1, got $rc"
grep -qx 'excess: ncu nop_1 1.312 us - tilebench nop_1 0.608 us = 0.704 us' "$tmp/t0" || fail "excess line"
grep -q '^19 rows judged: 14 ok, 5 FAIL; 0 missing; 1 without a target' "$tmp/t0" || fail "summary: $(grep judged "$tmp/t0")"
fails=$(sed '/^Variant/,$d' "$tmp/t0" | awk '$8 == "FAIL" {printf "%s:%s ", $1, $5}')
[ "$fails" = "softmax_fp16_first:0.810 layernorm_fp16_first:0.844 layernorm_fp16_last:0.968 rmsnorm_bf16_first:0.767 relu_bf16_first:0.821 " ] ||
  fail "the misses: $fails"
# the variant: rmsnorm and relu first only (excess 1.248 - 0.608)
vfails=$(sed -n '/^Variant/,$p' "$tmp/t0" | awk '$8 == "FAIL" {printf "%s:%s ", $1, $5}')
[ "$vfails" = "rmsnorm_bf16_first:0.887 relu_bf16_first:0.865 " ] || fail "variant misses: $vfails"
grep -q '^Diagnosis' "$tmp/t0" && fail "a diagnosis part without diagnosis data"
[ -e "$out/timing_fidelity_diag_H200.csv" ] && fail "a diagnosis CSV without diagnosis data"
# the launch shape of each row, from ncu's log, in the CSV (no per-shape numbers yet)
grep -q '^relu_bf16_first,.*,FAIL,128x256,,,,,,$' "$out/timing_fidelity_operators_H200.csv" ||
  fail "relu shape: $(grep relu_bf16_first "$out/timing_fidelity_operators_H200.csv")"

# ---- the diagnosis cases: the fixed six, then one empty kernel per launch shape ncu saw
python3 "$B/operators.py" diag-cases "$out" > "$out/diag_cases.txt" || fail "diag-cases"
[ "$(head -6 "$out/diag_cases.txt" | cut -d' ' -f1 | tr '\n' ' ')" = "nop_1 nop_p8_1 loop_1 code_1 loop_g512x128 code_g512x128 " ] ||
  fail "diag cases: $(head -6 "$out/diag_cases.txt")"
grep -qx 'loop_1 1 1024 0 1 128' "$out/diag_cases.txt" || fail "loop_1 line"
grep -qx 'code_g512x128 4 0 0 512 128' "$out/diag_cases.txt" || fail "code_g512x128 line"
shapes=$(tail -n +7 "$out/diag_cases.txt" | cut -d' ' -f1 | tr '\n' ' ')
[ "$shapes" = "nop_g128x256 nop_g132x384 nop_g132x1024 nop_g256x256 nop_g264x512 nop_g512x128 nop_g512x256 nop_g528x256 nop_g1024x128 nop_g2048x512 nop_g2560x256 nop_g5120x256 nop_g10240x256 " ] ||
  fail "shapes: $shapes"
grep -qx 'nop_g264x512 3 264 0 264 512' "$out/diag_cases.txt" || fail "a shape line"
python3 "$B/operators.py" diag-cases "$tmp/nowhere" > /dev/null 2>&1; [ $? -eq 2 ] || fail "diag-cases of a missing dir: want 2"
mkdir "$tmp/none"
python3 "$B/operators.py" diag-cases "$tmp/none" > /dev/null 2> "$tmp/err"; [ $? -eq 1 ] || fail "diag-cases without logs: want 1"
grep -q 'no ncu log with kernels' "$tmp/err" || fail "diag-cases without logs: no message"

# ---- hand-made diagnosis times: tilebench_diag.csv, ncu_diag.csv, ncu_evict_diag.csv
# Every empty kernel: tilebench 0.608, ncu 1.312, ncu_ev 1.248 (the nop_1 of the run), except
# 512 x 128 (tb 0.800, ncu 1.900, ncu_ev launches 0.5 then 1.7 1.7 1.7 1.9 1.9 1.9: median 1.800
# with the first left out) and 128 x 256 (tb 0.700, ncu 1.500); 2048 x 512 has no ncu launch.
python3 - "$out" <<'EOF' || fail "making the diagnosis files"
import sys
out = sys.argv[1]
t = {"nop_g512x128": (0.800, [1.900] * 7, [0.5, 1.7, 1.7, 1.7, 1.9, 1.9, 1.9]),
     "nop_g128x256": (0.700, [1.500] * 7, [1.436] * 7),
     "nop_p8_1": (0.640, [1.400] * 7, [1.300] * 7),
     "loop_1": (4.200, [4.900] * 7, [4.850] * 7), "code_1": (4.300, [5.800] * 7, [5.000] * 7),
     "loop_g512x128": (4.400, [5.100] * 7, [5.000] * 7), "code_g512x128": (4.600, [6.400] * 7, [5.300] * 7)}
kern = {"1": "fma_loop", "3": "nop", "4": "code_line", "5": "nop_p8"}
cases = [l.split() for l in open(f"{out}/diag_cases.txt")]
tb = ["kernel,bytes,tilebench_us,events_us"]
logs = {"ncu": [], "ncu_evict": []}
for name, kind, n, nbytes, grid, block in cases:
    tbu, ncu, ev = t.get(name, (0.608, [1.312] * 7, [1.248] * 7))
    tb.append(f"{name},0,{tbu:.4f},3.6000")
    if name == "nop_g2048x512":
        continue
    for prefix, vals in (("ncu", ncu), ("ncu_evict", ev)):
        for v in vals:
            logs[prefix].append((kern[kind], grid, block, v))
open(f"{out}/tilebench_diag.csv", "w").write("\n".join(tb) + "\n")
hdr = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
       '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
for prefix, rows in logs.items():
    with open(f"{out}/{prefix}_diag.csv", "w") as f:
        f.write("==PROF== Connected to process 77 (/x/tilebench)\n" + hdr + "\n")
        for i, (k, g, b, v) in enumerate(rows):
            ns = f"{round(v * 1000):,}"
            f.write(f'"{i}","77","tilebench","127.0.0.1","{k}","1","13","({b}, 1, 1)","({g}, 1, 1)","0","9.0",'
                    f'"Command line profiler metrics","gpu__time_duration.sum","ns","{ns}"\n')
        f.write("==PROF== Disconnected from process 77\n")
EOF
python3 "$B/operators.py" table "$out" H200 > "$tmp/t1"; rc=$?
[ $rc -eq 1 ] || fail "table with the diagnosis: the target's exit status must stay 1, got $rc"
# the target's part and the variant are unchanged
sed '/^Diagnosis/,$d' "$tmp/t1" > "$tmp/t1head"
cmp -s "$tmp/t0" <(sed '$d' "$tmp/t1head") || cmp -s "$tmp/t0" "$tmp/t1head" || fail "the target's part changed: $(diff "$tmp/t0" "$tmp/t1head")"
sed -n '/^Diagnosis/,$p' "$tmp/t1" > "$tmp/diag"
drow() { awk -v k="$1" '$1 == k' "$tmp/diag" | head -1 | tr -s ' '; }
[ "$(drow nop_g512x128)" = "nop_g512x128 nop 512 x 128 0.800 1.900 1.100 1.800 1.000" ] || fail "nop_g512x128: $(drow nop_g512x128)"
[ "$(drow nop_1)" = "nop_1 nop 1 x 256 0.608 1.312 0.704 1.248 0.640" ] || fail "nop_1: $(drow nop_1)"
[ "$(drow nop_g2048x512)" = "nop_g2048x512 nop 2048 x 512 0.608 - - - -" ] || fail "nop_g2048x512: $(drow nop_g2048x512)"
grep -qx 'code fetch, 1 block (code_1 - loop_1: ~32 KiB vs ~2 KiB of code): tilebench +0.100 us, ncu +0.900 us, ncu_ev +0.150 us' "$tmp/diag" ||
  fail "code fetch line: $(grep 'code fetch, 1' "$tmp/diag")"
grep -qx 'code fetch, 512 x 128: tilebench +0.200 us, ncu +1.300 us, ncu_ev +0.300 us' "$tmp/diag" || fail "code fetch 512 line"
grep -qx '64 bytes of parameters (nop_p8_1 - nop_1): tilebench +0.032 us, ncu +0.088 us, ncu_ev +0.052 us' "$tmp/diag" ||
  fail "parameters line: $(grep parameters "$tmp/diag")"
# per shape: softmax first (512 x 128) 3.904 - 1.100 = 2.804, 2.592 / 2.804 = 0.924: ok; under
# tilebench's eviction 3.472 - 1.000 = 2.472: 1.049. rmsnorm first 4.128 - 1.1: 0.867, FAIL.
# relu first (128 x 256): 3.200 - 0.800 = 2.400: 0.853, FAIL; ncu_ev 3.008 - (1.436 - 0.700).
[ "$(drow softmax_fp16_first)" = "softmax_fp16_first 512x128 0.704 1.100 2.804 0.924 ok 1.000 1.049" ] ||
  fail "softmax per shape: $(drow softmax_fp16_first)"
[ "$(drow rmsnorm_bf16_first | cut -d' ' -f2-7)" = "512x128 0.704 1.100 3.028 0.867 FAIL" ] || fail "rmsnorm per shape: $(drow rmsnorm_bf16_first)"
[ "$(drow relu_bf16_first)" = "relu_bf16_first 128x256 0.704 0.800 2.400 0.853 FAIL 0.736 0.901" ] ||
  fail "relu per shape: $(drow relu_bf16_first)"
# a shape ncu did not time: no per-shape reference, said as missing
[ "$(drow mean_reduction_fp32_last | cut -d' ' -f2-7)" = "2048x512 0.704 - - - missing" ] ||
  fail "mean_reduction last: $(drow mean_reduction_fp32_last)"
# the other shapes have nop_1's excess: the same ratio as the target's
[ "$(drow layernorm_fp16_last | cut -d' ' -f2-7)" = "264x512 0.704 0.704 30.848 0.968 FAIL" ] || fail "layernorm last: $(drow layernorm_fp16_last)"
awk '$1 == "nop_1"' "$tmp/diag" | wc -l | grep -qx 1 || fail "nop_1 is no row of the per-shape table"
csvf="$out/timing_fidelity_operators_H200.csv"
grep -qx 'softmax_fp16_first,4194304,3.9040,2.5920,6.4640,3.2000,0.8100,0.1,FAIL,1,7,,3.4720,2.8320,0.9153,ok,512x128,1.1000,2.8040,0.9244,ok,1.0000,1.0485' "$csvf" ||
  fail "csv softmax: $(grep softmax_fp16_first "$csvf")"
grep -q '^nop_1,0,1.3120,0.6080,.*,,,,,,,$' "$csvf" || fail "csv nop_1: $(grep nop_1 "$csvf")"
dcsv="$out/timing_fidelity_diag_H200.csv"
[ "$(head -1 "$dcsv")" = "kernel,launch,grid,block,tilebench_us,ncu_us,ncu_runs,ncu_evict_us,excess_us,excess_evict_us" ] ||
  fail "diag csv header: $(head -1 "$dcsv")"
grep -qx 'nop_g512x128,nop,512,128,0.8000,1.9000,7,1.8000,1.1000,1.0000' "$dcsv" || fail "diag csv row: $(grep nop_g512x128 "$dcsv")"
grep -qx 'nop_g2048x512,nop,2048,512,0.6080,,0,,,' "$dcsv" || fail "diag csv missing row: $(grep nop_g2048x512 "$dcsv")"
[ "$(wc -l < "$dcsv")" -eq 20 ] || fail "diag csv: want 19 rows"
echo "ok"
