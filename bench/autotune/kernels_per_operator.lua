-- kernels_per_operator.lua: how many kernels autotune mode over the whole grid compiles, per
-- operator, without compiling them (and, with --sample N, the time a sample of them takes).
--
--   build/tilebench script bench/autotune/kernels_per_operator.lua [--sample N] [--out FILE.md]
--                          [--tsv FILE] [--keys FILE] [--times TSV] [--calib F] [OP ...]
--
-- --tsv: the table's numbers, one line per operator; --keys: every distinct kernel, one line
-- each (operator, kind, implementation, per size or not, its identity), for comparing two trees;
-- --times TSV: the seconds per kernel of an earlier --tsv, for the projection without sampling.
--
-- Compiles: what the precompile phase compiles on 15 processes (precompile.assign deals the plans
-- out): a kernel once in every process that meets it, since processes that meet the same kernel
-- at about the same time both compile it (the disk cache has it only once one has finished).
--
-- It lists the precompile phase's own plans (lua/tilebench/precompile.lua: `units` of autotune
-- items for every case of every dtype, every implementation with a kernel source, the candidates
-- the search can try: valid ones, one per launch_key) and makes each plan in a compile-only
-- context whose ctx:kernel and ctx:triton record what they would compile instead of compiling it.
-- A kernel is identified as the compile caches identify it: NVRTC by (source path, defines,
-- options), Triton by (source, kernel, signature, constexprs, the integer arguments divisible by
-- 16, num_warps, num_stages): the same file and inputs give the same cache key.
--
-- Per size: a kernel *group* is one implementation, configuration and kernel name at one dtype;
-- a kernel of a group that some of the group's cases do not compile is per size: something of
-- the case's size reaches the compile (a define, a constexpr, a divisibility by 16). The table
-- names the fields that differ within groups with per-size kernels.
--
-- --sample N compiles (for real, into $TILEBENCH_CACHE_DIR and $TRITON_CACHE_DIR, which should
-- both be empty: triton keeps its own cache) up to N distinct kernels of each kind per operator,
-- spread over its kernels, one at a time in this process, and takes the CPU seconds each costs
-- (this process's and its children's: wall time on the shared build machine means little); the projection is the
-- operator's kernels x its mean seconds per kernel / 15 processes (the H200 machine's 16 cores,
-- one left to the measuring worker), x --calib F (default 1). Session 12's 6443 kernels in
-- 557.9 s on 15 processes (1.3 process-seconds a kernel) is no measure of the compiler: that
-- phase ran beside the cases, and its children write to pipes the run reads only while a case
-- waits for its kernels, so a child that got ahead stalled on a full pipe.
local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local pre = require("tilebench.precompile")
local runner = require("tilebench.runner")
local tri = require("tilebench.triton")
local sys = require("tb.sys")

local sample, out_path, tsv_path, keys_path, calib_arg, times_path, ops = 0, nil, nil, nil, 1, nil, {}
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "--sample" then sample = assert(math.tointeger(tonumber(arg[i + 1])), "--sample N"); i = i + 1
    elseif a == "--out" then out_path = arg[i + 1]; i = i + 1
    elseif a == "--tsv" then tsv_path = arg[i + 1]; i = i + 1
    elseif a == "--keys" then keys_path = arg[i + 1]; i = i + 1
    elseif a == "--calib" then calib_arg = assert(tonumber(arg[i + 1]), "--calib F"); i = i + 1
    elseif a == "--times" then times_path = arg[i + 1]; i = i + 1
    else ops[#ops + 1] = a end
    i = i + 1
  end
end
if #ops == 0 then ops = opmod.list() end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t or {}) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  return ks
end

local function kv(t)
  local parts = {}
  for _, k in ipairs(sorted_keys(t)) do parts[#parts + 1] = k .. "=" .. tostring(t[k]) end
  return table.concat(parts, ";")
end

-- What one unit's plan would compile: a list of {kind, key, group-local name, fields}.
local function record_unit(u)
  local recs = {}
  local ctx = context.new(u.op, u.case, { compile_only = true })
  ctx.kernel = function(self, file, name, defines, options)
    local dir, f = self:source_of(file)
    local path = context.kernel_path(dir, f)
    local key = path .. "|" .. kv(defines) .. "|" .. table.concat(options or {}, " ")
    recs[#recs + 1] = { kind = "nvrtc", key = key, name = f .. ":" .. name, fields = defines or {},
                        compile = function() return context.compile(dir, f, defines, options, false) end }
    return { compiled = { key = key }, name = name }
  end
  ctx.triton = function(self, s)
    local sig, div = tri.signature(s.args)
    local path = context.kernel_path(self:source_of(s.file))
    local key = table.concat({ path, s.kernel, kv(sig), kv(s.constexprs), table.concat(div, ","),
      tostring(s.num_warps or 4), tostring(s.num_stages or 3) }, "|")
    local fields = {}
    for k, v in pairs(s.constexprs or {}) do fields[k] = v end
    fields["divisible16"] = table.concat(div, ",")
    fields["num_warps"], fields["num_stages"] = s.num_warps or 4, s.num_stages or 3
    local desc = { file = path, kernel = s.kernel, signature = sig, divisible = div, constexprs = s.constexprs or {},
                   num_warps = s.num_warps or 4, num_stages = s.num_stages or 3, arch = context.compile_arch }
    recs[#recs + 1] = { kind = "triton", key = key, name = s.file .. ":" .. s.kernel, fields = fields,
                        compile = function() return tri.compile(desc) end }
    return { fn = { compiled = { key = key } }, grid = s.grid, block = { 128 }, args = {} }
  end
  local ok, err = pcall(function()
    local ins = u.op.module.inputs(u.case, ctx)
    local outs = u.op.module.outputs(u.case, ins, ctx)
    if u.impl then u.op.module.implementations[u.impl].plan(u.case, ins, outs, u.cfg, ctx)
    else u.op.module.reference(u.case, ins, outs, ctx) end
  end)
  ctx:close()
  if not ok then return nil, tostring(err) end
  return recs
end

local JOBS = 15 -- the precompile phase's processes on the H200 machine (16 cores, one measures)

local function count(op_name)
  local op = opmod.load(op_name)
  local items = {}
  for _, dtype in ipairs(opmod.dtypes(op)) do
    for i, case in ipairs(opmod.cases_of(op, dtype)) do
      items[#items + 1] = { operator = op_name, dtype = dtype, mode = "autotune", _case = case, case_index = i,
                            impls = op.known_impls }
    end
  end
  local units = pre.units(items)
  local owner = pre.assign(units, JOBS)
  local r = { name = op_name, cases = #items, plans = 0, cand = {}, kernels = { nvrtc = {}, triton = {} },
              groups = {}, failed = 0, first_unit = {}, proc_keys = {}, compiles = { nvrtc = 0, triton = 0 } }
  for ui, u in ipairs(units) do
    local recs, err = record_unit(u)
    if not recs then
      r.failed = r.failed + 1
      if r.failed <= 3 then io.stderr:write(op_name, ": ", pre.describe(u), ": ", err, "\n") end
    else
      r.plans = r.plans + 1
      if u.impl then r.cand[u.impl] = (r.cand[u.impl] or 0) + 1 end
      for _, k in ipairs(recs) do
        -- what the precompile phase compiles: a kernel once per process that meets it
        local pk = owner[ui] .. "|" .. k.key
        if not r.proc_keys[pk] then r.proc_keys[pk] = true; r.compiles[k.kind] = r.compiles[k.kind] + 1 end
        local ks = r.kernels[k.kind]
        if not ks[k.key] then
          ks[k.key] = { impl = u.impl or "reference", fields = k.fields }
          r.first_unit[k.key] = ui
        end
        local gk = table.concat({ u.dtype, u.impl or "reference", runner.config_string(u.cfg), k.name }, "|")
        local g = r.groups[gk]
        if not g then g = { kind = k.kind, keys = {}, n = 0, fields = {}, cases = {}, ncases = 0 }; r.groups[gk] = g end
        if not g.cases[u.case_index] then g.cases[u.case_index] = true; g.ncases = g.ncases + 1 end
        if not g.keys[k.key] then
          g.keys[k.key] = {}
          g.n = g.n + 1
          g.fields[#g.fields + 1] = k.fields
        end
        g.keys[k.key][u.case_index] = true
      end
    end
  end
  r.units = units
  -- per-size kernels and the fields that differ within their groups
  r.per_size = { nvrtc = 0, triton = 0 }
  r.size_fields = {}
  r.distinct = { nvrtc = 0, triton = 0 }
  for kind, ks in pairs(r.kernels) do for _ in pairs(ks) do r.distinct[kind] = r.distinct[kind] + 1 end end
  local counted = {}
  for _, g in pairs(r.groups) do
    if g.n > 1 then
      -- a kernel some cases of its group do not compile (several launches of one kernel within a
      -- plan, e.g. a sort's stages, are one group: a kernel every case compiles is not per size)
      for key, cs in pairs(g.keys) do
        local n = 0
        for _ in pairs(cs) do n = n + 1 end
        if n < g.ncases and not counted[key] then counted[key] = true; r.per_size[g.kind] = r.per_size[g.kind] + 1 end
      end
      local names = {}
      for _, f in ipairs(g.fields) do for k in pairs(f) do names[k] = true end end
      for k in pairs(names) do
        local first, differs = tostring(g.fields[1][k]), false
        for _, f in ipairs(g.fields) do if tostring(f[k]) ~= first then differs = true end end
        if differs then r.size_fields[g.kind .. ":" .. k] = true end
      end
    end
  end
  return r
end

-- CPU seconds this process and its waited-for children (triton runs ptxas as one) have used:
-- /proc/self/stat's utime, stime, cutime and cstime, in clock ticks of 1/100 s. CPU time, not
-- wall time: the build machine is shared, and what a compile costs a process is what 15 of
-- them on 16 cores each spend.
local function cpu_seconds()
  local fh = io.open("/proc/self/stat", "r")
  if not fh then return os.clock() end
  local stat = fh:read("a")
  fh:close()
  local f = {}
  for x in stat:match("%) (.*)$"):gmatch("%S+") do f[#f + 1] = x end -- f[1]: the state, a letter
  return (tonumber(f[12]) + tonumber(f[13]) + tonumber(f[14]) + tonumber(f[15])) / 100
end

-- Compiles up to n distinct kernels of each kind, spread over the operator's distinct kernels
-- (in the order its plans first compile them), each by itself, and times them: seconds per
-- kernel by kind.
local function time_sample(r, n)
  local res = {}
  for _, kind in ipairs({ "nvrtc", "triton" }) do
    local cands = {}
    for key, ui in pairs(r.first_unit) do if r.kernels[kind][key] then cands[#cands + 1] = { key = key, ui = ui } end end
    table.sort(cands, function(a, b) return a.ui < b.ui end)
    local secs, got = 0, 0
    if #cands > 0 and n > 0 then
      local step = math.max(1, #cands // n)
      for i = 1, #cands, step do
        if got >= n then break end
        local rec
        for _, k in ipairs(record_unit(r.units[cands[i].ui]) or {}) do if k.key == cands[i].key then rec = k end end
        if rec then
          local t0 = cpu_seconds()
          local ok, err = pcall(rec.compile)
          if ok then secs, got = secs + cpu_seconds() - t0, got + 1
          else io.stderr:write(r.name, ": sample ", rec.key, " failed: ", tostring(err):sub(1, 300), "\n") end
        end
      end
    end
    res[kind] = got > 0 and { per = secs / got, n = got } or nil
  end
  return res
end

local times = {}
if times_path then
  for line in io.lines(times_path) do -- the last two columns; "#" lines and the header skipped
    local f = {}
    for x in (line .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = x end
    if line:sub(1, 1) ~= "#" and f[1] ~= "operator" and #f >= 3 then
      times[f[1]] = { nvrtc = tonumber(f[#f - 1]), triton = tonumber(f[#f]) }
    end
  end
end
if sample > 0 then pcall(tri.available) end -- triton's import outside the first sample

local results = {}
local t_all = sys.monotonic()
for _, name in ipairs(ops) do
  local t0 = sys.monotonic()
  local r = count(name)
  r.count_s = sys.monotonic() - t0
  if sample > 0 then r.timing = time_sample(r, sample) end
  if keys_path then
    local per = {}
    for _, g in pairs(r.groups) do
      if g.n > 1 then
        for key, cs in pairs(g.keys) do
          local n = 0
          for _ in pairs(cs) do n = n + 1 end
          if n < g.ncases then per[key] = true end
        end
      end
    end
    r.key_lines = {}
    for _, kind in ipairs({ "nvrtc", "triton" }) do
      for _, key in ipairs(sorted_keys(r.kernels[kind])) do
        r.key_lines[#r.key_lines + 1] = table.concat({ name, kind, r.kernels[kind][key].impl,
          per[key] and "size" or "-", (key:gsub("^.*/operators/", "")) }, "\t")
      end
    end
  end
  r.units = nil
  r.first_unit = nil
  r.proc_keys = nil
  results[#results + 1] = r
  io.stderr:write(string.format("%s: %d cases, %d plans, %d nvrtc (%d per size, %d compiles on %d processes), %d triton (%d per size, %d compiles), %.1f s\n",
    name, r.cases, r.plans, r.distinct.nvrtc, r.per_size.nvrtc, r.compiles.nvrtc, JOBS, r.distinct.triton, r.per_size.triton,
    r.compiles.triton, r.count_s))
end

-- The projection takes this machine's CPU seconds per kernel for the H200 machine's (--calib F
-- scales them; 1 by default: both x86 servers, one compile per process).
local calib = calib_arg
local function per_kernel(r)
  local t = r.timing and { nvrtc = r.timing.nvrtc and r.timing.nvrtc.per, triton = r.timing.triton and r.timing.triton.per }
    or times[r.name]
  return t
end
local lines = {}
local function w(...) lines[#lines + 1] = string.format(...) end
w("# Kernels autotune mode compiles, per operator (the whole grid, every dtype)")
w("")
w("Made by `build/tilebench script bench/autotune/kernels_per_operator.lua%s%s` (%s): the",
  sample > 0 and (" --sample " .. sample) or "", times_path and " --times TSV" or "", os.date("!%Y-%m-%d %H:%M UTC"))
w("precompile phase's plans for autotune items at every case, recorded, not compiled. *candidates/case*:")
w("the plans of implementations with a kernel source (the reference excluded) per case, after `valid`")
w("and `launch_key`; *NVRTC* and *Triton*: distinct kernels (compile-cache identities), references")
w("included; *per size*: those of them that some cases of their implementation, configuration and")
w("dtype do not compile (something of the case's size reaches the compile), and what differs within")
w("such groups; *compiles*: what the precompile phase compiles on %d processes (a kernel once per", JOBS)
w("process that meets it: processes meeting it at about the same time both compile it).")
w("*s/kernel*: CPU seconds per kernel compiled on the build machine, one at a time (with its children:")
w("triton's ptxas), NVRTC / Triton, the mean of a sample of up to %s of each kind spread over the operator's",
  sample > 0 and tostring(sample) or "N")
w("kernels%s; *projected s*: (NVRTC compiles x s/kernel + Triton compiles x s/kernel) x %g / %d",
  times_path and " (from an earlier sample)" or "", calib, JOBS)
w("processes, the compile phase's length were it spread evenly.")
w("")
w("| operator | cases | candidates/case | plans | NVRTC | per size | compiles | Triton | per size | compiles | size-carrying fields | s/kernel | projected s |")
w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
local tot = { cases = 0, plans = 0, nvrtc = 0, triton = 0, pn = 0, pt = 0, cn = 0, ct = 0, proj = 0, sn = 0, st = 0 }
for _, r in ipairs(results) do
  local cand = {}
  for _, impl in ipairs(sorted_keys(r.cand)) do cand[#cand + 1] = string.format("%s %.1f", impl, r.cand[impl] / r.cases) end
  local f = sorted_keys(r.size_fields)
  local sk, proj = "", ""
  local t = per_kernel(r)
  if t then
    sk = string.format("%s / %s", t.nvrtc and string.format("%.2f", t.nvrtc) or "-", t.triton and string.format("%.2f", t.triton) or "-")
    local sn, st = r.compiles.nvrtc * (t.nvrtc or 0) * calib, r.compiles.triton * (t.triton or 0) * calib
    proj = string.format("%.0f", (sn + st) / JOBS)
    tot.proj, tot.sn, tot.st = tot.proj + (sn + st) / JOBS, tot.sn + sn, tot.st + st
  end
  local function share(a, b) return b > 0 and string.format("%d (%.0f %%)", a, 100 * a / b) or "0" end
  w("| %s | %d | %s | %d | %d | %s | %d | %d | %s | %d | %s | %s | %s |", r.name, r.cases, table.concat(cand, ", "), r.plans,
    r.distinct.nvrtc, share(r.per_size.nvrtc, r.distinct.nvrtc), r.compiles.nvrtc, r.distinct.triton,
    share(r.per_size.triton, r.distinct.triton), r.compiles.triton, table.concat(f, ", "), sk, proj)
  tot.cases, tot.plans = tot.cases + r.cases, tot.plans + r.plans
  tot.nvrtc, tot.triton = tot.nvrtc + r.distinct.nvrtc, tot.triton + r.distinct.triton
  tot.pn, tot.pt = tot.pn + r.per_size.nvrtc, tot.pt + r.per_size.triton
  tot.cn, tot.ct = tot.cn + r.compiles.nvrtc, tot.ct + r.compiles.triton
  if r.failed > 0 then w("|  (%s: %d plans failed to record) | | | | | | | | | | | | |", r.name, r.failed) end
end
w("| **all (%d operators)** | %d | | %d | %d | %d | %d | %d | %d | %d | | | %s |", #results, tot.cases, tot.plans, tot.nvrtc,
  tot.pn, tot.cn, tot.triton, tot.pt, tot.ct, tot.proj > 0 and string.format("%.0f", tot.proj) or "")
w("")
if tot.proj > 0 then
  w("CPU seconds to compile it all: NVRTC %.0f, Triton %.0f; on %d processes about %.0f s (%.1f min).",
    tot.sn, tot.st, JOBS, tot.proj, tot.proj / 60)
end
w("(listing took %.0f s)", sys.monotonic() - t_all)
local text = table.concat(lines, "\n") .. "\n"
if out_path then
  local fh = assert(io.open(out_path, "w"))
  fh:write(text)
  fh:close()
else
  io.write(text)
end
if keys_path then
  local fh = assert(io.open(keys_path, "w"))
  for _, r in ipairs(results) do for _, l in ipairs(r.key_lines) do fh:write(l, "\n") end end
  fh:close()
end
if tsv_path then
  local fh = assert(io.open(tsv_path, "w"))
  fh:write("operator\tcases\tplans\tnvrtc\tnvrtc_per_size\tnvrtc_compiles\ttriton\ttriton_per_size\ttriton_compiles\tnvrtc_s\ttriton_s\n")
  for _, r in ipairs(results) do
    local t = per_kernel(r) or {}
    fh:write(table.concat({ r.name, r.cases, r.plans, r.distinct.nvrtc, r.per_size.nvrtc, r.compiles.nvrtc, r.distinct.triton,
      r.per_size.triton, r.compiles.triton, t.nvrtc and string.format("%.3f", t.nvrtc) or "",
      t.triton and string.format("%.3f", t.triton) or "" }, "\t"), "\n")
  end
  fh:close()
end
