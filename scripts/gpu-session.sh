#!/usr/bin/env bash
# The runs that matter on the GPU machine, in stages, each logged. Used with the device tool:
#   bash scripts/gpu-session.sh OUTDIR STAGE [STAGE...]
# Stages: info, torch-probe, autotune-diag, ctest (GPU tests, quick ones), ctest-slow (isolation, resume), ctest-all, vector_add,
# peaks, rho-check (bench/rho/check.lua on results/H200/csv), power-order (-matmul, -bmm: bench/power/order.sh, issue 19's run-order target), compare-aa-1/-2/-3, compare-aa-planted, compare-aa (bench/compare/aa.sh: compare's A/A
# and planted-slowdown check, one device call each), matmul, fidelity, fidelity-operators (issue 19's
# fidelity rows: the suite's cuda kernels against ncu minus its launch excess), operators (all operators, default mode), autotune, autotune-last (the
# last case of each dtype), autotune-full-cold (all operators, every case, autotune mode, from an
# empty NVRTC cache: issue 14's target is 10 minutes), autotune-full-warm (the same again with the
# cache autotune-full-cold filled, in a later call on the same machine: 5 minutes),
# autotune-agreement-1/-2/-3 (bench/autotune/agreement.sh on a third of the operators each),
# autotune-profile (where an autotuned case's time goes; $PROFILE_OPS, $PROFILE_CASES), crosscheck (issue 15's alone),
# autotune-resume (RUN_ID=<id>: a cut autotune-full-* run, resumed with their cache),
# smoke, examples, torch (the torch GPU test and bench/torch's cross-check table),
# torch-operators / torch-autotune (all operators with torch, cuda and lib),
# triton (the Triton GPU tests: launcher identity, every triton row verifying at the first case),
# triton-operators (all operators with torch, cuda, lib and triton, default mode), triton-autotune
# (the same in autotune mode), triton-proton (bench/triton/proton.sh: our times against Proton's),
# or any other string: a bash command, logged as custom1, custom2, ...
# Expects a build in ./build (carried from the build machine). Logs go to OUTDIR/logs/, results
# to ./results and ./peaks; OUTDIR/session.tgz bundles logs and results for the trip back.
set -u
OUTDIR=${1:?usage: gpu-session.sh OUTDIR STAGE...}
shift
cd "$(dirname "$0")/.."
ROOT=$PWD
TB=$ROOT/build/tilebench
LOGS=$OUTDIR/logs
mkdir -p "$LOGS"
# The NVRTC cache travels with the carried build, warmed on the build machine (same NVRTC) by
# scripts/warm-cache.sh into build/nvrtc-cache.tgz; it is unpacked here into the cache ctest uses
# (build/test-cache), which is also the cache of every stage.
export TILEBENCH_CACHE_DIR=${TILEBENCH_CACHE_DIR:-$ROOT/build/test-cache}
if [ -f "$ROOT/build/nvrtc-cache.tgz" ]; then
  mkdir -p "$TILEBENCH_CACHE_DIR" && tar xzf "$ROOT/build/nvrtc-cache.tgz" -C "$TILEBENCH_CACHE_DIR" &&
    echo "unpacked build/nvrtc-cache.tgz into $TILEBENCH_CACHE_DIR"
fi
export PYTHONUNBUFFERED=1
summary=$OUTDIR/summary.txt
STAMP=$OUTDIR/.session-start
touch "$STAMP"
# The operators of the operator stages: $OPS (comma-separated) where given, else every operator.
OPS=${OPS:-$(ls operators | grep -v '^_' | tr '\n' ',' | sed 's/,$//')}

# SESSION_DEADLINE (seconds since the epoch) caps every stage, so that the bundle is still made
# before the device tool's command limit ends the call.
stage() {
  local name=$1; shift
  local t0=$(date +%s)
  local limit=${STAGE_TIMEOUT:-300}
  if [ -n "${SESSION_DEADLINE:-}" ]; then
    local left=$(( SESSION_DEADLINE - t0 - 15 ))
    [ $left -lt 1 ] && { echo "=== $name: skipped (session deadline)" | tee -a "$summary"; return 0; }
    [ $left -lt $limit ] && limit=$left
  fi
  echo "=== $name: $*" | tee -a "$summary"
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$summary"
  tail -n 25 "$LOGS/$name.log" | sed 's/^/    /' >> "$summary"
  return 0
}

for s in "$@"; do
  case $s in
    info)
      stage info bash -c "nvidia-smi; nvidia-smi -q -d CLOCK | head -40; $TB --version; $TB devices" ;;
    ctest)
      stage ctest bash -c "cd build && ctest -L gpu -E 'gpu_isolation|gpu_resume' -j \${CTEST_JOBS:-4} --output-on-failure --timeout 300" ;;
    ctest-all)
      stage ctest-all bash -c "cd build && ctest -L gpu -j \${CTEST_JOBS:-4} --output-on-failure --timeout 400" ;;
    ctest-slow)
      stage ctest-slow bash -c "cd build && ctest -R 'gpu_isolation|gpu_resume' --output-on-failure --timeout 400" ;;
    vector_add)
      stage vector_add "$TB" run --operator vector_add --gpu H200 ;;
    peaks)
      stage peaks "$TB" peaks --gpu H200 ;;
    rho-check)
      # issue 19's target on the CSVs in results/H200/csv with the peaks file now in peaks/
      # (after `peaks`, and again after `operators`): exit 1 with the cases over 1.05
      stage rho-check "$TB" script bench/rho/check.lua results/H200/csv H200 1.05 ;;
    compare-aa-1|compare-aa-2|compare-aa-3|compare-aa-planted|compare-aa)
      # bench/compare/aa.sh (issue 19): three default runs of the 12 operators, a planted 5 %
      # slowdown, then the analysis (run-to-run noise from runs 1-2, A/A on runs 1-3, the planted
      # run against run 1). One stage per device call; AA_DIR outlives the calls (the machine's
      # /tmp stays while it is held; AA_OPS picks fewer operators, e.g. the issue's softmax,
      # layernorm,argmax,rmsnorm). compare-aa copies the noise to peaks/noise/H200.json and
      # the summary to bench/results/compare_aa_H200.txt (to commit) and into the logs.
      aa=${AA_DIR:-/tmp/tilebench-aa}
      case $s in
        compare-aa-[123]) STAGE_TIMEOUT=${STAGE_TIMEOUT:-560} stage "$s" bash bench/compare/aa.sh "$aa" run "${s##*-}" ;;
        compare-aa-planted) STAGE_TIMEOUT=${STAGE_TIMEOUT:-560} stage "$s" bash bench/compare/aa.sh "$aa" planted ;;
        compare-aa)
          stage compare-aa bash bench/compare/aa.sh "$aa" analyse
          mkdir -p peaks/noise bench/results
          cp "$aa/noise.json" peaks/noise/H200.json 2>/dev/null
          cp "$aa/summary.txt" bench/results/compare_aa_H200.txt 2>/dev/null
          for f in summary.txt noise.json aa.txt planted.txt aa.csv planted.csv; do cp "$aa/$f" "$LOGS/compare-aa.$f" 2>/dev/null; done ;;
      esac ;;
    power-order|power-order-*)
      # bench/power/order.sh (issue 19, power-capped kernels): matmul fp16 4096 x 4096 x 20480 and
      # batched_matmul fp16 at its largest case, 5 processes in each order (lib then cuda, cuda
      # then lib, each alone). power-order runs both cases (about 9 minutes); a -matmul or -bmm
      # part runs one, and an -interleave, -cooldown or -sequential suffix sets --conditions
      # (default: the timer's), so the protocols can be compared: power-order-matmul-cooldown.
      # $FLAGS adds other run flags. The table goes to the log and to
      # bench/results/power_order_H200<suffix>.md (to commit into docs/PERFORMANCE.md). $SUFFIX
      # (e.g. -case) names a variant: appended to the stage's log and folder and to that file's
      # name (dashes as underscores), so variants run in one call (FLAGS=... SUFFIX=-a bash
      # scripts/gpu-session.sh OUT stage; FLAGS=... SUFFIX=-b ...) do not overwrite each other.
      rest=${s#power-order}; which=""; pflags=${FLAGS:-}; vsfx=${SUFFIX:-}
      case $rest in -matmul*) which=matmul ;; -bmm*) which=bmm ;; esac
      case $rest in
        *-interleave) pflags="$pflags --conditions interleave" ;;
        *-cooldown) pflags="$pflags --conditions cooldown" ;;
        *-sequential) pflags="$pflags --conditions sequential" ;;
      esac
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-580} stage "$s$vsfx" env FLAGS="$pflags" bash bench/power/order.sh "$LOGS/$s$vsfx.d" $which
      mkdir -p bench/results
      cp "$LOGS/$s$vsfx.d/order.md" "bench/results/power_order_H200${rest//-/_}${vsfx//-/_}.md" 2>/dev/null ;;
    matmul)
      stage matmul bash bench/matmul/run.sh "$TB" ;;
    fidelity)
      stage fidelity bash bench/timing_fidelity/run.sh "$LOGS/fidelity.d" ;;
    fidelity-operators)
      # bench/timing_fidelity/operators.sh (issue 19, section 2): the cuda kernels of 10 operators
      # timed by `tilebench run` and by ncu (the same cubins from the NVRTC cache, the same cases),
      # against ncu minus its launch excess (nop_1, same run). Rows merged into
      # bench/results/timing_fidelity_H200.csv; the table, the ncu logs and the run logs travel in
      # the logs (fidelity-operators.d/). Exit 1 when a row misses or fails its target.
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-560} stage fidelity-operators bash bench/timing_fidelity/operators.sh "$OUTDIR/fidelity-operators"
      mkdir -p "$LOGS/fidelity-operators.d"
      (cd "$OUTDIR/fidelity-operators" 2>/dev/null && cp ./*.txt ./*.log ./*.csv "$LOGS/fidelity-operators.d/" 2>/dev/null
       for f in tilebench_results/*/runs/*/raw/*.json; do [ -f "$f" ] && cp "$f" "$LOGS/fidelity-operators.d/raw_${f##*/}"; done)
      cat "$OUTDIR/fidelity-operators/fidelity_operators.txt" >> "$summary" 2>/dev/null ;;
    operators)
      ops=$OPS
      stage operators "$TB" run --operator "$ops" --gpu H200 --quiet ;;
    autotune)
      ops=$OPS
      stage autotune "$TB" run --operator "$ops" --gpu H200 --autotune --quiet ;;
    autotune-last)
      ops=$OPS
      stage autotune-last "$TB" run --operator "$ops" --gpu H200 --autotune --cases last --quiet ;;
    autotune-full-cold|autotune-full-warm)
      # Its own cache outside the tree and OUTDIR (both are fresh each call of the device tool;
      # the machine's /tmp stays while it is held): emptied for the cold stage, reused by the warm
      # one, which must run in a later call on the same machine (each may take ~10 minutes).
      # Wall time in OUTDIR/logs/<stage>.wall_s (in session.tgz); the run's precompile line and provenance.json hold
      # the compile phase's share. $IMPLS (comma-separated) limits the implementations (issue 14's
      # target was set for cuda and lib; issue 15 adds torch) and $FLAGS adds run flags (a protocol).
      ops=$OPS
      acache=${AUTOTUNE_CACHE:-/tmp/tilebench-autotune-cache}
      [ "$s" = autotune-full-cold ] && rm -rf "$acache"
      if [ "$s" = autotune-full-warm ] && [ -z "$(ls -A "$acache" 2>/dev/null)" ]; then
        echo "=== $s: WARNING: $acache is empty (a fresh machine?): this run is cold" | tee -a "$summary"
      fi
      mkdir -p "$acache"
      t0=$(date +%s.%N)
      TILEBENCH_CACHE_DIR=$acache STAGE_TIMEOUT=${STAGE_TIMEOUT:-560} \
        stage "$s" "$TB" run --operator "$ops" --gpu H200 --autotune --quiet ${IMPLS:+--impl "$IMPLS"} ${FLAGS:-}
      echo "$(date +%s.%N) $t0" | awk '{printf "%.1f\n", $1 - $2}' > "$LOGS/$s.wall_s"
      grep -E "precompile:|^run .* finished|stopped" "$LOGS/$s.log" | sed 's/^/    /' >> "$summary" ;;
    autotune-resume)
      # The run a call's limit cut (its id in $RUN_ID), resumed with the autotune stages' cache on
      # the same machine (a later call while it is still held): what is left, kernels compiled
      # beside the cases as before.
      acache=${AUTOTUNE_CACHE:-/tmp/tilebench-autotune-cache}
      mkdir -p "$acache"
      TILEBENCH_CACHE_DIR=$acache STAGE_TIMEOUT=${STAGE_TIMEOUT:-560} \
        stage autotune-resume "$TB" run --resume "${RUN_ID:?autotune-resume needs RUN_ID}" --gpu H200 --quiet
      grep -E "precompile:|^run .* finished|stopped" "$LOGS/autotune-resume.log" | sed 's/^/    /' >> "$summary" ;;
    autotune-profile)
      # Where an autotuned case's time goes, from an empty cache (its own): the first and last
      # case of each dtype of $PROFILE_OPS, compiled beside the cases; each row's search record
      # (journal: search.seconds) splits the search's wall time into planning, first runs,
      # verification, screens and full measurements. Results under the label H200-profile.
      pops=${PROFILE_OPS:-softmax,layernorm,argmax,vector_add,relu,matmul_fp32_fp16_fp8}
      pcache=/tmp/tilebench-profile-cache
      rm -rf "$pcache"; mkdir -p "$pcache"
      TILEBENCH_CACHE_DIR=$pcache STAGE_TIMEOUT=${STAGE_TIMEOUT:-300} \
        stage autotune-profile "$TB" run --operator "$pops" --gpu H200-profile --autotune --cases "${PROFILE_CASES:-ends}" --quiet ;;
    crosscheck)
      # issue 15's cross-check alone (the `torch` stage also runs the long GPU test first)
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-400} stage crosscheck bash bench/torch/crosscheck.sh "$TB" "$ROOT/bench/results/torch" "$OPS" ;;
    autotune-agreement-1|autotune-agreement-2|autotune-agreement-3)
      # One chunk of operators each (a command of the device tool may run 10 minutes); the table
      # is in the log and logs/<stage>.d/agreement.md (in session.tgz).
      case $s in
        *-1) chunk="softmax layernorm rmsnorm" ;;
        *-2) chunk="argmax mean_reduction matmul_fp32_fp16_fp8" ;;
        *-3) chunk="batched_matmul vector_add mul2 relu sigmoid swiglu" ;;
      esac
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-560} stage "$s" bash bench/autotune/agreement.sh "$LOGS/$s.d" $chunk ;;
    torch)
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-600} stage torch-test bash -c "cd build && ctest -R gpu_torch_operators --output-on-failure --timeout 600"
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-900} stage torch-crosscheck bash bench/torch/crosscheck.sh "$TB" "$ROOT/bench/results/torch" ;;
    torch-operators)
      ops=$OPS
      stage torch-operators "$TB" run --operator "$ops" --impl torch,cuda,lib --gpu H200 --quiet ;;
    torch-autotune)
      ops=$OPS
      stage torch-autotune "$TB" run --operator "$ops" --impl torch,cuda,lib --gpu H200 --autotune --quiet ;;
    triton)
      # tests/gpu/triton_launch.lua: each kernel through triton's own launcher and through
      # tilebench gives identical outputs; tests/gpu/triton_operators.sh: the triton rows verify.
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-600} stage triton-test bash -c "python3 -c 'import triton, torch; print(triton.__version__, torch.__version__)'; cd build && ctest -R 'gpu_triton' --output-on-failure --timeout 600" ;;
    triton-operators)
      ops=$OPS
      stage triton-operators "$TB" run --operator "$ops" --impl torch,cuda,lib,triton --gpu H200 --quiet ;;
    triton-proton)
      # bench/triton/proton.sh: tilebench's times of Triton kernels against Proton's (issue 21)
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-400} stage triton-proton bash bench/triton/proton.sh "$TB" "$ROOT/bench/results/triton_proton" ;;
    triton-autotune)
      ops=$OPS
      STAGE_TIMEOUT=${STAGE_TIMEOUT:-560} stage triton-autotune "$TB" run --operator "$ops" --impl torch,cuda,lib,triton --gpu H200 --autotune --quiet ;;
    triton-probe)
      # Which ptxas and python triton compiles with here, and a cubin's digest (the cache key's inputs)
      stage triton-probe bash -c "python3 -c 'import sys, triton; from triton.backends.nvidia import compiler as c; print(sys.version); print(triton.__version__, triton.__file__); print(c.get_ptxas_version()); from triton import knobs; print(knobs.nvidia.ptxas.path)'; env | grep -i -E 'triton|ptxas|cuda' ; python3 host/python/tb_triton.py bench/triton/probe_desc.json > $LOGS/triton-probe.json; python3 -c 'import json,sys,hashlib; r=json.load(open(sys.argv[1])); print(\"sha256\", hashlib.sha256(bytes.fromhex(r[\"cubin_hex\"])).hexdigest())' $LOGS/triton-probe.json" ;;
    torch-probe)
      # Why torch can or cannot run here: the embedded bridge's answer and the plain interpreter's.
      printf '%s\n' 'local ok, why, info = require("tilebench.torch").available(0)' \
        'print(ok and "ok" or ("no: " .. tostring(why)))' \
        'print(require("tilebench.json").encode(info or {}))' > "$OUTDIR/probe.lua"
      stage torch-probe bash -c "python3 -c 'import sys, torch; print(sys.version, torch.__version__, torch.version.cuda, torch.cuda.is_available())'; $TB script $OUTDIR/probe.lua" ;;
    autotune-diag)
      # One autotuned case with a generous limit: the search's wall time and record.
      stage autotune-diag bash -c "export TILEBENCH_RESULTS_DIR=\$(mktemp -d); time $TB run --operator softmax --dtype fp16 --cases last --impl cuda --autotune --gpu diag --case-timeout 120; cat \$TILEBENCH_RESULTS_DIR/diag/runs/*/journal.jsonl | cut -c1-3000" ;;
    smoke)
      stage smoke "$TB" run campaigns/smoke.lua --gpu H200 ;;
    examples)
      stage examples bash -c "$TB script examples/plain_api.lua" ;;
    *)
      ncustom=$(( ${ncustom:-0} + 1 ))
      stage "custom$ncustom" bash -c "$s" ;;
  esac
done

# The trip back: the device tool brings 8 files of 16 MiB at most, and copies the tracked files
# of the tree again at its next call (the CSVs written here would be overwritten there). So only
# what this session wrote travels: session.tgz holds the CSVs, peaks, run.json/provenance, the
# bench tables and the logs; journals.tgz the runs' journals (from which `tilebench merge` rebuilds
# CSVs and raw/), split into journals.tgz.NN pieces of 15 MiB where larger (cat them | tar xz).
# Raw samples stay behind: the journal holds them too.
# A second invocation with the same OUTDIR (two in one device call) keeps the first's bundles:
# its own are session-2.tgz, journals-2.tgz, ... (the stage work folders are under logs/, <stage>.d).
sfx=""; i=2
while [ -e "$OUTDIR/session$sfx.tgz" ] || [ -e "$OUTDIR/session$sfx.tgz.00" ]; do sfx="-$i"; i=$((i + 1)); done
(cd "$ROOT" && find results peaks bench/results -type f -newer "$STAMP" ! -path '*/raw/*' ! -name journal.jsonl -print0 2>/dev/null |
  tar czf "$OUTDIR/session$sfx.tgz" --null -T - --transform 's,^,tree/,' -C "$OUTDIR" logs)
(cd "$ROOT" && find results -type f -name journal.jsonl -newer "$STAMP" -print0 | tar czf "$OUTDIR/journals$sfx.tgz" --null -T -)
for f in "session$sfx.tgz" "journals$sfx.tgz"; do
  if [ "$(stat -c %s "$OUTDIR/$f")" -gt 15728640 ]; then
    split -b 15m -d "$OUTDIR/$f" "$OUTDIR/$f." && rm "$OUTDIR/$f"
  fi
done
rm -rf "$LOGS" "$STAMP"  # in session.tgz now; the tool counts every file it brings back
echo "done: $summary"
