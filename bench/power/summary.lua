-- bench/power/summary.lua RUNS_DIR RUNS_TXT: the table of bench/power/order.sh. RUNS_TXT has one
-- line per process, "<operator> <dtype> <order> <rep> <run id> rc=N <seconds>s", order being the
-- --impl list it ran (lib,cuda | cuda,lib | lib | cuda). For each case: per implementation and
-- order the per-process medians (ms), then over every process the median, the spread
-- (max - min) / median, the median SM clock and share of samples under a cap; E_lib = lib / cuda
-- time of each process that ran both, with its spread. The "heavy" column counts the processes
-- whose measurement was found heavy (stats.exposure: capped_exposure applied) and the highest
-- instantaneous power they read: a process not found heavy read a cool GPU (docs/MEASUREMENT.md,
-- "Finding a load heavy in time"). "GPU s" is the median GPU time a process's row spent on its
-- preload and exposure (preloaded_s + exposed_s: with exposure_scope = "case" the rows of a process
-- share one of each, so a row's figure is its share), "scope" the exposure's scope that applied and
-- what ended the preload (preload_by). Markdown on stdout.
local journal = require("tilebench.journal")
local util = require("tilebench.util")

local runs_dir, runs_txt = arg[1], arg[2]
if not runs_dir or not runs_txt then
  io.stderr:write("usage: summary.lua RUNS_DIR RUNS_TXT\n")
  os.exit(2)
end

local function median(x)
  local s = {}
  for i, v in ipairs(x) do s[i] = v end
  table.sort(s)
  local n = #s
  if n == 0 then return nil end
  return n % 2 == 1 and s[(n + 1) // 2] or 0.5 * (s[n // 2] + s[n // 2 + 1])
end

local function spread(x)
  local m = median(x)
  if not m or m == 0 then return nil end
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(x) do lo, hi = math.min(lo, v), math.max(hi, v) end
  return (hi - lo) / m
end

local function pct(v) return v and string.format("%.2f %%", 100 * v) or "-" end
local function num(v, f) return v and string.format(f or "%.4f", v) or "-" end

-- case key -> {order -> {process rows by impl}}
local cases, case_order = {}, {}
for line in io.lines(runs_txt) do
  local op, dtype, order, rep, id = line:match("^(%S+) (%S+) (%S+) (%d+) (%S*) rc=")
  if op and id ~= "" and util.is_name(id) then
    local _, rows, problems = journal.read(runs_dir .. "/" .. id .. "/journal.jsonl")
    if not rows then io.stderr:write(tostring(problems and problems[1]), "\n") end
    local key = op .. " " .. dtype
    if not cases[key] then cases[key] = { procs = {} }; case_order[#case_order + 1] = key end
    local proc = { order = order, rep = tonumber(rep), id = id, impl = {} }
    for _, r in ipairs(rows and journal.latest(rows) or {}) do
      if r.impl and r.status == "ok" and r.ms then
        proc.impl[r.impl] = r
        proc.case = proc.case or r.case_id
      elseif r.impl then
        io.stderr:write(string.format("%s %s: %s %s (%s)\n", id, r.impl, tostring(r.status), tostring(r.reason), key))
      end
    end
    table.insert(cases[key].procs, proc)
  end
end

local orders = { "lib,cuda", "cuda,lib", "lib", "cuda" }
for _, key in ipairs(case_order) do
  local c = cases[key]
  local case_id
  for _, p in ipairs(c.procs) do case_id = case_id or p.case end
  io.write(string.format("## %s, %s\n\n", key, case_id or "?"))
  io.write("| implementation | order | per-process median ms | SM clock MHz | capped | heavy | max instant W | GPU s "
    .. "| conditions | scope |\n|---|---|---|---|---|---|---|---|---|---|\n")
  local all = {}
  for _, impl in ipairs({ "lib", "cuda" }) do
    all[impl] = { ms = {}, clk = {}, cap = {} }
    for _, order in ipairs(orders) do
      local ms, clk, cap, cond, heavy, now, gpu_s, scopes = {}, {}, {}, nil, 0, {}, {}, {}
      for _, p in ipairs(c.procs) do
        local r = p.order == order and p.impl[impl]
        if r then
          ms[#ms + 1] = r.ms
          local st = type(r.stats) == "table" and r.stats or {}
          if st.sm_clock_mhz then clk[#clk + 1] = st.sm_clock_mhz end
          if st.cap_fraction then cap[#cap + 1] = st.cap_fraction end
          cond = st.conditions or cond
          if st.exposure then heavy = heavy + 1 end
          if st.power_now_max_w then now[#now + 1] = st.power_now_max_w end
          if st.exposure then gpu_s[#gpu_s + 1] = (st.preloaded_s or 0) + (st.exposed_s or 0) end
          local sc = (st.exposure_scope or "load") .. "/" .. tostring(st.preload_by or "-")
          if not scopes[sc] then scopes[sc] = true; scopes[#scopes + 1] = sc end
          table.insert(all[impl].ms, r.ms)
          if st.sm_clock_mhz then table.insert(all[impl].clk, st.sm_clock_mhz) end
          if st.cap_fraction then table.insert(all[impl].cap, st.cap_fraction) end
        end
      end
      if #ms > 0 then
        local list = {}
        for i, v in ipairs(ms) do list[i] = string.format("%.4f", v) end
        io.write(string.format("| %s | %s | %s | %s | %s | %d/%d | %s | %s | %s | %s |\n", impl, order,
          table.concat(list, " "), num(median(clk), "%.0f"), num(median(cap), "%.2f"), heavy, #ms,
          num(median(now), "%.0f"), num(median(gpu_s), "%.2f"), cond or "-", table.concat(scopes, " ")))
      end
    end
  end
  io.write("\n| implementation | processes | median ms | spread | median SM clock MHz | capped |\n|---|---|---|---|---|---|\n")
  for _, impl in ipairs({ "lib", "cuda" }) do
    local a = all[impl]
    io.write(string.format("| %s | %d | %s | %s | %s | %s |\n", impl, #a.ms, num(median(a.ms)), pct(spread(a.ms)),
      num(median(a.clk), "%.0f"), num(median(a.cap), "%.2f")))
  end
  local elib = {}
  for _, p in ipairs(c.procs) do
    if p.impl.lib and p.impl.cuda then elib[#elib + 1] = p.impl.lib.ms / p.impl.cuda.ms end
  end
  io.write(string.format("\nE_lib (lib / cuda, %d processes that ran both): median %s, spread %s\n\n", #elib,
    num(median(elib)), pct(spread(elib))))
end
