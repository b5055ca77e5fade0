#!/usr/bin/env bash
# examples_no_gpu.sh: what can be checked of the GPU examples without a GPU: the campaign
# examples load and validate, their metrics compute on a synthetic row, plain_api.lua parses,
# every example says on its first line what it shows, and examples/new_operator loads as an
# operator and its kernels compile with NVRTC (tests/compile_operator.lua). Running them is the
# H200's job (docs/REPORTS.md lists the commands).
set -u
: "${TILEBENCH:?}" "${TILEBENCH_HOME:?}"
fail() { echo "FAIL: $*"; exit 1; }
cd "$TILEBENCH_HOME"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in examples/*.lua examples/*.sh examples/new_operator/operator.lua examples/new_operator/config.yaml examples/new_operator/kernel.cu; do
  first=$(head -1 "$f")
  [ "${f##*.}" = sh ] && first=$(sed -n 2p "$f")
  grep -qE '^(--|#|//) .{20,}' <<<"$first" || fail "$f: the first line must say what it shows (got: $first)"
done

cat > "$tmp/check.lua" <<'LUA'
local campaign = require("tilebench.campaign")
local execute = require("tilebench.execute")
local c = campaign.load("examples/custom_metric.lua")
local row = {ms = 0.5, flops = 1e9, stats = {median = 0.5, q1 = 0.49, q3 = 0.52}}
execute.apply_metrics(row, c.metrics)
assert(math.abs(row.extra.achieved_tflops - 2.0) < 1e-12, "achieved_tflops")
assert(math.abs(row.extra.iqr_spread - 0.06) < 1e-12, "iqr_spread")
local failed = {status = "failed"}
execute.apply_metrics(failed, c.metrics)
assert(failed.extra.achieved_tflops == nil and failed.extra.iqr_spread == nil, "metrics of a failed row are nil")
local g = campaign.load("examples/category_gate.lua")
assert(g.gate.rho == 0.5 and g.gate.elib == 0.8 and g.gate_exit == true, "category_gate's gate")
assert(g.operators[1] == "Reduction/Norm", "category_gate selects a category")
assert(loadfile("examples/plain_api.lua"), "plain_api.lua does not parse")
local src = io.open("examples/plain_api.lua"):read("a"):match("local source = %[%[(.-)%]%]")
local built, log = require("tb.kernel").compile(src, {name = "plain_api.cu", arch = "sm_90", load = false})
assert(built, "plain_api.lua's kernels do not compile: " .. tostring(log))
local op = require("tilebench.operator").load("new_operator")
assert(op.category == "Point-wise" and #op.cases == 16, "new_operator: category and 16 cases")
assert(op.baseline == "naive", "new_operator baseline")
local flops, bytes = require("tilebench.config").work(op.config, op.cases[1])
assert(flops == 2 * 4194304 and bytes == 3 * 4194304 * 2, "new_operator work formulas")
print("examples load: ok")
LUA
TILEBENCH_OPERATOR_PATH=$TILEBENCH_HOME/examples "$TILEBENCH" script "$tmp/check.lua" || fail "example checks"
TILEBENCH_OPERATOR_PATH=$TILEBENCH_HOME/examples "$TILEBENCH" script tests/compile_operator.lua new_operator --all \
  || fail "examples/new_operator does not compile"
echo "examples without a GPU: ok"
