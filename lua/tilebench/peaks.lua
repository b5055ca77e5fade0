-- peaks.lua: a GPU's measured ceilings (peaks/<label>.json, written by `tilebench peaks`), checked
-- on load, and the choice of the compute ceiling a case is measured against.
--
--   peaks.load(label [, opts]) -> peaks     opts.dir: the folder (default $TILEBENCH_PEAKS_DIR,
--                                           else TILEBENCH_HOME/peaks)
--   peaks.load_file(path [, label]) -> peaks
--   peaks.validate(t, name [, label]) -> t
--   peaks.save(label, t [, opts])           validates, writes sorted JSON atomically
--   peaks.path(label [, dir]) -> path
--   peaks.ceiling(peaks, dtype, category) -> tflops, key    the compute ceiling (TFLOP/s)
--   peaks.bandwidth(peaks) -> GB/s          the copy kernel's rate (TileBench's ceiling: rho_tilebench)
--   peaks.memory_ceiling(peaks) -> GB/s     the best sustained DRAM rate over the traffic mixes
--                                           (memory_ceiling_gbs; an older file: bandwidth_gbs)
--   peaks.case_bandwidth(peaks, working_set_bytes) -> GB/s, info   the memory ceiling of a case:
--     info = {l2_ratio, l2_near, source = "dram" | "size"}; see "Near the L2" below
--   peaks.roofline(peaks, flops, bytes, seconds, dtype, category [, bandwidth_gbs]) -> r   where
--     the case sits: {rho, bound = "memory"|"compute", ceiling_tflops, ceiling (key), bandwidth_gbs};
--     rho is what metrics.lua records and the report's roofline shows (one reader, one set of
--     units). bandwidth_gbs defaults to peaks.memory_ceiling.
--   peaks.ceilings(peaks) -> {bandwidth = bytes/s, compute = {{label, rate = FLOP/s, key}...}}
--     every roof the file holds, highest first (the report draws them); nil without peaks
--
-- Schema: {gpu = label, device = {name = ..., ...}, measured_at = "...", tilebench = "0.1.0" or
--   {version =, git_sha =},
--   bandwidth_gbs = N, fp32_tflops = N, matrix_tflops = {fp16 =, bf16 =, tf32 =, fp8_e4m3 =,
--   fp8_e4m3_fast_accum =, int8 =}, provenance = {...}}. Rates are positive numbers; a matrix
-- rate may be absent or null (not measurable on that GPU) and is then an error only when a case
-- needs it.
-- Other top-level keys are kept (the writer may record more). Written since issue 19, optional
-- (a file without them reads as before: every ceiling is bandwidth_gbs):
--   memory_ceiling_gbs = N      the largest of bandwidth_mixes: rho's DRAM ceiling
--   bandwidth_mixes = {read =, read2_write1 =, copy =, driver_copy =}   GB/s (bytes read + written)
--     at working sets far past the L2 (>= 1 GiB); an entry may be null (not measured)
--   bandwidth_by_size = {{bytes = working set, gbs = best mix}, ...}   ascending, measured as a
--     case is (the L2 evicted before every run): the ceiling of cases near the L2
--
-- Near the L2 (issue 19): a case whose working set (its essential bytes, read + written) is at
-- most L2_NEAR times the device's L2 can finish with part of its output still in the write-back
-- L2, and then beats any sustained DRAM rate. Such a case is marked (l2_near) and measured
-- against the best rate a streaming kernel reaches at its own working set (bandwidth_by_size,
-- interpolated in log(size)), when that is above the DRAM ceiling; without bandwidth_by_size
-- (an older file) it keeps the DRAM ceiling and the mark says its rho is L2-affected.
--
-- Which ceiling (peaks.matrix_rates): MatMul/Attn cases run on the tensor cores, so they are
-- measured against the matrix rate of their dtype: fp16 and bf16 -> the larger of the two
-- (M.same_pipe), fp32 -> tf32
-- (TileBench's fp32 matmuls allow TF32), fp8_e4m3 -> fp8_e4m3 (fp32 accumulation, as the
-- reference; the fast-accumulation rate is recorded but not used), int8 -> int8. Every other
-- case (and a MatMul/Attn dtype without an entry) is measured against the fp32 vector FMA rate.
local util = require("tilebench.util")

local M = {}

-- A working set at most this many times the L2 is "near the L2" (docs/MEASUREMENT.md, "rho").
M.L2_NEAR = 4

M.mix_keys = {"read", "read2_write1", "copy", "driver_copy"}

M.matrix_keys = {"fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e4m3_fast_accum", "int8"}

local MATRIX = {fp16 = "fp16", bf16 = "bf16", fp32 = "tf32", fp8_e4m3 = "fp8_e4m3", int8 = "int8"}
-- Rates the tensor cores reach on one pipe at one peak (fp16 and bf16 mma: the same dense rate on
-- Ampere and Hopper). Their ceiling is the best of the measured rates: one cuBLASLt measurement
-- under the power cap reads a few percent low (H200, 2026-12-02: fp16 757, bf16 805 TFLOP/s),
-- and a ceiling below what a kernel of the other dtype reached gave rho 1.05 (issue 19 section 4).
M.same_pipe = {fp16 = {"fp16", "bf16"}, bf16 = {"fp16", "bf16"}}
-- by category, and by the ceiling class an operator may declare (operator.lua's `ceiling`)
M.matrix_rates = {["MatMul/Attn"] = MATRIX, matrix = MATRIX}

local function fail(name, fmt, ...) error(name .. ": " .. string.format(fmt, ...), 0) end

local function check_label(label)
  if not util.is_name(label) then
    error(string.format("invalid GPU label %s: use letters, digits and . _ + - (one path component)",
      util.describe(label)), 0)
  end
end

function M.dir()
  local env = os.getenv("TILEBENCH_PEAKS_DIR")
  if env and env ~= "" then return env end
  return util.path_join(TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or ".", "peaks")
end

function M.path(label, dir)
  check_label(label)
  return util.path_join(dir or M.dir(), label .. ".json")
end

local function positive(name, key, v)
  if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
    fail(name, "%s must be a positive number, got %s", key, util.describe(v))
  end
end

function M.validate(t, name, label)
  name = name or "peaks"
  if type(t) ~= "table" or util.is_array(t) and next(t) ~= nil then
    fail(name, "must hold a JSON object, got %s", util.describe(t))
  end
  if type(t.gpu) ~= "string" then fail(name, "gpu must be a string, got %s", util.describe(t.gpu)) end
  if label and t.gpu ~= label then fail(name, 'gpu is "%s", expected "%s"', t.gpu, label) end
  if type(t.device) ~= "table" or type(t.device.name) ~= "string" then
    fail(name, "device must be an object with a name, got %s", util.describe(t.device))
  end
  if t.measured_at ~= nil and type(t.measured_at) ~= "string" then
    fail(name, "measured_at must be a string, got %s", util.describe(t.measured_at))
  end
  if t.tilebench ~= nil and type(t.tilebench) ~= "string" and type(t.tilebench) ~= "table" then
    fail(name, "tilebench must be a version string or object, got %s", util.describe(t.tilebench))
  end
  positive(name, "bandwidth_gbs", t.bandwidth_gbs)
  positive(name, "fp32_tflops", t.fp32_tflops)
  if type(t.matrix_tflops) ~= "table" then
    fail(name, "matrix_tflops must be an object, got %s", util.describe(t.matrix_tflops))
  end
  local known = {}
  for _, k in ipairs(M.matrix_keys) do known[k] = true end
  for k, v in pairs(t.matrix_tflops) do
    if not known[k] then
      local hint = util.did_you_mean(tostring(k), M.matrix_keys)
      fail(name, 'unknown key "%s" in matrix_tflops%s', tostring(k),
        hint and string.format(' (did you mean "%s"?)', hint) or "")
    end
    if v ~= util.null then positive(name, "matrix_tflops." .. k, v) end
  end
  if t.memory_ceiling_gbs ~= nil then positive(name, "memory_ceiling_gbs", t.memory_ceiling_gbs) end
  if t.bandwidth_mixes ~= nil then
    if type(t.bandwidth_mixes) ~= "table" or util.is_array(t.bandwidth_mixes) and next(t.bandwidth_mixes) ~= nil then
      fail(name, "bandwidth_mixes must be an object, got %s", util.describe(t.bandwidth_mixes))
    end
    local mixes = {}
    for _, k in ipairs(M.mix_keys) do mixes[k] = true end
    for k, v in pairs(t.bandwidth_mixes) do
      if not mixes[k] then
        local hint = util.did_you_mean(tostring(k), M.mix_keys)
        fail(name, 'unknown key "%s" in bandwidth_mixes%s', tostring(k),
          hint and string.format(' (did you mean "%s"?)', hint) or "")
      end
      if v ~= util.null then positive(name, "bandwidth_mixes." .. k, v) end
    end
  end
  if t.bandwidth_by_size ~= nil then
    if type(t.bandwidth_by_size) ~= "table" or not util.is_array(t.bandwidth_by_size) then
      fail(name, "bandwidth_by_size must be a list of {bytes, gbs}, got %s", util.describe(t.bandwidth_by_size))
    end
    local last = 0
    for i, e in ipairs(t.bandwidth_by_size) do
      if type(e) ~= "table" then fail(name, "bandwidth_by_size[%d] must be {bytes, gbs}, got %s", i, util.describe(e)) end
      positive(name, ("bandwidth_by_size[%d].bytes"):format(i), e.bytes)
      positive(name, ("bandwidth_by_size[%d].gbs"):format(i), e.gbs)
      if e.bytes <= last then fail(name, "bandwidth_by_size must ascend in bytes (entry %d)", i) end
      last = e.bytes
    end
  end
  if t.provenance ~= nil and type(t.provenance) ~= "table" then
    fail(name, "provenance must be an object, got %s", util.describe(t.provenance))
  end
  return t
end

function M.load_file(path, label)
  local f = io.open(path, "rb")
  if not f then
    local l = label or util.basename(path):gsub("%.json$", "")
    error(string.format("no peaks for GPU label '%s': run `tilebench peaks --gpu %s` (looked for %s)",
      l, l, path), 0)
  end
  local text = f:read("a")
  f:close()
  local t = util.json_decode(text, path)
  t._path = path
  M.validate(t, path, label)
  return t
end

function M.load(label, opts)
  opts = opts or {}
  return M.load_file(M.path(label, opts.dir), label)
end

function M.save(label, t, opts)
  opts = opts or {}
  local path = M.path(label, opts.dir)
  M.validate(t, path, label)
  local copy = util.deepcopy(t)
  copy._path = nil
  util.write_json(path, copy)
  return path
end

function M.bandwidth(p) return p.bandwidth_gbs end

function M.memory_ceiling(p) return p.memory_ceiling_gbs or p.bandwidth_gbs end

local function positive_number(v) return type(v) == "number" and v > 0 and v == v end

-- bandwidth_by_size at a working set: linear in log(bytes) between the two entries around it,
-- the end entry's rate outside the measured range. nil without the list.
function M.size_bandwidth(p, bytes)
  local list = p.bandwidth_by_size
  if type(list) ~= "table" or #list == 0 or not positive_number(bytes) then return nil end
  if bytes <= list[1].bytes then return list[1].gbs end
  for i = 2, #list do
    local a, b = list[i - 1], list[i]
    if bytes <= b.bytes then
      local f = (math.log(bytes) - math.log(a.bytes)) / (math.log(b.bytes) - math.log(a.bytes))
      return a.gbs + f * (b.gbs - a.gbs)
    end
  end
  return list[#list].gbs
end

-- The memory ceiling of a case moving working_set bytes (its essential bytes): the DRAM ceiling,
-- or for a case near the L2 the size ceiling where that is higher (see "Near the L2" above).
function M.case_bandwidth(p, working_set)
  local dram = M.memory_ceiling(p)
  local info = {source = "dram"}
  local l2 = type(p.device) == "table" and p.device.l2_bytes
  if positive_number(l2) and positive_number(working_set) then
    info.l2_ratio = working_set / l2
    info.l2_near = info.l2_ratio <= M.L2_NEAR
  end
  if info.l2_near then
    local at_size = M.size_bandwidth(p, working_set)
    if at_size and at_size > dram then
      info.source = "size"
      return at_size, info
    end
  end
  return dram, info
end

-- rho = W / (t * P) for the binding resource: under the ridge point ceiling / bandwidth the case
-- is memory-bound (W = bytes, P = bandwidth), else compute-bound (W = flops, P = the ceiling of
-- its dtype and category). No flops (or 0): memory-bound; flops but no bytes: compute-bound.
-- nil when there is no time or no work.
function M.roofline(p, flops, bytes, seconds, dtype, category, bandwidth_gbs)
  if not positive_number(seconds) or not (positive_number(flops) or positive_number(bytes)) then return nil end
  local ceiling, key = M.ceiling(p, dtype, category)
  local bw = bandwidth_gbs or M.memory_ceiling(p)
  local r = {ceiling_tflops = ceiling, ceiling = key, bandwidth_gbs = bw}
  local memory_bound
  if not positive_number(flops) then memory_bound = true
  elseif not positive_number(bytes) then memory_bound = false
  else memory_bound = flops / bytes < ceiling * 1e12 / (bw * 1e9) end
  if memory_bound then
    r.bound, r.rho = "memory", bytes / (seconds * bw * 1e9)
  else
    r.bound, r.rho = "compute", flops / (seconds * ceiling * 1e12)
  end
  return r
end

-- Matrix rates that are recorded but never a case's ceiling (see the top): not drawn as roofs.
local NOT_A_CEILING = {fp8_e4m3_fast_accum = true}

function M.ceilings(p)
  if type(p) ~= "table" then return nil end
  local out = {bandwidth = M.memory_ceiling(p) * 1e9, compute = {}}
  out.compute[1] = {label = "fp32 vector", rate = p.fp32_tflops * 1e12, key = "fp32_tflops"}
  for _, k in ipairs(M.matrix_keys) do
    local v = p.matrix_tflops[k]
    if v ~= nil and v ~= util.null and not NOT_A_CEILING[k] then
      out.compute[#out.compute + 1] = {label = "matrix " .. k, rate = v * 1e12, key = "matrix_tflops." .. k}
    end
  end
  table.sort(out.compute, function(a, b) return a.rate > b.rate end)
  return out
end

-- The compute ceiling (TFLOP/s) for a case of dtype in category, and the key it came from.
function M.ceiling(p, dtype, category)
  local d = util.normalize_dtype(dtype) or dtype
  local rates = M.matrix_rates[category or ""]
  local key = rates and rates[d]
  if key then
    local v = p.matrix_tflops and p.matrix_tflops[key]
    for _, k in ipairs(M.same_pipe[key] or {}) do
      local w = p.matrix_tflops and p.matrix_tflops[k]
      if w ~= nil and w ~= util.null and (v == nil or v == util.null or w > v) then v, key = w, k end
    end
    if v == nil or v == util.null then
      error(string.format("%s has no matrix_tflops.%s (the ceiling of %s %s cases): run `tilebench peaks --gpu %s`",
        p._path or ("peaks for " .. tostring(p.gpu)), key, tostring(dtype), category, tostring(p.gpu)), 0)
    end
    return v, "matrix_tflops." .. key
  end
  return p.fp32_tflops, "fp32_tflops"
end

return M
