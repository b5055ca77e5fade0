-- launch_key (docs/OPERATOR_FORMAT.md): candidates an implementation's launch_key calls equal must
-- compile to the same kernel and launch it alike, since only one of them is screened. Checked on
-- every operator whose implementation has one, at the first, middle and last case of each dtype:
-- every valid candidate is planned in a compile-only context (NVRTC replaced by a stand-in that
-- names the kernel by its file and defines), and the plans of candidates with equal keys must have
-- the same kernels, grids, blocks, shared memory and arguments.
local kernel = require("tb.kernel")
local opmod = require("tilebench.operator")
local runner = require("tilebench.runner")
local context = require("tilebench.context")
local json = require("tilebench.json")

local real_compile = kernel.compile
local function stub(src, opts)
  local keys, parts = {}, {}
  for k in pairs(opts.defines or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(opts.defines[k]) end
  return { key = opts.name .. "|" .. table.concat(parts, ";"), from_cache = false }, ""
end

-- A plan's launches as text: per step the kernel's key, grid, block, shared memory, arguments.
local function signature(steps)
  local out = {}
  for i, st in ipairs(steps) do
    local args = {}
    for j, a in ipairs(st.args or {}) do
      args[j] = type(a) == "table" and (a.shape and "tensor" or json.encode(a)) or tostring(a)
    end
    out[i] = string.format("%s grid=%s block=%s smem=%s args=%s", st.fn and st.fn.compiled and st.fn.compiled.key or "?",
      table.concat(st.grid or {}, "x"), table.concat(st.block or {}, "x"), tostring(st.smem or 0), table.concat(args, ","))
  end
  return table.concat(out, "\n")
end

local function with_keys()
  local list = {}
  for _, name in ipairs(opmod.list()) do
    local ok, op = pcall(opmod.load, name)
    if ok then
      for impl, spec in pairs(op.module.implementations) do
        if spec.launch_key then list[#list + 1] = { op = op, impl = impl, spec = spec } end
      end
    end
  end
  table.sort(list, function(a, b) return a.op.name .. a.impl < b.op.name .. b.impl end)
  return list
end

describe("launch_key", function()
  before_each(function() kernel.compile = stub end)
  after_each(function() kernel.compile = real_compile end)

  it("is defined by the row operators", function()
    local names = {}
    for _, e in ipairs(with_keys()) do names[e.op.name] = true end
    for _, n in ipairs({ "softmax", "layernorm", "rmsnorm", "argmax", "mean_reduction" }) do
      assert.is_true(names[n], n .. " has no launch_key")
    end
  end)

  it("calls equal only candidates whose plans launch the same kernels alike", function()
    local groups, merged = 0, 0
    for _, e in ipairs(with_keys()) do
      for _, dtype in ipairs(opmod.dtypes(e.op)) do
        local cases = opmod.cases_of(e.op, dtype)
        for _, ci in ipairs({ 1, (#cases + 1) // 2, #cases }) do
          local case = cases[ci]
          local by_key = {}
          local ctx = context.new(e.op, case, { compile_only = true })
          local ins = e.op.module.inputs(case, ctx)
          local outs = e.op.module.outputs(case, ins, ctx)
          for _, cfg in ipairs(runner.candidates(e.spec)) do
            if not e.spec.valid or e.spec.valid(case, cfg) then
              local lk = e.spec.launch_key(case, cfg)
              local sig = signature(e.spec.plan(case, ins, outs, cfg, ctx))
              local where = string.format("%s %s %s case %d {%s}", e.op.name, e.impl, dtype, ci, runner.config_string(cfg))
              if by_key[lk] then
                assert.equal(by_key[lk], sig, where .. ": key '" .. lk .. "' joins different launches")
                merged = merged + 1
              else
                by_key[lk] = sig
                groups = groups + 1
              end
            end
          end
          ctx:close()
        end
      end
    end
    assert.is_true(groups > 0 and merged > 0, "nothing was compared")
  end)

  it("leaves one candidate of each equal set, preferring a seed", function()
    local op = opmod.load("softmax")
    local spec = op.module.implementations.cuda
    local case = opmod.cases_of(op, "fp16")[1]
    local kept, left = runner.distinct_candidates(spec, case)
    local keys = {}
    for _, c in ipairs(kept) do
      local lk = spec.launch_key(case, c.cfg)
      assert.is_nil(keys[lk], "two kept candidates share " .. lk)
      keys[lk] = c.key
    end
    local twin
    for k, v in pairs(left) do
      if v ~= "invalid" then twin = twin or { k, v } end
      if v ~= "invalid" then assert.equal(keys[spec.launch_key(case, (function()
        for _, cfg in ipairs(runner.candidates(spec)) do if runner.config_string(cfg) == k then return cfg end end
      end)())], v) end
    end
    assert.is_truthy(twin, "no candidate repeats another at this case")
    -- a seed among equal candidates is the one kept
    local kept2, left2 = runner.distinct_candidates(spec, case, { [twin[1]] = true })
    assert.equal(twin[1], left2[twin[2]])
    local found = false
    for _, c in ipairs(kept2) do if c.key == twin[1] then found = true end end
    assert.is_true(found)
  end)
end)
