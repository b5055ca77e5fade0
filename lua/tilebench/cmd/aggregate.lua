-- cmd/aggregate.lua: `tilebench aggregate --gpu L [--mode M] [--csv-dir D] [--output DIR]`:
-- the summary of a run's CSVs (or TileBench's) as markdown on stdout plus markdown and CSV files.
local options = require("tilebench.options")
local M = {}

local spec = {
  {name = "gpu", type = "label", metavar = "LABEL", desc = "read results/<LABEL>/csv and write results/<LABEL>/aggregate"},
  {name = "mode", type = "string", choices = {"default", "autotune"}, desc = "only this mode (default: every mode found)"},
  {name = "csv-dir", type = "string", metavar = "DIR", desc = "read the CSVs of DIR instead (e.g. /work/shared/anchors/tilebench-GH200)"},
  {name = "baseline", type = "string", metavar = "IMPL", desc = "speedups against IMPL (default: each CSV's baseline)"},
  {name = "output", type = "string", metavar = "DIR", desc = "write summary.md and the CSVs here (default results/<LABEL>/aggregate)"},
  {name = "quiet", type = "flag", desc = "do not print the markdown"},
}

M.summary = "summarise results: geomeans, speedups, categories, wins, rho share, slow/failed cases"
M.usage = "usage: tilebench aggregate --gpu LABEL [--mode M] [--csv-dir DIR] [--output DIR]\n\n" ..
  options.help(spec) .. "\n\n" ..
  "Writes summary.md, suite.csv, categories.csv, operators.csv, per_dtype.csv and problems.csv.\n" ..
  "With --csv-dir and no --gpu or --output, prints the markdown only. See docs/REPORTS.md.\n"

function M.results_root()
  local env = os.getenv("TILEBENCH_RESULTS_DIR")
  return (env and env ~= "") and env or "results"
end

-- Shared with report: which CSVs to read and where to write.
function M.locate(opts, command)
  local csv_dir = opts["csv-dir"]
  if not csv_dir then
    if not opts.gpu then options.usage_error("%s: give --gpu LABEL or --csv-dir DIR (see 'tilebench %s --help')", command, command) end
    csv_dir = ("%s/%s/csv"):format(M.results_root(), opts.gpu)
  end
  return csv_dir
end

function M.run(args)
  local opts, positional = options.parse(args, spec, "aggregate")
  if #positional > 0 then options.usage_error("aggregate: unexpected argument '%s'", positional[1]) end
  local csv_dir = M.locate(opts, "aggregate")
  local resultset = require("tilebench.resultset")
  local aggregate = require("tilebench.aggregate")
  local tables = resultset.load(csv_dir, {mode = opts.mode, baseline = opts.baseline})
  if #tables == 0 then
    error(("no results in %s%s"):format(csv_dir, opts.mode and (" for mode " .. opts.mode) or ""), 0)
  end
  local r = aggregate.compute(tables)
  local title = ("Aggregate: %s"):format(opts.gpu or csv_dir)
  local out = opts.output or (opts.gpu and ("%s/%s/aggregate"):format(M.results_root(), opts.gpu))
  local md
  if out then
    local written
    written, md = aggregate.write(r, out, title)
    io.stderr:write(("wrote %s\n"):format(table.concat(written, ", ")))
  else
    md = aggregate.markdown(r, title)
  end
  if not opts.quiet then io.write(md) end
  return 0
end

return M
