#!/usr/bin/env bash
# fidelity_operators_script.sh: bench/timing_fidelity/operators.sh end to end without a GPU, so
# a slip in its shell reaches no device call. nvcc and ncu are stand-ins on PATH: nvcc writes a
# fid_cases that lists kernels.cu's case table; ncu records its command line and runs the
# command it profiles with --dry-run added (the real binary then checks every flag operators.sh
# hands `tilebench run` under ncu, and the items they select). Here the real `tilebench run` and
# fidelity.lua find no device: every row is missing and the script says so (exit 1).
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/tree/build"
cat > "$tmp/bin/nvcc" <<'NVCC'
#!/usr/bin/env bash
out=""; cubin=0
while [ $# -gt 0 ]; do
  case $1 in -o) out=$2; shift ;; -cubin) cubin=1 ;; esac
  shift
done
[ -n "$out" ] || exit 1
if [ $cubin = 1 ]; then echo "fake cubin" > "$out"; exit 0; fi
printf '#!/usr/bin/env bash\n[ "$1" = --list ] || exit 1\nprintf "copy_32K 0 2048 65536 8 256\\nnop_1 3 1 0 1 256\\nnop_2112 3 2112 0 2112 256\\n"\n' > "$out"
chmod +x "$out"
NVCC
cat > "$tmp/bin/ncu" <<'NCU'
#!/usr/bin/env bash
# Records the command line; runs the profiled tilebench command with --dry-run (`run` only).
[ "$*" = --version ] && { echo "Version 0.0 (stand-in)"; exit 0; }
printf '%s\n' "$*" >> "$NCU_CALLS"
app=()
seen=0
for a in "$@"; do
  if [ $seen = 1 ]; then app+=("$a"); elif [ "$a" = "$TILEBENCH" ]; then seen=1; fi
done
[ $seen = 1 ] || { echo "ncu stand-in: no tilebench in the command" >&2; exit 9; }
if [ "${app[0]}" = run ]; then
  "$TILEBENCH" "${app[@]}" --dry-run >> "$NCU_DRY" 2>&1
  echo "rc=$?" >> "$NCU_DRY"
  # NCU_FAKE_KERNELS: a log with one case of vector_add (its reference, then a cuda launch of
  # 528 x 256), so that the diagnosis step finds a launch shape
  if [ -n "${NCU_FAKE_KERNELS:-}" ]; then
    log="" prev=""
    for a in "$@"; do [ "$prev" = --log-file ] && log=$a; prev=$a; done
    h='"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
    r='"1","tilebench","127.0.0.1"'
    printf '%s\n"0",%s,"vector_add_ref","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","x","gpu__time_duration.sum","ns","5,000"\n"1",%s,"vector_add_cuda","1","13","(256, 1, 1)","(528, 1, 1)","0","9.0","x","gpu__time_duration.sum","ns","4,000"\n' \
      "$h" "$r" "$r" > "$log"
  fi
fi
exit 0
NCU
chmod +x "$tmp/bin/ncu" "$tmp/bin/nvcc"
export NCU_CALLS="$tmp/ncu_calls" NCU_DRY="$tmp/ncu_dry"
cd "$tmp/tree" || exit 1
PATH="$tmp/bin:$PATH" TILEBENCH_CACHE_DIR="$tmp/cache" \
  bash "$TILEBENCH_HOME/bench/timing_fidelity/operators.sh" "$tmp/out" > "$tmp/log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "nothing measured: want exit 1, got $rc: $(tail -20 "$tmp/log")"
# tilebench's side ran, once per group, and failed for want of a device, logged
[ "$(grep -c '^== tilebench run --operator' "$tmp/out/tilebench_run.log")" -eq 4 ] || fail "tilebench side: want 4 runs"
grep -q 'no CUDA driver found\|no CUDA device' "$tmp/out/tilebench_run.log" || fail "tilebench side: no device message"
grep -q 'tilebench (empty kernel) failed' "$tmp/log" || fail "empty kernel: failure not said"
grep -qx "ncu: $tmp/bin/ncu (Version 0.0 (stand-in))" "$tmp/log" || fail "ncu's path and version not said"
# ncu: 4 groups and the empty kernel, each with the fidelity flags and its own log file; then the
# same under --cache-control none (the diagnosis variant)
[ "$(wc -l < "$tmp/ncu_calls")" -eq 10 ] || fail "ncu: want 10 calls: $(cat "$tmp/ncu_calls")"
flags='--cache-control all --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --target-processes application-only'
[ "$(head -5 "$tmp/ncu_calls" | grep -cF -- "$flags -k ")" -eq 5 ] || fail "ncu flags: $(cat "$tmp/ncu_calls")"
[ "$(tail -5 "$tmp/ncu_calls" | grep -cF -- "${flags/control all/control none} -k ")" -eq 5 ] ||
  fail "ncu variant flags: $(cat "$tmp/ncu_calls")"
grep -qF -- "--log-file $tmp/out/ncu_evict_3.csv $TILEBENCH run --operator matmul_fp32_fp16_fp8" "$tmp/ncu_calls" ||
  fail "variant log names"
python3 "$TILEBENCH_HOME/bench/timing_fidelity/operators.py" groups > "$tmp/groups"
i=0
while read -r dtype cases ops regex; do
  grep -qF -- "-k $regex --log-file $tmp/out/ncu_$i.csv $TILEBENCH run --operator $ops --dtype $dtype --cases $cases --impl cuda" \
    "$tmp/ncu_calls" || fail "ncu call $i ($ops $dtype): $(cat "$tmp/ncu_calls")"
  i=$((i + 1))
done < "$tmp/groups"
grep -qF -- "-k regex:^nop\$ --log-file $tmp/out/ncu_nop.csv $TILEBENCH script" "$tmp/ncu_calls" || fail "ncu nop call"
grep -q 'fidelity.lua .* stability clock=events graph=false clock_check=false mode=fixed warmup=1 repeat=5$' "$tmp/ncu_calls" ||
  fail "ncu nop: options"
# every `tilebench run` ncu profiles parses and selects the issue's cases: 6 + 8 + 4 + 1 items
[ "$(grep -c '^rc=0$' "$tmp/ncu_dry")" -eq 8 ] || fail "the run under ncu does not parse: $(cat "$tmp/ncu_dry")"
[ "$(grep -E '^[0-9]+ work items' "$tmp/ncu_dry" | awk '{print $1}' | tr '\n' ' ')" = "6 8 4 1 6 8 4 1 " ] ||
  fail "items under ncu: $(grep 'work items' "$tmp/ncu_dry")"
grep -q '^  default  fp16      #1   K=1024, M=4096, N=4096$' "$tmp/ncu_dry" || fail "matmul case: $(grep -A2 matmul "$tmp/ncu_dry")"
# the table: every row missing, saying why; nothing merged but the header
grep -q '^0 rows judged: 0 ok, 0 FAIL; 20 missing' "$tmp/out/fidelity_operators.txt" || fail "table summary"
grep -q "^softmax_fp16_last .*tilebench: 0 rows for softmax fp16, expected 2 (see tilebench_run.log); ncu: no kernel in ncu_1.csv (see ncu_1.log)" \
  "$tmp/out/fidelity_operators.txt" || fail "softmax note: $(grep softmax_fp16_last "$tmp/out/fidelity_operators.txt")"
[ -s "$tmp/out/cache_new.txt" ] && fail "cache_new.txt: $(cat "$tmp/out/cache_new.txt")"
[ "$(cat bench/results/timing_fidelity_H200.csv)" = "kernel,bytes,ncu_us,tilebench_us,events_us,do_bench_us" ] ||
  fail "merge of nothing: $(cat bench/results/timing_fidelity_H200.csv)"
[ -f bench/results/timing_fidelity_H200_operators.txt ] || fail "table not copied to bench/results"
# FID_NCU_EVICT=0: the variant is skipped
rm -f "$tmp/ncu_calls" "$tmp/ncu_dry"
PATH="$tmp/bin:$PATH" TILEBENCH_CACHE_DIR="$tmp/cache" FID_NCU_EVICT=0 \
  bash "$TILEBENCH_HOME/bench/timing_fidelity/operators.sh" "$tmp/out" > "$tmp/log" 2>&1
[ "$(wc -l < "$tmp/ncu_calls")" -eq 5 ] || fail "FID_NCU_EVICT=0: want 5 ncu calls"
[ "$(grep -c '^== tilebench run --operator' "$tmp/out/tilebench_run.log")" -eq 4 ] || fail "second run: the log was not cleared"
[ -e "$tmp/out/ncu_evict_groups.txt" ] && fail "FID_NCU_EVICT=0: the first run's variant logs were not cleared"
[ -e "$tmp/out/diag_cases.txt" ] && fail "no launch shape in ncu's logs: no diagnosis cases"
grep -q 'no ncu log with kernels' "$tmp/log" || fail "no diagnosis: not said"

# The diagnosis (step 6): ncu's logs now hold a vector_add launch of 528 x 256, so its cases are
# written, tilebench times them (and fails here, without a device, saying so), and ncu profiles
# them under each cache control, launched by fidelity.lua with the empty kernel's options
rm -f "$tmp/ncu_calls" "$tmp/ncu_dry"
PATH="$tmp/bin:$PATH" TILEBENCH_CACHE_DIR="$tmp/cache" NCU_FAKE_KERNELS=1 \
  bash "$TILEBENCH_HOME/bench/timing_fidelity/operators.sh" "$tmp/out" > "$tmp/log" 2>&1
grep -qx 'nop_g528x256 3 528 0 528 256' "$tmp/out/diag_cases.txt" || fail "diag cases: $(cat "$tmp/out/diag_cases.txt")"
[ "$(wc -l < "$tmp/out/diag_cases.txt")" -eq 7 ] || fail "diag cases: want the fixed 6 and one shape"
grep -q 'tilebench (diagnosis cases) failed: see tilebench_diag.log' "$tmp/log" || fail "diag: tilebench failure not said"
[ "$(wc -l < "$tmp/ncu_calls")" -eq 12 ] || fail "diag: want 12 ncu calls: $(cat "$tmp/ncu_calls")"
regex=$(python3 -c "import sys; sys.path.insert(0, '$TILEBENCH_HOME/bench/timing_fidelity'); import shapes; print(shapes.NCU_REGEX)")
for cc in all:ncu none:ncu_evict; do
  grep -qF -- "--cache-control ${cc%%:*} --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --target-processes application-only -k $regex --log-file $tmp/out/${cc##*:}_diag.csv $TILEBENCH script $TILEBENCH_HOME/bench/timing_fidelity/fidelity.lua" "$tmp/ncu_calls" ||
    fail "ncu diag call ($cc): $(grep diag "$tmp/ncu_calls")"
done
grep -q "diag_cases.txt $tmp/out/ncu_evict_diag_tb.csv stability clock=events graph=false clock_check=false mode=fixed warmup=1 repeat=5\$" "$tmp/ncu_calls" ||
  fail "ncu diag options: $(grep diag "$tmp/ncu_calls")"
# FID_DIAG=0: no diagnosis, and the last run's diagnosis files are cleared
rm -f "$tmp/ncu_calls"
PATH="$tmp/bin:$PATH" TILEBENCH_CACHE_DIR="$tmp/cache" NCU_FAKE_KERNELS=1 FID_DIAG=0 \
  bash "$TILEBENCH_HOME/bench/timing_fidelity/operators.sh" "$tmp/out" > "$tmp/log" 2>&1
[ "$(wc -l < "$tmp/ncu_calls")" -eq 10 ] || fail "FID_DIAG=0: want 10 ncu calls"
[ -e "$tmp/out/diag_cases.txt" ] || [ -e "$tmp/out/ncu_diag.csv" ] && fail "FID_DIAG=0: diagnosis files left"
echo ok
