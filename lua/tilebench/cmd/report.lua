-- cmd/report.lua: `tilebench report --gpu L [--output DIR] [--csv-dir D] [--with-anchors DIR]`:
-- one self-contained HTML page (inline CSS and SVG, no scripts) with the run's charts and tables.
local options = require("tilebench.options")
local M = {}

local spec = {
  {name = "gpu", type = "label", metavar = "LABEL", desc = "read results/<LABEL>/ (csv/, runs/*/raw/) and peaks/<LABEL>.json"},
  {name = "output", type = "string", metavar = "DIR", desc = "write DIR/report.html (default results/<LABEL>/report)"},
  {name = "csv-dir", type = "string", metavar = "DIR", desc = "read the CSVs of DIR instead of results/<LABEL>/csv"},
  {name = "runs", type = "string", metavar = "DIR", desc = "raw run JSON for work (flops, bytes) (default results/<LABEL>/runs)"},
  {name = "with-anchors", type = "string", metavar = "DIR", desc = "set these CSVs (e.g. TileBench's) beside ours"},
  {name = "peaks", type = "string", metavar = "FILE", desc = "ceilings from FILE (default peaks/<LABEL>.json)"},
  {name = "mode", type = "string", choices = {"default", "autotune"}, desc = "only this mode"},
  {name = "baseline", type = "string", metavar = "IMPL", desc = "speedups against IMPL (default: each CSV's baseline)"},
}

M.summary = "write one self-contained HTML report with SVG charts"
M.usage = "usage: tilebench report --gpu LABEL [--output DIR] [--csv-dir DIR] [--with-anchors DIR]\n\n" ..
  options.help(spec) .. "\n\nSee docs/REPORTS.md for what each chart shows.\n"

local function raw_tables(runs_dir)
  local lfs = require("lfs")
  if not runs_dir or lfs.attributes(runs_dir, "mode") ~= "directory" then return {} end
  local resultset = require("tilebench.resultset")
  local ids = {}
  for e in lfs.dir(runs_dir) do
    if e:sub(1, 1) ~= "." and lfs.attributes(runs_dir .. "/" .. e .. "/raw", "mode") == "directory" then ids[#ids + 1] = e end
  end
  table.sort(ids)
  local out = {}
  for _, id in ipairs(ids) do
    local ok, tables = pcall(resultset.load, runs_dir .. "/" .. id)
    if ok then
      for _, t in ipairs(tables) do out[#out + 1] = t end
    else
      io.stderr:write(("tilebench: report: skipping run %s: %s\n"):format(id, tostring(tables)))
    end
  end
  return out
end

function M.run(args)
  local opts, positional = options.parse(args, spec, "report")
  if #positional > 0 then options.usage_error("report: unexpected argument '%s'", positional[1]) end
  local agg = require("tilebench.cmd.aggregate")
  local csv_dir = agg.locate(opts, "report")
  local resultset = require("tilebench.resultset")
  local report = require("tilebench.report")
  local tables = resultset.load(csv_dir, {mode = opts.mode, baseline = opts.baseline})
  if #tables == 0 then error(("no results in %s"):format(csv_dir), 0) end
  local anchors
  if opts["with-anchors"] then
    local dir = opts["with-anchors"]:gsub("/+$", "")
    anchors = {tables = resultset.load(dir, {mode = opts.mode}), source = dir,
               label = dir:match("([^/]+)$"):gsub("^tilebench%-", "")}
  end
  local runs = opts.runs or (opts.gpu and ("%s/%s/runs"):format(agg.results_root(), opts.gpu))
  -- without --gpu, name the report after the results: results/<label>/csv -> <label>
  local trimmed = csv_dir:gsub("/+$", "")
  local label = opts.gpu or trimmed:match("([^/]+)/csv$") or trimmed:match("([^/]+)$")
  local html, count = report.build{tables = tables, label = label, source = csv_dir, anchors = anchors,
    raw = raw_tables(runs), peaks = report.load_peaks(opts.gpu, opts.peaks)}
  local out = opts.output or (opts.gpu and ("%s/%s/report"):format(agg.results_root(), opts.gpu))
  if not out then options.usage_error("report: give --output DIR (or --gpu LABEL)") end
  require("tilebench.aggregate").mkdir_p(out)
  local path = out .. "/report.html"
  require("tilebench.util").write_atomic(path, html)
  io.write(("wrote %s (%d operators, %d charts, %d series, %d KiB)\n"):format(path, count.operators, count.charts,
    count.series, math.floor(#html / 1024 + 0.5)))
  return 0
end

return M
