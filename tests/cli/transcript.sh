#!/usr/bin/env bash
# transcript.sh: the real binary, driven as a user would, output matched line by line against
# patterns (numbers that vary are patterns). Needs no GPU.
set -u
TB=${TILEBENCH:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
# check NAME WANT_STATUS PATTERN... -- CMD...: each pattern must match some line of the output.
check() {
  local name=$1 want=$2; shift 2
  local pats=()
  while [ "$1" != "--" ]; do pats+=("$1"); shift; done
  shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  local ok=1
  [ "$rc" -eq "$want" ] || ok=0
  for p in "${pats[@]}"; do grep -qE -- "$p" <<<"$out" || { ok=0; echo "  missing: $p"; }; done
  if [ $ok = 1 ]; then echo "ok   $name"; else echo "FAIL $name (rc=$rc, want $want):"; echo "$out" | sed 's/^/    /'; fail=1; fi
}

check "--version" 0 '^tilebench [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]{12}(-dirty)?, Lua 5\.4\)$' -- "$TB" --version
check "--help lists the commands" 0 '^usage: tilebench <command>' '^  run +run operators' '^  peaks ' '^  compare ' -- "$TB" --help
check "no arguments: usage, status 2" 2 '^usage: tilebench' -- "$TB"
check "unknown command" 2 "unknown command 'frobnicate'" -- "$TB" frobnicate
check "list" 0 '^operator +category' '^vector_add +Point-wise +fp16,bf16,fp32,int8 +80 +cuda' \
  '^matmul_fp32_fp16_fp8 +MatMul/Attn +fp32,fp16,fp8_e4m3 +60 +lib,cuda' -- "$TB" list
check "list --category" 0 '^softmax +Reduction/Norm' -- "$TB" list --category Reduction/Norm
check "list, unknown category" 1 "no operator of category 'Stencil'" -- "$TB" list --category Stencil
check "show vector_add" 0 '^vector_add \(Point-wise\)' 'flops: n$' 'bytes: n \* dtype_size \* 3$' \
  '^    fp16 +20 cases  first: n=1048576  last: n=20971520' '^  total: 80 cases per mode$' \
  '^    cuda +default \{BLOCK=128,UNROLL=0,WAVES=0\}, 32 autotune candidates  .*UNROLL 0: the family.s rule' -- "$TB" show vector_add
check "show rmsnorm: the essential byte formula and why it differs" 0 'bytes: n \* dtype_size \* 3$' \
  '^  essential bytes: \(2 \* n \+ K\) \* dtype_size  \(rho; TileBench.s bytes above give rho_tilebench\)$' \
  '^    differs: x read once, y written once, the weight read once; TileBench.s formula counts x twice' -- "$TB" show rmsnorm
check "show vector_add: the formulas agree" 0 '^  essential bytes: the same \(rho and rho_tilebench agree\)$' -- "$TB" show vector_add
check "show, unknown operator" 1 "unknown operator 'vector_sub' \(known: .*vector_add" -- "$TB" show vector_sub
check "run --dry-run" 0 '^vector_add \(Point-wise\): 2 cases, implementations cuda' 'default +fp32 +#20 +n=20971520' '^2 work items' -- "$TB" run --operator vector_add --dtype fp32 --cases ends --dry-run
check "run, dtype the operator lacks" 2 "none of the selected operators has dtype int8" -- "$TB" run --operator softmax --dtype int8 --dry-run

# A heredoc script using the tb modules that need no GPU.
cat > "$tmp/s.lua" <<'LUA'
local yaml = require("tb.yaml")
local expr = require("tilebench.expr")
local doc = yaml.load("grid: {n: {expr: '[1048576 * i for i in range(1, 4)]'}}\ndtype: [fp16, bf16]\n", "inline")
local ns = expr.eval(doc.grid.n.expr, {})
print(#ns, ns[3], math.type(ns[3]), table.concat(doc.dtype, ","))
print(expr.eval("M * N * dtype_size * 3 // 2", { M = 4096, N = 1024, dtype_size = 2 }))
local ok, err = pcall(yaml.load, "a: [1, 2\nb: 3\n", "broken.yaml")
print(ok, err)
print(select(2, pcall(require("tb.tensor").empty, { 4 }, "fp12")))
print(arg[1], select("#", ...))
LUA
check "script with tb modules" 0 '^3	3145728	integer	fp16,bf16$' '^12582912$' \
  '^false	broken\.yaml:[0-9]+:[0-9]+: ' "invalid dtype 'fp12'" '^hello	2$' -- "$TB" script "$tmp/s.lua" hello world
check "script, missing file" 1 "cannot open $tmp/none.lua" -- "$TB" script "$tmp/none.lua"
check "script, error with traceback" 1 'boom' 'stack traceback' -- "$TB" script <(echo 'local function f() error("boom") end f()')
exit $fail
