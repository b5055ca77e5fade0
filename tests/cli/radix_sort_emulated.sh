#!/usr/bin/env bash
# radix_sort's `cuda` kernels (operators/radix_sort/radix_sort.cu) executed without a GPU: the
# .cu turned into C++ over a CPU emulation of the CUDA it uses (tests/fixtures/radix_emu: one
# thread a CUDA thread, all blocks of a launch at once), its plan run against std::sort. Tiles of
# 256 x 1 keys (lengths around a tile, five tiles and a tail: look-backs past aggregates and waits
# on words still zero) and the default 384 x 20 x 4 (three tiles, fewer sorts: each one takes
# seconds to emulate). Skips (77) without a C++20 compiler or python3.
set -u
FIX="${TILEBENCH_HOME:?}/tests/fixtures/radix_emu"
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null && command -v python3 >/dev/null || { echo "no $CXX or python3: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$FIX/transform.py" "$TILEBENCH_HOME/operators/radix_sort/radix_sort.cu" "$work/radix_emu.inc" || exit 1
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' > "$work/probe.cpp"
"$CXX" -std=c++20 -pthread "$work/probe.cpp" -o "$work/probe" 2>/dev/null || { echo "$CXX has no C++20 <barrier>: skipped"; exit 77; }
rc=0
for cfg in "256 1 4 5 all" "384 20 4 2 quick"; do
  set -- $cfg
  "$CXX" -std=c++20 -O1 -pthread -I"$FIX" -I"$work" -DBLOCK=$1 -DITEMS=$2 -DLB=$3 "$FIX/main.cpp" \
    -o "$work/emu_$1_$2_$3" || { echo "FAIL: compiling the emulation ($cfg)"; exit 1; }
  timeout 300 "$work/emu_$1_$2_$3" "$4" "$5" || { echo "FAIL: the emulation ($cfg) failed or ran past 300 s"; rc=1; }
done
exit $rc
