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
}

M.summary = "compare two runs or CSV sets case by case: FAST, SLOW or SAME"
M.usage = "usage: tilebench compare A B [--mode M] [--map A=B] [--all] [--csv FILE]\n\n" ..
  "A and B: a run dir (results/<gpu>/runs/<id>), results/<gpu>, a CSV dir (ours or TileBench's)\n" ..
  "or one CSV/raw JSON file. Tables match by operator and mode (from the file name), cases by\n" ..
  "params and dtype, implementations by name. See docs/REPORTS.md for the rules.\n\n" ..
  options.help(spec) .. "\n"

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
  local res = compare.compare(ta, tb, {map = map, alpha = opts.alpha})
  io.write(compare.format(res, {all = opts.all,
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
