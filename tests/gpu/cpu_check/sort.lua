-- cpu_check/sort.lua (GPU, part of tests/gpu/operators_cpu_check.lua): issue 18's sorting operators
-- (docs/SORTING.md): radix_sort, top_k_selection, bitonic_sort against a plain Lua sort exactly,
-- then planted values (duplicates past k, NaN of both signs, +-inf, signed zeros, subnormals;
-- negative and extreme int32, all-equal keys, the whole int32 range): NaN last in a sort, first
-- in a top-k, every value as often as it occurs.
-- The table it returns is described in cpu_check/common.lua.
local C = require("cpu_check.common")
local context = require("tilebench.context")
local verify = require("tb.verify")
local fail = C.fail
local compare_cpu = C.compare_cpu
local check_impls = C.check_impls
local host_all = C.host_all
local with_triton = C.with_triton
local case_id = C.case_id

local cpu = {}

-- ---- the sorting operators (docs/SORTING.md): values only, so a sort's only rules are the order
-- and the multiplicity of equal values; NaN is the largest value (last in a sort, first in a
-- top-k), -0.0 and +0.0 are equal values (either order passes: the comparison is by value).
local function sort_lt(a, b)
  if a ~= a then return false end -- NaN is never below anything
  if b ~= b then return true end
  return a < b
end

local function sorted_copy(t, desc)
  local out = {}
  for i = 1, #t do out[i] = t[i] end
  if desc then table.sort(out, function(a, b) return sort_lt(b, a) end) else table.sort(out, sort_lt) end
  return out
end

function cpu.radix_sort(c, h) return sorted_copy(h.input) end

function cpu.bitonic_sort(c, h) return sorted_copy(h.data) end

function cpu.top_k_selection(c, h)
  local all, out = sorted_copy(h.input, true), {}
  for i = 1, c.params.k do out[i] = all[i] end
  return out
end

local CASES = {
  -- one key; a partial tile; exactly one tile of 256 x 16 (4096) and of the default 384 x 20
  -- (7680) and one key past each; hundreds of tiles (the look-back across many, windows of LB
  -- words straddling tile 0), odd lengths
  radix_sort = { dtypes = { "int32" }, exact = true,
                 params = { { n = 1 }, { n = 7 }, { n = 4096 }, { n = 4097 }, { n = 7680 }, { n = 7681 },
                            { n = 70001 }, { n = 1000003 } } },
  -- k = N, k = 1, k a power of two and not, N below a vector, N % 4 tails, many blocks
  top_k_selection = { dtypes = { "fp32" }, exact = true,
                      params = { { N = 5, k = 5 }, { N = 1000, k = 1 }, { N = 4096, k = 16 }, { N = 33, k = 7 },
                                 { N = 70001, k = 1024 }, { N = 262147, k = 256 }, { N = 1000003, k = 64 },
                                 { N = 16385, k = 1000 } } },
  -- one value; shorter than a chunk; one past a power of two; a power of two; long strides
  -- (p = 2^22: several fused pairs and a single long step a stage)
  bitonic_sort = { dtypes = { "fp16", "fp32" }, exact = true,
                   params = { { n = 1 }, { n = 7 }, { n = 8193 }, { n = 16384 }, { n = 70001 }, { n = 1000003 },
                              { n = 3000000 } } },
}

-- The sorting operators' stated rules (docs/SORTING.md) on planted values: many duplicates (a value
-- repeated across tiles, chunks and the k-th place), NaN of both signs (0/0 is negative on x86),
-- +-inf, -0.0 beside +0.0, subnormals; int32 with negative keys and both extremes (the generator
-- makes neither), all-equal keys (INT_MAX among them, the padding's key) and the whole range over
-- many tiles. The reference against the CPU exactly, then every configuration of cuda and,
-- where it imports, triton against the reference: NaN last in a sort and first in a top-k, each
-- value as many times as it occurs.
local function planted_floats(len, dtype)
  local nan, pnan = 0 / 0, -(0 / 0)
  local tiny = dtype == "fp16" and 1e-7 or 1e-40
  local special = { nan, pnan, math.huge, -math.huge, -0.0, 0.0, tiny, -tiny, 2.5, 2.5, 2.5 }
  local vals = {}
  for i = 1, len do
    local r = (i * 7919) % 97
    if r < 11 then vals[i] = special[r + 1]
    elseif r < 40 then vals[i] = 2.5 -- the top finite value, repeated far beyond k
    else vals[i] = ((i * 104729) % 201) / 50 - 2 end -- 201 levels in [-2, 2]
  end
  return vals
end

-- The planted-value runs of an operator: { dtype, params, ins } each.
local function planted_runs(name)
  local runs = {}
  if name == "radix_sort" then
    local vals = {}
    for i = 1, 10007 do vals[i] = ((i * 7919) % 2001 - 1000) * 1000003 end
    for k, v in ipairs({ -2147483648, 2147483647, 0, -1, -2147483648, 2147483647 }) do vals[k * 1500] = v end
    runs[1] = { dtype = "int32", params = { n = #vals }, ins = { input = vals } }
    -- all keys equal (every tile one digit run, in every pass): 3 default tiles and one key past
    -- them; INT_MAX, whose key is the padding's (0xFFFFFFFF), in a partial last tile; INT_MIN below
    -- one tile
    local function const(len, v)
      local t = {}
      for i = 1, len do t[i] = v end
      return t
    end
    runs[#runs + 1] = { dtype = "int32", params = { n = 23041 }, ins = { input = const(23041, -5) } }
    runs[#runs + 1] = { dtype = "int32", params = { n = 9001 }, ins = { input = const(9001, 2147483647) } }
    runs[#runs + 1] = { dtype = "int32", params = { n = 5 }, ins = { input = const(5, -2147483648) } }
    -- the whole int32 range (every digit of every pass, negatives) over many tiles, both extremes
    -- planted: a 32-bit LCG's state as the signed value
    local lcg, x = {}, 12345
    for i = 1, 100003 do
      x = (x * 1664525 + 1013904223) % 4294967296
      lcg[i] = x >= 2147483648 and x - 4294967296 or x
    end
    for k, v in ipairs({ -2147483648, 2147483647, -2147483648, 2147483647, 0, -1 }) do lcg[k * 16001] = v end
    runs[#runs + 1] = { dtype = "int32", params = { n = #lcg }, ins = { input = lcg } }
  elseif name == "bitonic_sort" then
    for _, dtype in ipairs({ "fp16", "fp32" }) do
      local vals = planted_floats(20011, dtype)
      runs[#runs + 1] = { dtype = dtype, params = { n = #vals }, ins = { data = vals } }
    end
  else -- top_k_selection: the k-th place inside the NaNs, inside the run of 2.5, below it
    local vals = planted_floats(5003, "fp32")
    for _, k in ipairs({ 1, 30, 64, 1000 }) do
      runs[#runs + 1] = { dtype = "fp32", params = { N = #vals, k = k }, ins = { input = vals } }
    end
  end
  return runs
end

-- The implementations the planted values run through (with_triton's set).
local function planted_impls(op, impls_all)
  local impls = {}
  for _, i in ipairs(impls_all) do
    -- CUB orders floats by their bits: a NaN with the sign bit set sorts below -inf, where
    -- torch.topk counts every NaN as the largest (docs/SORTING.md); the int32 sort has no NaN
    if not (i == "lib" and op.name == "top_k_selection") then impls[#impls + 1] = i end
  end
  return impls
end

-- --compile-only: the planted runs' kernels, every configuration check_impls tries (Triton's
-- too: compiling tl.sort kernels on the GPU machine took minutes of the GPU test's time).
local function compile_sort_rules(op, compile)
  local impls = {}
  for _, i in ipairs(op.impls) do impls[#impls + 1] = i end
  if op.module.implementations.triton and require("tilebench.triton").available() then impls[#impls + 1] = "triton" end
  for _, r in ipairs(planted_runs(op.name)) do
    local c = { params = r.params, dtype = r.dtype, index = 1, id = "rules" }
    compile({ op = op, case = c, dtype = r.dtype })
    for _, impl in ipairs(planted_impls(op, impls)) do
      local spec = op.module.implementations[impl]
      if spec.source or spec.sources or impl == "triton" then
        for _, cfg in ipairs(C.configs_to_try(spec, c)) do
          compile({ op = op, case = c, dtype = r.dtype, impl = impl, cfg = cfg })
        end
      end
    end
  end
end

local function check_sort_rules(op)
  local name = op.name
  local runs = planted_runs(name)
  local impls = planted_impls(op, with_triton(op, name .. " planted values"))
  for _, r in ipairs(runs) do
    local c = { params = r.params, dtype = r.dtype, index = 1, id = "rules" }
    local where = string.format("%s %s %s planted values", name, r.dtype, case_id(r.params))
    local ok, err = xpcall(function()
      local ctx <close> = context.new(op, c)
      local ins = {}
      for k, v in pairs(r.ins) do ins[k] = ctx.from_table(v, r.dtype, { #v }) end
      local refs = op.module.outputs(c, ins, ctx)
      for _, t in pairs(refs) do verify.poison(t) end
      op.module.reference(c, ins, refs, ctx):run()
      compare_cpu(where .. " reference vs CPU", refs.out:to_host(1 << 24), cpu[name](c, host_all(ins)), 0, 0)
      check_impls(op, c, ctx, ins, refs, where, impls)
    end, debug.traceback)
    if not ok then fail("%s: %s", where, tostring(err)) end
    print(string.format("ok  %s", where))
  end
end

return {
  order = { "radix_sort", "top_k_selection", "bitonic_sort" },
  cpu = cpu,
  cases = CASES,
  triton_default = { radix_sort = true, top_k_selection = true, bitonic_sort = true },
  -- radix_sort's plan keeps tile counters and look-back words in its workspace and clears them
  -- itself each run: the verified run is a third, as the timed runs are later runs
  rerun = { radix_sort = 3 },
  extra = {
    radix_sort = check_sort_rules, top_k_selection = check_sort_rules,
    bitonic_sort = check_sort_rules,
  },
  compile_extra = {
    radix_sort = compile_sort_rules, top_k_selection = compile_sort_rules, bitonic_sort = compile_sort_rules,
  },
}
