#!/usr/bin/env bash
# h200_scale.sh: issue 17's checks on a GPU machine of one GPU (the device tool's nvidia-h200).
#
#   bash scripts/h200_scale.sh OUTDIR devices0   `run --devices 0` against a plain run
#   bash scripts/h200_scale.sh OUTDIR slurm      the campaign as a 4-task Slurm array through a
#                                                one-node cluster here, merged, against an
#                                                unsharded run
# Both compare the CSVs with scripts/csv_diff.py (rows and statuses must match; times are only
# reported) and exit 1 when they differ. SEL (default: suite --mode default --cases first) is
# the campaign and selection both sides run; SHARDS (default 4); WAIT_S bounds the wait for the
# Slurm jobs (default 480). Expects a build in ./build (carried), like scripts/gpu-session.sh,
# and the compile cache in $TILEBENCH_CACHE_DIR (default build/test-cache, where gpu-session.sh
# unpacks build/nvrtc-cache.tgz). Logs and CSVs go to OUTDIR.
#
# Slurm there: the machine has no package registry, so Debian's packages travel with the call.
# Here, once (a Debian 12 machine where apt-get works; root; .slurm-debs/ is in .gitignore):
#   scripts/slurm_debs.sh .slurm-debs       # slurmctld, slurmd, slurm-client, munge and the
#                                           # libraries they load: ~5 MB, 20 packages
# and name .slurm-debs (and build) in the device call's carry. This script unpacks them with dpkg -x into
# /tmp/slurm-prefix (never into /) and starts the cluster from there (scripts/slurm_local.sh,
# SLURM_PREFIX; it writes /usr/sbin/slurmstepd, a wrapper, when none exists). A system Slurm, if
# installed, is used instead. The node offers 1 CPU, so the array's tasks measure one at a time
# on the one GPU (gres/gpu is not used: --gres none).
set -u
OUTDIR=${1:?usage: h200_scale.sh OUTDIR devices0|slurm}
STAGE=${2:?usage: h200_scale.sh OUTDIR devices0|slurm}
cd "$(dirname "$0")/.."
ROOT=$PWD
TB=$ROOT/build/tilebench
SEL=${SEL:-suite --mode default --cases first}
SHARDS=${SHARDS:-4}
WAIT_S=${WAIT_S:-480}
LABEL=H200
export TILEBENCH_CACHE_DIR=${TILEBENCH_CACHE_DIR:-$ROOT/build/test-cache}
if [ -f "$ROOT/build/nvrtc-cache.tgz" ] && [ ! -d "$TILEBENCH_CACHE_DIR" ]; then
  mkdir -p "$TILEBENCH_CACHE_DIR" && tar xzf "$ROOT/build/nvrtc-cache.tgz" -C "$TILEBENCH_CACHE_DIR"
fi
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
# shellcheck disable=SC2086
plain() { # RESULTS-ROOT LOG: the unsharded run of SEL (one per OUTDIR: the second stage reuses it)
  if [ -d "$1/$LABEL/csv" ]; then echo "unsharded run: reused ($1)"; return; fi
  TILEBENCH_RESULTS_DIR=$1 "$TB" run $SEL --gpu $LABEL --quiet >"$2" 2>&1
  echo "unsharded run: rc=$? ($(tail -n 1 "$2"))"
}

case $STAGE in
  devices0)
    plain "$OUTDIR/plain" "$OUTDIR/plain.log"
    # shellcheck disable=SC2086
    TILEBENCH_RESULTS_DIR=$OUTDIR/devices0 "$TB" run $SEL --gpu $LABEL --quiet --devices 0 >"$OUTDIR/devices0.log" 2>&1
    echo "--devices 0: rc=$? ($(tail -n 1 "$OUTDIR/devices0.log"))"
    python3 scripts/csv_diff.py "$OUTDIR/plain/$LABEL/csv" "$OUTDIR/devices0/$LABEL/csv" | tee "$OUTDIR/diff-devices0.txt"
    exit "${PIPESTATUS[0]}"
    ;;
  slurm)
    if ! command -v slurmctld >/dev/null; then
      [ -d .slurm-debs ] || { echo "no Slurm here and no .slurm-debs carried (see this script's header)"; exit 3; }
      mkdir -p /tmp/slurm-prefix
      for f in .slurm-debs/*.deb; do dpkg -x "$f" /tmp/slurm-prefix || exit 3; done
      export SLURM_PREFIX=/tmp/slurm-prefix
      # can Debian 12's programs run on this system at all (its C library)?
      if ! /tmp/slurm-prefix/usr/sbin/munged --version >"$OUTDIR/munged-version.txt" 2>&1; then
        echo "Debian's munged does not run here:"; cat "$OUTDIR/munged-version.txt"; exit 3
      fi
    fi
    cluster=$OUTDIR/cluster
    trap 'scripts/slurm_local.sh stop "$cluster" >/dev/null 2>&1' EXIT
    SLURM_LOCAL_CPUS=1 timeout 120 scripts/slurm_local.sh start "$cluster" 0 || { echo "the one-node cluster did not start"; exit 3; }
    . "$cluster/env.sh"
    plain "$OUTDIR/plain" "$OUTDIR/plain.log"
    res=$OUTDIR/sharded
    # shellcheck disable=SC2086
    TILEBENCH_RESULTS_DIR=$res timeout 120 "$TB" slurm $SEL --gpu $LABEL --shards "$SHARDS" --name h200 --gres none \
      --time 60 | tee "$OUTDIR/submit.log"
    ids=$(sed -n 's/^follow: *squeue -j \([0-9,]*\).*/\1/p' "$OUTDIR/submit.log")
    [ -n "$ids" ] || { echo "nothing submitted"; exit 1; }
    t0=$(date +%s)
    while [ -n "$(timeout 10 squeue -h -j "$ids" 2>/dev/null)" ]; do
      [ $(( $(date +%s) - t0 )) -lt "$WAIT_S" ] || { echo "jobs $ids still queued after $WAIT_S s:"; squeue; exit 1; }
      sleep 2
    done
    echo "array and merge ended in $(( $(date +%s) - t0 )) s"
    cp -r "$res/$LABEL/slurm/h200/logs" "$OUTDIR/slurm-logs" 2>/dev/null
    tail -n 3 "$OUTDIR"/slurm-logs/merge-*.out
    python3 scripts/csv_diff.py "$OUTDIR/plain/$LABEL/csv" "$res/$LABEL/csv" | tee "$OUTDIR/diff-slurm.txt"
    exit "${PIPESTATUS[0]}"
    ;;
  *) echo "unknown stage '$STAGE' (devices0, slurm)"; exit 2 ;;
esac
