-- cpu_check/reduction.lua (GPU, part of tests/gpu/operators_cpu_check.lua): the row reductions and
-- norms (softmax, layernorm, rmsnorm, mean_reduction, argmax; issue 16's l2_norm ..
-- batch_normalization; docs/REDUCTIONS.md): rows shorter and longer than a warp's reach, row counts
-- that leave partial groups; argmax and moe_topk_gating with planted ties (lower index first),
-- histogramming with out-of-range values (never counted).
-- The table it returns is described in cpu_check/common.lua.
local C = require("cpu_check.common")
local context = require("tilebench.context")
local verify = require("tb.verify")
local config = require("tilebench.config")
local round_to = C.round_to
local fail = C.fail
local compare_cpu = C.compare_cpu
local check_impls = C.check_impls
local host_all = C.host_all
local with_triton = C.with_triton

local cpu = {}

local function rows_of(h, rows, cols, f)
  local out = {}
  for r = 0, rows - 1 do f(r * cols, out) end
  return out
end

function cpu.softmax(c, h)
  local rows, cols = c.params.n_rows, c.params.n_cols
  return rows_of(h, rows, cols, function(base, out)
    local m = -math.huge
    for j = 1, cols do m = math.max(m, h.x[base + j]) end
    local s = 0
    for j = 1, cols do s = s + math.exp(h.x[base + j] - m) end
    for j = 1, cols do out[base + j] = round_to(c.dtype, math.exp(h.x[base + j] - m) / s) end
  end)
end

function cpu.layernorm(c, h)
  local cols = c.params.K
  return rows_of(h, c.params.batch * c.params.M, cols, function(base, out)
    local s = 0
    for j = 1, cols do s = s + h.x[base + j] end
    local mean = s / cols
    local v = 0
    for j = 1, cols do v = v + (h.x[base + j] - mean) ^ 2 end
    local rstd = 1 / math.sqrt(v / cols + 1e-5)
    for j = 1, cols do
      out[base + j] = round_to(c.dtype, (h.x[base + j] - mean) * rstd * h.weight[j] + h.bias[j])
    end
  end)
end

function cpu.rmsnorm(c, h)
  local cols = c.params.K
  return rows_of(h, c.params.batch * c.params.M, cols, function(base, out)
    local ss = 0
    for j = 1, cols do ss = ss + h.x[base + j] ^ 2 end
    local rstd = 1 / math.sqrt(ss / cols + 1e-6)
    for j = 1, cols do out[base + j] = round_to(c.dtype, h.x[base + j] * rstd * h.rms_w[j]) end
  end)
end

function cpu.l2_norm(c, h)
  local cols = c.params.K
  return rows_of(h, c.params.batch * c.params.M, cols, function(base, out)
    local ss = 0
    for j = 1, cols do ss = ss + h.x[base + j] ^ 2 end
    local rstd = 1 / math.sqrt(ss + 1e-6)
    for j = 1, cols do out[base + j] = round_to(c.dtype, h.x[base + j] * rstd) end
  end)
end

function cpu.cross_entropy(c, h)
  local rows, cols = c.params.batch_size, c.params.num_classes
  local out = {}
  for r = 0, rows - 1 do
    local m = -math.huge
    for j = 1, cols do m = math.max(m, h.logits[r * cols + j]) end
    local s = 0
    for j = 1, cols do s = s + math.exp(h.logits[r * cols + j] - m) end
    out[r + 1] = round_to(c.dtype, m + math.log(s) - h.logits[r * cols + h.targets[r + 1] + 1])
  end
  return out
end

-- Also checks the operator's input generator (kl_divergence_gen.cu): every row of y_true is a
-- distribution (positive, summing to 1), every row of log_y_pred one in log space.
function cpu.kl_divergence(c, h)
  local rows, cols = c.params.rows, c.params.cols
  local out = {}
  for r = 0, rows - 1 do
    local s, sy, sp, ypos = 0, 0, 0, true
    for j = 1, cols do
      local y, lp = h.y_true[r * cols + j], h.log_y_pred[r * cols + j]
      s = s + y * (math.log(y) - lp)
      sy, sp, ypos = sy + y, sp + math.exp(lp), ypos and y > 0
    end
    C.count()
    if not (ypos and math.abs(sy - 1) < 1e-4 and math.abs(sp - 1) < 1e-4) then
      fail("kl_divergence rows=%d cols=%d: generated row %d: y_true sums to %.7g (all positive: %s), exp(log_y_pred) to %.7g",
           rows, cols, r, sy, tostring(ypos), sp)
    end
    out[r + 1] = round_to("fp32", s)
  end
  return out
end

-- The k best of each row in value order, equal values by the lower index (the operator's stated
-- rule), softmax of the k values; weights and indices by output name. On generated inputs (not the
-- planted ties) it also checks the generator: each row is a permutation of linspace(-3, 3, E)
-- computed in fp32 (moe_topk_gating_gen.cu's arithmetic, no contraction) rounded to the dtype.
function cpu.moe_topk_gating(c, h)
  local M, E, k = c.params.M, c.params.E, c.params.k
  local x = h.logits
  local lin
  if c.id ~= "ties" then
    local f32 = function(v) return round_to("fp32", v) end
    local step = f32(6 / (E > 1 and E - 1 or 1))
    lin = {}
    for i = 0, E - 1 do
      lin[i + 1] = round_to(c.dtype, i < E // 2 and f32(-3 + f32(step * i)) or f32(3 - f32(step * (E - 1 - i))))
    end
    table.sort(lin)
  end
  local w, idx = {}, {}
  for r = 0, M - 1 do
    local order = {}
    for j = 0, E - 1 do order[j + 1] = j end
    table.sort(order, function(a, b)
      local va, vb = x[r * E + a + 1], x[r * E + b + 1]
      if va ~= vb then return va > vb end
      return a < b
    end)
    if lin then
      local row = {}
      for j = 1, E do row[j] = x[r * E + j] end
      table.sort(row)
      C.count()
      for j = 1, E do
        if row[j] ~= lin[j] then
          fail("moe_topk_gating %s %s: generated row %d is not a permutation of linspace(-3, 3, %d): sorted[%d] = %.9g, expected %.9g",
               c.dtype, c.id, r, E, j - 1, row[j], lin[j])
          break
        end
      end
    end
    local top, s = x[r * E + order[1] + 1], 0
    for q = 1, k do s = s + math.exp(x[r * E + order[q] + 1] - top) end
    for q = 1, k do
      w[r * k + q] = round_to(c.dtype, math.exp(x[r * E + order[q] + 1] - top) / s)
      idx[r * k + q] = order[q]
    end
  end
  return { weights = w, indices = idx }
end

-- Counts of the values in [0, num_bins) (others not counted: the operator's rule); on generated
-- inputs it also checks the generator (input[i] = i % num_bins).
function cpu.histogramming(c, h)
  local bins = c.params.num_bins
  local hist = {}
  for b = 1, bins do hist[b] = 0 end
  local gen_ok = true
  for i = 1, #h.input do
    local v = h.input[i]
    if v >= 0 and v < bins then hist[v + 1] = hist[v + 1] + 1 end
    if v ~= (i - 1) % bins then gen_ok = false end
  end
  if c.id ~= "outliers" then
    C.count()
    if not gen_ok then fail("histogramming %s: the generated input is not arange(N) %% num_bins", c.id) end
  end
  return hist
end

function cpu.batch_normalization(c, h)
  local N, NCH, eps = c.params.N, c.params.C, c.params.eps
  local out = {}
  for ch = 1, NCH do
    local s = 0
    for n = 0, N - 1 do s = s + h.x[n * NCH + ch] end
    local mean = s / N
    local v = 0
    for n = 0, N - 1 do v = v + (h.x[n * NCH + ch] - mean) ^ 2 end
    local rstd = 1 / math.sqrt(v / N + eps)
    for n = 0, N - 1 do
      out[n * NCH + ch] = round_to(c.dtype, (h.x[n * NCH + ch] - mean) * rstd * h.gamma[ch] + h.beta[ch])
    end
  end
  return out
end

function cpu.mean_reduction(c, h)
  local rows, cols = c.params.M, c.params.N
  local out = {}
  for r = 0, rows - 1 do
    local s = 0
    for j = 1, cols do s = s + h.x[r * cols + j] end
    out[r + 1] = round_to("fp32", s / cols)
  end
  return out
end

function cpu.argmax(c, h)
  local rows, cols = c.params.M, c.params.N
  local out = {}
  for r = 0, rows - 1 do
    local best, bi = h.x[r * cols + 1], 0
    for j = 2, cols do
      local v = h.x[r * cols + j]
      if best ~= best then break end
      if v ~= v or v > best then best, bi = v, j - 1 end
    end
    out[r + 1] = bi
  end
  return out
end

local CASES = {
  softmax = { dtypes = { "fp16", "fp32" },
              params = { { n_rows = 5, n_cols = 1000 }, { n_rows = 33, n_cols = 2049 }, { n_rows = 4, n_cols = 10240 },
                         { n_rows = 3, n_cols = 7 }, { n_rows = 7, n_cols = 10240 }, { n_rows = 9, n_cols = 2049 },
                         { n_rows = 1001, n_cols = 100 }, { n_rows = 300, n_cols = 4096 } } },
  layernorm = { dtypes = { "fp16", "bf16", "fp32" },
                params = { { batch = 1, M = 5, K = 1001 }, { batch = 2, M = 3, K = 4096 }, { batch = 1, M = 7, K = 10240 },
                           { batch = 1, M = 3, K = 9 }, { batch = 1, M = 9, K = 2049 }, { batch = 7, M = 143, K = 40 },
                           { batch = 2, M = 150, K = 4096 } } },
  rmsnorm = { dtypes = { "fp16", "bf16", "fp32" },
              params = { { batch = 1, M = 5, K = 1001 }, { batch = 2, M = 3, K = 4096 }, { batch = 1, M = 7, K = 10240 },
                         { batch = 1, M = 3, K = 9 }, { batch = 1, M = 9, K = 2049 }, { batch = 7, M = 143, K = 40 },
                           { batch = 2, M = 150, K = 4096 } } },
  l2_norm = { dtypes = { "fp16", "bf16", "fp32" },
              params = { { batch = 1, M = 5, K = 1001 }, { batch = 2, M = 3, K = 4096 }, { batch = 1, M = 7, K = 10240 },
                         { batch = 1, M = 3, K = 9 }, { batch = 1, M = 9, K = 2049 }, { batch = 7, M = 143, K = 40 },
                         { batch = 2, M = 150, K = 4096 } } },
  cross_entropy = { dtypes = { "fp16", "fp32" },
                    params = { { batch_size = 5, num_classes = 1001 }, { batch_size = 33, num_classes = 512 },
                               { batch_size = 3, num_classes = 7 }, { batch_size = 1001, num_classes = 100 },
                               { batch_size = 9, num_classes = 20480 }, { batch_size = 300, num_classes = 4096 } } },
  kl_divergence = { dtypes = { "fp32" },
                    params = { { rows = 5, cols = 1001 }, { rows = 33, cols = 1024 }, { rows = 3, cols = 7 },
                               { rows = 7, cols = 16384 }, { rows = 1001, cols = 100 }, { rows = 9, cols = 4098 } } },
  moe_topk_gating = { dtypes = { "fp16", "bf16", "fp32" },
                      params = { { M = 5, E = 128, k = 2 }, { M = 1001, E = 128, k = 2 }, { M = 33, E = 7, k = 3 },
                                 { M = 9, E = 1000, k = 8 }, { M = 300, E = 64, k = 1 }, { M = 17, E = 37, k = 4 },
                                 { M = 6, E = 128, k = 4 } } },
  histogramming = { dtypes = { "int32" },
                    params = { { N = 1, num_bins = 64 }, { N = 1000003, num_bins = 64 }, { N = 70001, num_bins = 4096 },
                               { N = 262147, num_bins = 1000 }, { N = 5, num_bins = 7 }, { N = 65536, num_bins = 256 } } },
  -- N = 1: the variance is 0 and y = beta (torch refuses one row in training mode; the grid has none)
  batch_normalization = { dtypes = { "fp16", "bf16", "fp32" },
                          params = { { N = 7, C = 1024, eps = 1e-5 }, { N = 1000, C = 1024, eps = 1e-5 },
                                     { N = 333, C = 100, eps = 1e-5 }, { N = 2, C = 37, eps = 1e-5 },
                                     { N = 5001, C = 64, eps = 1e-5 }, { N = 1, C = 33, eps = 1e-5 },
                                     { N = 3000, C = 1030, eps = 1e-5 } } },
  mean_reduction = { dtypes = { "fp16", "bf16", "fp32" },
                     params = { { M = 5, N = 1001 }, { M = 33, N = 20480 }, { M = 3, N = 17 }, { M = 7, N = 20480 },
                                { M = 9, N = 4097 }, { M = 1001, N = 100 }, { M = 300, N = 4096 } } },
  argmax = {
    dtypes = { "fp16", "fp32" }, params = { { M = 5, N = 1001 }, { M = 33, N = 20480 }, { M = 3,
    N = 17,
  },
                                                     { M = 7, N = 20480 }, { M = 9, N = 4097 }, { M = 1001, N = 100 }, { M = 300, N = 4096 } },
             compile_params = { { M = 4, N = 5003 } } }, -- check_argmax_ties' shape
}

-- argmax with planted ties across threads and vectors: the first index must win.
local function check_argmax_ties(op)
  for _, dtype in ipairs({ "fp16", "fp32" }) do
    local rows, cols = 4, 5003
    local vals, want = {}, {}
    local plants = { { 4000, 17, 2500 }, { 9, 10, 5002 }, { 5002, 4096, 4097 }, { 1, 0, 3333 } }
    for r = 0, rows - 1 do
      for j = 0, cols - 1 do vals[r * cols + j + 1] = ((r * 7919 + j * 104729) % 2001) / 1000 - 1 end
      local first = math.huge
      for _, j in ipairs(plants[r + 1]) do
        vals[r * cols + j + 1] = 3.5
        first = math.min(first, j)
      end
      want[r + 1] = first
    end
    local c = { params = { M = rows, N = cols }, dtype = dtype, index = 1, id = "ties" }
    local where = "argmax " .. dtype .. " planted ties"
    local ctx <close> = context.new(op, c)
    local ins = { x = ctx.from_table(vals, dtype, { rows, cols }) }
    local refs = op.module.outputs(c, ins, ctx)
    op.module.reference(c, ins, refs, ctx):run()
    compare_cpu(where .. " reference vs CPU", refs.out:to_host(), want, 0, 0)
    check_impls(op, c, ctx, ins, refs, where)
    print(string.format("ok  %s", where))
  end
end

-- moe_topk_gating with planted ties (rows of equal values, ties at the top, ties straddling the
-- k-th place, across the threads and vectors of a row): the lower index must come first, in the
-- reference (against the CPU, exactly) and in every configuration of cuda and, where it imports,
-- triton (against the reference: indices exact). Background values repeat too (2001 levels,
-- fewer after rounding to fp16/bf16).
local function check_moe_ties(op)
  local impls
  for _, dtype in ipairs({ "fp16", "bf16", "fp32" }) do
    for _, shape in ipairs({ { E = 128, k = 2 }, { E = 128, k = 4 }, { E = 37, k = 3 } }) do
      local rows, E = 6, shape.E
      local plants = { -- {value, columns}: the planted value is above every background value
        { 2.5, { 1, 0, E - 1 } }, { 2.5, { E - 1, E // 2 } }, { 2.5, { E // 3 } }, { 2.5, { 9, 17, 25, 33 } },
        { 2.5, {} }, { 2.5, {} } }
      local vals = {}
      for r = 0, rows - 1 do
        for j = 0, E - 1 do vals[r * E + j + 1] = ((r * 7919 + j * 104729) % 2001) / 1000 - 1 end
        for _, j in ipairs(plants[r + 1][2]) do vals[r * E + j + 1] = plants[r + 1][1] end
      end
      for j = 0, E - 1 do vals[4 * E + j + 1] = 0.75 end -- a row of one value: indices 0 .. k-1
      for j = 0, E - 1, 3 do vals[5 * E + j + 1] = 1.5 end -- second place shared by every third column
      vals[5 * E + E // 2 + 1] = 2.5
      local params = { M = rows, E = E, k = shape.k }
      local c = { params = params, dtype = dtype, index = 1, id = "ties" }
      local where = string.format("moe_topk_gating %s E=%d k=%d planted ties", dtype, E, shape.k)
      impls = impls or with_triton(op, "moe_topk_gating planted ties")
      local ctx <close> = context.new(op, c)
      local ins = { logits = ctx.from_table(vals, dtype, { rows, E }) }
      local refs = op.module.outputs(c, ins, ctx)
      for _, t in pairs(refs) do verify.poison(t) end
      op.module.reference(c, ins, refs, ctx):run()
      local want = cpu.moe_topk_gating(c, host_all(ins))
      compare_cpu(where .. " reference indices vs CPU", refs.indices:to_host(), want.indices, 0, 0)
      local atol, rtol = config.tolerance(nil, dtype)
      compare_cpu(where .. " reference weights vs CPU", refs.weights:to_host(), want.weights, atol, rtol)
      check_impls(op, c, ctx, ins, refs, where, impls)
      print(string.format("ok  %s", where))
    end
  end
end

-- histogramming with values outside [0, num_bins) (never generated): none may be counted, by the
-- reference (against the CPU) and every configuration of cuda and triton; an odd length and
-- num_bins not a power of two.
local function check_hist_outliers(op)
  local n, bins = 10007, 100
  local vals = {}
  local odd = { -1, 100, 101, -2147483648, 2147483647, 4096, -100 }
  for i = 1, n do vals[i] = (i * 7919) % 137 end -- 0..136: 37 of the 137 values out of range
  for k, v in ipairs(odd) do vals[k * 1000] = v end
  local c = { params = { N = n, num_bins = bins }, dtype = "int32", index = 1, id = "outliers" }
  local where = "histogramming outliers"
  local ctx <close> = context.new(op, c)
  local ins = { input = ctx.from_table(vals, "int32", { n }) }
  local refs = op.module.outputs(c, ins, ctx)
  for _, t in pairs(refs) do verify.poison(t) end
  op.module.reference(c, ins, refs, ctx):run()
  compare_cpu(where .. " reference vs CPU", refs.hist:to_host(), cpu.histogramming(c, host_all(ins)), 0, 0)
  check_impls(op, c, ctx, ins, refs, where, with_triton(op, where))
  print(string.format("ok  %s", where))
end

return {
  order = {
    "softmax", "layernorm", "rmsnorm", "mean_reduction", "argmax", "l2_norm", "cross_entropy",
    "kl_divergence", "moe_topk_gating", "histogramming", "batch_normalization",
  },
  cpu = cpu,
  cases = CASES,
  triton_default = {
    l2_norm = true, cross_entropy = true, kl_divergence = true, moe_topk_gating = true,
    histogramming = true, batch_normalization = true,
  },
  extra = {
    argmax = check_argmax_ties, moe_topk_gating = check_moe_ties,
    histogramming = check_hist_outliers,
  },
}
