#!/usr/bin/env bash
# carry-cache.sh: the compile cache a GPU call needs, small enough for the device tool's 64 MiB
# carry beside the build. scripts/warm-cache.sh packs the whole cache (every default, the last
# cases' autotune candidates, the CPU check, the Triton defaults: 56 MB at 45 operators), which
# no longer fits beside a 23 MB build. This packs only the entries that three compile steps open:
# every case's default configurations (`compile --operator all`), the CPU check's kernels
# (`operators_cpu_check.lua --compile-only`) and the Triton defaults; autotune candidates are left
# to the GPU machine's own compile (16 processes there). Compiles what is missing first.
# The entries are found by tracing the files the steps open (strace; apt-get install strace).
#   bash scripts/carry-cache.sh [CACHE_DIR] [TARBALL]
# defaults: build/run-cache and build/nvrtc-cache.tgz, which scripts/gpu-session.sh unpacks.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${1:-build/run-cache}
TGZ=${2:-build/nvrtc-cache.tgz}
TB=${TILEBENCH:-./build/tilebench}
command -v strace >/dev/null || { echo "carry-cache.sh needs strace (apt-get install strace)"; exit 2; }
case $CACHE in /*) ;; *) CACHE=$PWD/$CACHE ;; esac
case $TGZ in /*) ;; *) TGZ=$PWD/$TGZ ;; esac
export TILEBENCH_CACHE_DIR=$CACHE
mkdir -p "$CACHE"
OPS=$(ls operators | grep -v '^_' | tr '\n' ',' | sed 's/,$//')
JOBS=${JOBS:-$(nproc)}
trace=$(mktemp -d)
trap 'rm -rf "$trace"' EXIT
st() { strace -f -qq -e trace=openat,open,stat,newfstatat,access -o "$trace/$1" "${@:2}"; }
st a "$TB" compile --operator "$OPS" --jobs "$JOBS" --quiet
st b "$TB" script tests/gpu/operators_cpu_check.lua --compile-only | tail -n 1
st c "$TB" compile --operator "$OPS" --impl triton --jobs "$JOBS" --quiet
# cache entries are named by their key (hex) plus a suffix; take every file of each key opened
cat "$trace"/a "$trace"/b "$trace"/c | grep -o "${CACHE##*/}/[0-9a-f]\{16,\}" | sed "s,^${CACHE##*/}/,," | sort -u > "$trace/keys"
(cd "$CACHE" && while read -r k; do ls "$k"* 2>/dev/null; done < "$trace/keys" | sort -u) > "$trace/files"
find "$CACHE" -name '.*.tmp-*' -delete
tar czf "$TGZ" -C "$CACHE" -T "$trace/files"
echo "packed $(wc -l < "$trace/files") of $(find "$CACHE" -type f | wc -l) cache files into $TGZ ($(du -h "$TGZ" | cut -f1))"
