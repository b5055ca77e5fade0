#!/usr/bin/env bash
# bench/compare/aa.sh's planted operators load and compile without a GPU: the overlay of
# vector_add (operator.lua wrapping the real one, plant_spin.cu beside links to its sources) is
# on the search path, `tilebench compile` builds its plans through the wrapper, and the spin
# kernel compiles beside the real one.
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
AA_OPS=vector_add TB=$TILEBENCH bash "$TILEBENCH_HOME/bench/compare/aa.sh" "$work" overlay "$work/ov" >"$work/ov.out" 2>&1
check "the overlay is written" test -f "$work/ov/vector_add/operator.lua" -a -L "$work/ov/vector_add/vector_add.cu"
mkdir -p "$work/ref/raw"
echo '{"operator": "vector_add", "rows": [{"mode": "default", "dtype": "fp32", "case_id": "n=1048576", "impl": "cuda", "ms": 0.5}]}' \
  >"$work/ref/raw/vector_add.json"
out=$(TILEBENCH_OPERATOR_PATH="$work/ov" TB_PLANT_REF="$work/ref" TILEBENCH_CACHE_DIR="$work/cache" \
  "$TILEBENCH" compile --operator vector_add --cases first --dtype fp32 --jobs 1 2>&1); rc=$?
check "compile through the wrapper exits 0 [rc=$rc]" test $rc -eq 0
check "  the real kernels and the spin compile, none fails" grep -qE 'compiled [0-9]+ plans \(3 kernels: 3 compiled, 0 cached\).* 0 failed' <<<"$out"
[ $fail -eq 0 ] || { cat "$work/ov.out"; echo "$out"; }
exit $fail
