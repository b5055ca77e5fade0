-- cases.lua: the cases bench/torch/crosscheck.py times, as JSON on stdout: for each operator and
-- dtype, its first case (what `tilebench run --cases first` runs) with the inputs' names, shapes
-- and dtypes taken from the operator's own op.inputs (compile-only context: no GPU needed), so
-- the plain Python process builds the very tensors tilebench hands to the torch call.
-- usage: tilebench script bench/torch/cases.lua [OPERATOR ...]
local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local json = require("tilebench.json")

local names = #arg > 0 and arg or opmod.list()
local out = {}
for _, name in ipairs(names) do
  local op = opmod.load(name)
  for _, dtype in ipairs(op.dtypes) do
    local case = opmod.cases_of(op, dtype)[1]
    case.seed = case.seed or opmod.case_seed(op.name, case)
    local ctx <close> = context.new(op, case, { compile_only = true })
    local inputs = {}
    for tname, t in pairs(op.module.inputs(case, ctx)) do
      inputs[#inputs + 1] = { name = tname, shape = t.shape, dtype = t.dtype }
    end
    table.sort(inputs, function(a, b) return a.name < b.name end)
    local params = {}
    for k, v in pairs(case.params) do params[k] = v end
    params.dtype = case.dtype
    out[#out + 1] = { operator = name, dtype = case.dtype, case_id = case.id, params = params,
                      file = op.dir .. "/" .. name .. "_torch.py", inputs = inputs }
  end
end
io.write(json.encode(out), "\n")
