-- cmd/compare.lua: `tilebench compare A B`: two runs or CSVs case by case (FAST/SLOW/SAME for B
-- against A, decided with each side's noise) and a summary. Always exits 0 on a comparison.
local options = require("tilebench.options")
local M = {}

local spec = {
  {name = "mode", type = "string", choices = {"default", "autotune"}, desc = "only this mode"},
  {name = "map", type = "list", metavar = "A=B,...", desc = "pair implementation A of the first with B of the second (e.g. cuda=triton)"},
  {name = "all", type = "flag", desc = "list every case, not only FAST and SLOW ones"},
  {name = "csv", type = "string", metavar = "FILE", desc = "also write every case to FILE"},
  {name = "alpha", type = "number", default = 0.05, desc = "significance level of the Mann-Whitney U test"},
  {name = "noise", type = "string", metavar = "FILE", desc = "run-to-run noise file (default: peaks/noise/<gpu>.json where it exists)"},
  {name = "gpu", type = "label", metavar = "LABEL", desc = "the GPU whose noise file to use (default: from A's path, results/<gpu>/...)"},
  {name = "record-noise", type = "string", metavar = "FILE",
   desc = "A and B are two runs of the same build (A/A): write their run-to-run noise to FILE"},
}

M.summary = "compare two runs or CSV sets case by case: FAST, SLOW or SAME"
M.usage = "usage: tilebench compare A B [--mode M] [--map A=B] [--all] [--csv FILE] [--noise FILE | --gpu LABEL]\n" ..
  "                         [--record-noise FILE]\n\n" ..
  "A and B: a run dir (results/<gpu>/runs/<id>), results/<gpu>, a CSV dir (ours or TileBench's)\n" ..
  "or one CSV/raw JSON file. Tables match by operator and mode (from the file name), cases by\n" ..
  "params and dtype, implementations by name. A verdict needs a difference beyond both sides'\n" ..
  "noise, run-to-run spread included: peaks/noise/<gpu>.json (bench/compare/aa.sh records it)\n" ..
  "or a conservative default. See docs/REPORTS.md for the rules.\n\n" ..
  options.help(spec) .. "\n"

-- The GPU label of a results path: results/<gpu>/..., or <gpu>/runs/<id> (a run directory).
function M.gpu_of(path)
  path = tostring(path):gsub("/+$", "")
  local label = path:match("([^/]+)/runs/[^/]+$") or path:match("results/([^/]+)")
  if label and require("tilebench.util").is_name(label) then return label end
  return nil
end

function M.run(args)
  local opts, positional = options.parse(args, spec, "compare")
  if #positional ~= 2 then
    options.usage_error("compare: expected two results (A B), got %d (see 'tilebench compare --help')", #positional)
  end
  if not (opts.alpha > 0 and opts.alpha < 1) then options.usage_error("option --alpha must be in (0, 1)") end
  local map = {}
  for _, pair in ipairs(opts.map or {}) do
    local a, b = pair:match("^([^=]+)=([^=]+)$")
    if not a then options.usage_error("option --map expects A=B pairs, got '%s'", pair) end
    map[a] = b
  end
  local resultset = require("tilebench.resultset")
  local compare = require("tilebench.compare")
  local ta, what_a = resultset.load(positional[1], {mode = opts.mode})
  local tb, what_b = resultset.load(positional[2], {mode = opts.mode})
  -- The run-to-run noise: --noise, else peaks/noise/<gpu>.json for --gpu or A's results folder.
  local noise, noise_label
  local label = opts.gpu or M.gpu_of(positional[1])
  if opts.noise then
    noise = compare.load_noise(opts.noise)
  elseif label then
    local path = require("tilebench.peaks").dir() .. "/noise/" .. label .. ".json"
    if require("lfs").attributes(path, "mode") == "file" then noise = compare.load_noise(path) end
  end
  if noise then
    noise_label = ("%s (%.2f %% per run over %d cases; by operator, mode, dtype and implementation)"):format(
      noise._path, 100 * noise.sigma, noise.cases or 0)
  elseif label then
    noise_label = ("none recorded for %s: %.1f %% per run (conservative default; bench/compare/aa.sh measures it)"):format(
      label, 100 * compare.DEFAULT_RUN_NOISE)
  end
  local res = compare.compare(ta, tb, {map = map, alpha = opts.alpha, noise = noise})
  if opts["record-noise"] then
    local n = compare.noise_from_pair(res, {gpu = label, measured_at = os.date("!%Y-%m-%dT%H:%M:%SZ"),
      runs = {positional[1], positional[2]},
      method = "tilebench compare A B --record-noise: A and B two runs of the same build (A/A); sigma = " ..
               "root mean square of log(t_B / t_A) / sqrt(2), per group and over every case"})
    require("tilebench.util").write_atomic(opts["record-noise"], require("tilebench.json").encode(n) .. "\n")
    io.stderr:write(("wrote %s: %.2f %% per run over %d cases (largest |log ratio| %.2f %%)\n"):format(
      opts["record-noise"], 100 * n.sigma, n.cases, 100 * n.max_abs_log_ratio))
  end
  io.write(compare.format(res, {all = opts.all, noise_label = noise_label,
    label_a = ("%s (%s, %d tables)"):format(positional[1], what_a, #ta),
    label_b = ("%s (%s, %d tables)"):format(positional[2], what_b, #tb)}))
  if opts.csv then
    local header, rows = compare.csv_rows(res)
    require("tilebench.csv").write(opts.csv, header, rows)
    io.stderr:write(("wrote %s\n"):format(opts.csv))
  end
  return 0
end

return M
