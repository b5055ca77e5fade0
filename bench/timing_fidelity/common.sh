# common.sh: sourced by run.sh, overhead.sh and diag.sh (set OUT first). Builds kernels.cu twice
# into a temporary folder $W, removed on exit: $W/fid.cubin (loaded by tilebench and do_bench.py)
# and $W/fid_cases (the program ncu profiles), and writes the case table to $W/cases.txt and
# $OUT/cases.txt. Sets TB, HERE, NVCC, W and step().
TB=${TILEBENCH:-./build/tilebench}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
step() { echo "== $(date +%T) $*"; }
ARCH=${TB_ARCH:-sm_90}
"$NVCC" -arch="$ARCH" -cubin -o "$W/fid.cubin" "$HERE/kernels.cu" || exit 1
"$NVCC" -arch="$ARCH" -O2 -o "$W/fid_cases" "$HERE/kernels.cu" || exit 1
"$W/fid_cases" --list > "$W/cases.txt" || exit 1
cp "$W/cases.txt" "$OUT/cases.txt"
