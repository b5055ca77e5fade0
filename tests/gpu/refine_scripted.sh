#!/usr/bin/env bash
# GPU: `tilebench refine` end to end on the device for vector_add and softmax in cuda and triton,
# with the scripted generator (tests/fixtures/refine/generator.sh) replaying three answers built
# from the operator's own source: 1 the source with a line that does not compile, 2 a stub with
# the same kernels (names and parameters from `tilebench task`'s declarations) whose body does
# nothing (wrong: the outputs stay poisoned), 3 the source itself (ok; frozen when its rho >= the
# stop rho, 0 here so the freeze rule ends the loop at 3). Prints each run's summary for the note.
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
fx="${TILEBENCH_HOME:?}/tests/fixtures/refine"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"v": v}))' "$@"; }
cat > "$work/answers.lua" <<'LUA'
-- answers.lua OP BACKEND DIR: writes DIR/1.txt (does not compile), 2.txt (a stub), 3.txt (the source)
local opname, backend, dir = arg[1], arg[2], arg[3]
local op = require("tilebench.operator").load(opname)
local cand, task = require("tilebench.candidate"), require("tilebench.task")
local spec = cand.base(op, backend)
local f = assert(io.open(require("tilebench.context").kernel_path(op.dir, spec.source)))
local src = f:read("a")
f:close()
local lang, names = backend == "triton" and "python" or "cuda", {}
for _, d in ipairs(require("tilebench.operator").dtypes(op)) do
  for _, l in ipairs(task.contract(op, backend, cand.representative(op, d)).launches) do
    if l.own then names[l.name] = true end
  end
end
local stub = backend == "triton" and { "import triton", "import triton.language as tl", "" }
  or { src:match('#include "tb_[%w_]+%.cuh"') or "", "" }
for name in pairs(names) do
  local decl = assert(task.declaration(src, backend, name))
  stub[#stub + 1] = backend == "triton" and (decl .. "\n    pass\n") or (decl .. " {}\n")
end
local function answer(i, text, tokens)
  local o = assert(io.open(dir .. "/" .. i .. ".txt", "w"))
  o:write("```", lang, "\n", text, "\n```\n", string.format('{"tokens": %d}\n', tokens))
  o:close()
end
answer(1, src .. "\nthis line does not compile\n", 1000)
answer(2, table.concat(stub, "\n"), 2000)
answer(3, src, 3000)
LUA
for ob in vector_add:cuda vector_add:triton softmax:cuda softmax:triton; do
  op=${ob%%:*} be=${ob##*:}
  mkdir -p "$work/$op-$be"
  "$TB" script "$work/answers.lua" "$op" "$be" "$work/$op-$be" || { echo "FAIL $ob: answers"; fail=1; continue; }
  TB_SCRIPT="$work/$op-$be" TB_CALLS="$work/$op-$be.calls" "$TB" refine --operator "$op" --backend "$be" \
    --generator "$fx/generator.sh" --iterations 4 --stop-rho 0 --run-dir "$work/run-$op-$be" > "$work/$op-$be.out" 2>&1
  rc=$?
  cat "$work/$op-$be.out"
  s="$work/run-$op-$be/summary.json"
  want="compile_error wrong ok "
  for d in $(field "$s" '" ".join(x["dtype"] for x in v["dtypes"])'); do
    got=$(for i in 01 02 03; do field "$work/run-$op-$be/$d/$i/iteration.json" 'v["status"]'; done | tr '\n' ' ')
    [ "$got" = "$want" ] || { echo "FAIL $ob $d: trajectory $got"; fail=1; }
    [ ! -e "$work/run-$op-$be/$d/04" ] || { echo "FAIL $ob $d: not frozen at 3"; fail=1; }
  done
  [ $rc -eq 0 ] || { echo "FAIL $ob: exit $rc"; fail=1; }
done
[ $fail -eq 0 ] && echo ok
exit $fail
