#!/usr/bin/env bash
# GPU: `tilebench eval` on the candidate fixtures (tests/fixtures/eval): an honest vector_add (cuda
# and triton) is ok with a time, rho, a torch speedup where torch imports, and every check ok or
# skipped with a reason; a wrong one is wrong with its first mismatches; the dishonest ones are
# each refused by the check that catches them: cached_output by reverify, memoized by
# fresh_inputs, mutates_input by inputs_unchanged. (side_stream and torch_delegating are refused
# without a GPU: tests/cli/eval.sh.) Prints each verdict's line for the note.
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
fx="${TILEBENCH_HOME:?}/tests/fixtures/eval"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"v": v}))' "$@"; }
# expect FILE EXIT STATUS [CHECK-THAT-REFUSES] [extra eval args...]
expect() {
  local f=$1 want_rc=$2 want=$3 check=$4; shift 4
  "$TB" eval --operator vector_add --impl "$fx/$f" --json "$@" > "$work/$f.json" 2> "$work/$f.err"
  local rc=$?
  local got
  got=$(field "$work/$f.json" 'v["status"]' 2>/dev/null)
  echo "$f: exit $rc, $got: $(field "$work/$f.json" '[(c["dtype"], c["status"], c.get("ms"), c.get("rho"), c.get("speedup"), c.get("reason")) for c in v["cases"]]' 2>/dev/null)"
  if [ "$rc" != "$want_rc" ] || [ "$got" != "$want" ]; then
    echo "FAIL $f: want exit $want_rc status $want"; cat "$work/$f.json" "$work/$f.err"; fail=1; return
  fi
  if [ -n "$check" ]; then
    local refused
    refused=$(field "$work/$f.json" '[k["name"] for c in v["cases"] for k in (c.get("checks") or []) if k["status"] == "refused"]')
    [ "$refused" = "['$check']" ] || { echo "FAIL $f: refused by $refused, want $check"; fail=1; }
  fi
}
expect honest.cu 0 ok "" --cases first
field "$work/honest.cu.json" 'all(k["status"] in ("ok", "skipped") for c in v["cases"] for k in c["checks"])' | grep -q True \
  || { echo "FAIL honest: a check not ok"; fail=1; }
field "$work/honest.cu.json" 'all(c["ms"] > 0 and len(c["checks"]) == 4 for c in v["cases"])' | grep -q True \
  || { echo "FAIL honest: no time or checks"; fail=1; }
expect honest.cu 0 ok ""               # the representative (largest) case of every dtype
expect wrong.cu 3 wrong "" --dtype fp32 --cases first
field "$work/wrong.cu.json" 'len(v["cases"][0]["mismatches"]) > 0' | grep -q True || { echo "FAIL wrong: no mismatches"; fail=1; }
expect cached_output.cu 5 refused reverify --dtype fp32 --cases first
expect memoized.cu 5 refused fresh_inputs --dtype fp32 --cases first
expect mutates_input.cu 5 refused inputs_unchanged --dtype fp32 --cases first
if "$TB" script <(echo 'os.exit(require("tilebench.triton").available() and 0 or 1)') 2>/dev/null; then
  expect honest_triton.py 0 ok "" --cases first
fi
[ $fail -eq 0 ] && echo ok
exit $fail
