#!/usr/bin/env bash
# warm-cache.sh: compiles on the build machine (NVRTC, no GPU) every kernel a GPU session will
# need, and packs the cache for the trip: the default configurations of every case of every
# operator, every autotune candidate at the last case of each dtype, and the kernels of
# tests/gpu/operators_cpu_check.lua. A GPU machine then spends its time measuring, not compiling.
#   bash scripts/warm-cache.sh [CACHE_DIR] [TARBALL]
# defaults: build/run-cache and build/nvrtc-cache.tgz (a compressed cache fits the device tool's
# 64 MiB carry where the raw one does not). scripts/gpu-session.sh unpacks the tarball. Where the
# whole tarball no longer fits beside the build, scripts/carry-cache.sh packs the part a call needs.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${1:-build/run-cache}
TGZ=${2:-build/nvrtc-cache.tgz}
TB=${TILEBENCH:-./build/tilebench}
case $CACHE in /*) ;; *) CACHE=$PWD/$CACHE ;; esac
export TILEBENCH_CACHE_DIR=$CACHE
mkdir -p "$TILEBENCH_CACHE_DIR"
OPS=$(ls operators | grep -v '^_' | tr '\n' ',' | sed 's/,$//')
JOBS=${JOBS:-$(nproc)}
"$TB" compile --operator "$OPS" --jobs "$JOBS" --quiet
"$TB" compile --operator "$OPS" --autotune --cases last --jobs "$JOBS" --quiet
"$TB" script tests/gpu/operators_cpu_check.lua --compile-only
# The triton implementations' default configurations, where triton imports here (the same pinned
# version as on the GPU machine, or the cache keys differ and it compiles them itself).
printf '%s\n' 'local ok, v = require("tilebench.triton").available()' 'print(ok and "ok" or ("no: " .. tostring(v)))' \
  > "$CACHE/.triton-probe.lua"
if [ "$("$TB" script "$CACHE/.triton-probe.lua" 2>&1 | head -1)" = ok ]; then
  "$TB" compile --operator "$OPS" --impl triton --jobs "$JOBS" --quiet
else
  echo "triton does not import here: its kernels are left to the GPU machine"
fi
rm -f "$CACHE/.triton-probe.lua"
find "$TILEBENCH_CACHE_DIR" -name '.*.tmp-*' -delete  # temp files of atomic_write
tar czf "$TGZ" -C "$TILEBENCH_CACHE_DIR" .
echo "packed $(find "$TILEBENCH_CACHE_DIR" -type f | wc -l) cache files into $TGZ ($(du -h "$TGZ" | cut -f1))"
