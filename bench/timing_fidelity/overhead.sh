#!/usr/bin/env bash
# overhead.sh: the fidelity sweep's overhead (wall time over GPU busy time, issue 3) under protocol
# variants, each in a fresh process: the default, eager launches (graph=false), no clock probes
# (clock_check=false), no eviction (flush=false). Per-case wall and busy times land in OUTDIR.
# usage (repo root, GPU machine): bash bench/timing_fidelity/overhead.sh OUTDIR
# VARIANTS="default clock_check=false ..." picks others; a variant may join options with '+'
# (graph=false+flush=false). A variant named twice runs twice, its second CSV suffixed _2.
set -uo pipefail
OUT=${1:?usage: overhead.sh OUTDIR}
. "$(dirname "$0")/common.sh"
declare -A seen
for v in ${VARIANTS:-default graph=false clock_check=false flush=false}; do
  name=${v//=/_}; name=${name//+/_}
  seen[$name]=$(( ${seen[$name]:-0} + 1 ))
  [ "${seen[$name]}" -gt 1 ] && name=${name}_${seen[$name]}
  opt=${v//+/ }
  [ "$v" = default ] && opt=
  echo "== $v"
  "$TB" script "$HERE/fidelity.lua" "$W/fid.cubin" "$W/cases.txt" "$OUT/overhead_$name.csv" sweep $opt 2>&1
done
