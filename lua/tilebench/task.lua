-- task.lua: the task materials of the generated-kernel track (issue 20): one Markdown document
-- telling a model (or a person) what file to write for an operator and a backend, assembled from
-- the operator's folder each time, so it never drifts from it: the comments heading config.yaml
-- and operator.lua, config.yaml itself, the torch reference, what the plan launches at each
-- dtype's representative case (recorded by running the operator's own plan in a compile-only
-- context, nothing compiled), the declarations the current source gives those kernels, the
-- conventions of the backend and how `tilebench eval` judges the file.
--
--   task.contract(op, backend, case) -> {spec, inputs, outputs, launches = {{kind, file, name,
--                                        defines | constexprs, grid, block, smem, num_warps,
--                                        num_stages, args = {text...}, own = bool}}}
--   task.declaration(text, backend, name) -> the kernel's declaration in a source | nil
--   task.document(op, backend)       -> the Markdown text
local context = require("tilebench.context")
local candidate = require("tilebench.candidate")
local launch = require("tb.launch")

local M = {}

local read = require("tilebench.util").read_file_if

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t or {}) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  return ks
end

local function is_fake(v) return type(v) == "table" and v.shape ~= nil and v.dtype ~= nil end

local function shape_text(t) return table.concat(t.shape, " x ") end

-- Names the tensors of ins and outs by identity, so a launch's arguments read as names.
local function namer(ins, outs)
  local names = {}
  for k, v in pairs(ins) do names[v] = "input " .. k end
  for k, v in pairs(outs) do names[v] = "output " .. k end
  return function(v)
    if is_fake(v) then
      return string.format("%s (%s[%s])", names[v] or "scratch", v.dtype, shape_text(v))
    end
    local ok, kind, value = pcall(launch.value, v)
    if ok then return string.format("%s %s", kind, tostring(value)) end
    return tostring(v)
  end
end

local function defines_text(d)
  local parts = {}
  for _, k in ipairs(sorted_keys(d)) do parts[#parts + 1] = k .. "=" .. tostring(d[k]) end
  return table.concat(parts, " ")
end

local function dims(v)
  if type(v) ~= "table" then return tostring(v or 1) end
  local out = {}
  for i = 1, #v do out[i] = tostring(v[i]) end
  return "(" .. table.concat(out, ", ") .. ")"
end

-- What the operator's plan for `backend` does at `case`: every kernel it launches, recorded (the
-- context's kernel and triton calls are replaced by recorders; no compiler runs).
function M.contract(op, backend, case)
  local spec, why = candidate.base(op, backend)
  if not spec then error(why, 0) end
  local ctx <close> = context.new(op, case, { compile_only = true })
  local records = {}
  ctx.kernel = function(_, file, name, defines)
    local r = { kind = "cuda", file = file, name = name, defines = defines or {} }
    records[#records + 1] = r
    return { compiled = { key = "recorded" }, name = name, record = r }
  end
  ctx.triton = function(_, s)
    local r = { kind = "triton", file = s.file, name = s.kernel, constexprs = s.constexprs or {},
                grid = s.grid, num_warps = s.num_warps or 4, num_stages = s.num_stages or 3, targs = s.args }
    records[#records + 1] = r
    return { triton_record = r }
  end
  local ins = op.module.inputs(case, ctx)
  local outs = op.module.outputs(case, ins, ctx)
  local steps = spec.plan(case, ins, outs, spec.default or {}, ctx)
  local name_of = namer(ins, outs)
  local launches = {}
  for _, st in ipairs(type(steps) == "table" and steps or {}) do
    local r = st.triton_record or (type(st.fn) == "table" and st.fn.record)
    if r then
      local l = { kind = r.kind, file = r.file, name = r.name, own = r.file == spec.source, args = {} }
      if r.kind == "cuda" then
        l.defines, l.grid, l.block, l.smem = r.defines, st.grid, st.block, st.smem or 0
        for i, a in ipairs(st.args or {}) do l.args[i] = name_of(a) end
      else
        l.constexprs, l.grid, l.num_warps, l.num_stages = r.constexprs, r.grid, r.num_warps, r.num_stages
        for _, k in ipairs(sorted_keys(r.targs)) do l.args[#l.args + 1] = k .. " = " .. name_of(r.targs[k]) end
      end
      launches[#launches + 1] = l
    end
  end
  local function tensors(t)
    local out = {}
    for _, k in ipairs(sorted_keys(t)) do
      if is_fake(t[k]) then out[#out + 1] = { name = k, dtype = t[k].dtype, shape = shape_text(t[k]) } end
    end
    return out
  end
  return { spec = spec, inputs = tensors(ins), outputs = tensors(outs), launches = launches }
end

-- The declaration of kernel `name` in a source: CUDA's `extern "C" __global__ ... name(...)` up
-- to its body, Python's `def name(...):` with the decorator line above it.
function M.declaration(text, backend, name)
  if backend == "triton" then
    local s, e = text:find("def%s+" .. name .. "%s*%b()%s*:")
    if not s then return nil end
    local before = text:sub(1, s - 1):match("(@[^\n]*\n)%s*$") or ""
    return before .. text:sub(s, e)
  end
  local pos = 1
  while true do
    local s = text:find('extern%s+"C"', pos)
    if not s then return nil end
    local body = text:find("{", s, true)
    if not body then return nil end
    local decl = text:sub(s, body - 1)
    if decl:find("[^%w_]" .. name .. "%s*%(") then return (decl:gsub("%s+$", "")) end
    pos = body
  end
end

local function header_comment(text, prefix)
  local out = {}
  for line in (text or ""):gmatch("[^\n]*") do
    local c = line:match("^" .. prefix .. " ?(.*)$")
    if not c then break end
    out[#out + 1] = c
  end
  return table.concat(out, "\n")
end

local function first_sentence(text)
  local c = header_comment(text, "//")
  return (c:gsub("\n", " "):match("^(.-%.)%s") or c:gsub("\n", " "))
end

local function fence(lang, text)
  return "```" .. lang .. "\n" .. text:gsub("\n$", "") .. "\n```\n"
end

local function cuda_conventions(op, lines)
  local ctypes = {}
  for _, d in ipairs(require("tilebench.operator").dtypes(op)) do
    ctypes[#ctypes + 1] = string.format("%s = `%s`", d, require("tb.dtype").info[d].c_type)
  end
  lines[#lines + 1] = "- The file is CUDA C++ compiled at run time by NVRTC for the device's architecture "
    .. "(sm_90 on an H200) with `-std=c++17` and one `-D NAME=VALUE` per define listed below; no nvcc, no host "
    .. "code, no linking: only the kernels the plan launches run, on tilebench's stream, with the grid, block "
    .. "and dynamic shared memory listed below."
  lines[#lines + 1] = "- Kernels are `extern \"C\" __global__` with exactly the parameters under \"The signature to keep\", in "
    .. "that order. The launch is the operator's: each kernel must write every output element under exactly the "
    .. "grid and block listed (a grid-stride loop covers any grid). `DTYPE` is the element type's C type: " .. table.concat(ctypes, ", ") .. "."
  local lfs = require("lfs")
  local dir = require("tilebench.operator").shared_dir()
  local hs = {}
  for f in lfs.dir(dir) do if f:match("%.cuh$") then hs[#hs + 1] = f end end
  table.sort(hs)
  lines[#lines + 1] = "- Headers you may `#include \"name\"`: the CUDA headers NVRTC ships (cuda_fp16.h, "
    .. "cuda_bf16.h, cuda_fp8.h) and tilebench's shared device headers:"
  for _, h in ipairs(hs) do
    lines[#lines + 1] = string.format("  - `%s`: %s", h, first_sentence(read(dir .. "/" .. h)):gsub("^" .. h:gsub("%.", "%%.") .. ":%s*", ""))
  end
end

local function triton_conventions(lines)
  local ok, version = require("tilebench.triton").available()
  lines[#lines + 1] = string.format("- The file is a Python module of `@triton.jit` kernels, compiled ahead of time by "
    .. "triton %s for the device's architecture (sm_90 on an H200) with the constexprs, num_warps and num_stages "
    .. "listed below, and launched from C by tilebench on its stream: no Python of the file runs during a "
    .. "measurement, only the kernel.", ok and version or "(not importable here: " .. tostring(version) .. ")")
  lines[#lines + 1] = "- It may import only " .. "triton, triton.language, math, functools and typing "
    .. "(anything else is refused before it is compiled); it may define helper `@triton.jit` functions."
  lines[#lines + 1] = "- Kernels must not need clusters (num_ctas > 1), cooperative launch, PDL or tensor descriptors. "
    .. "Pointers are 16-byte aligned; integer arguments that are multiples of 16 are specialised as such."
end

function M.document(op, backend)
  local spec, why = candidate.base(op, backend)
  if not spec then error(why, 0) end
  local dtypes = require("tilebench.operator").dtypes(op)
  local config = require("tilebench.config")
  local L = {}
  local function add(s) L[#L + 1] = s or "" end
  add(string.format("# Task: %s for tilebench's `%s` backend", op.name, backend))
  add()
  add(string.format("Write one file, a complete replacement for `%s` (the operator's `%s` implementation): "
    .. "the kernels listed under \"What the plan launches\", with the names and parameters given there. "
    .. "tilebench keeps everything else: the inputs, the launch (grid and configuration), the reference it "
    .. "verifies against and the timer.", spec.source, candidate.BACKENDS[backend].impl))
  add()
  add("## The operator")
  add()
  local cfg_text = read(op.dir .. "/config.yaml") or ""
  local desc = header_comment(read(op.dir .. "/operator.lua"), "%-%-")
  add(desc ~= "" and desc or header_comment(cfg_text, "#"))
  add()
  add(string.format("Category: %s. The current implementation: %s.", op.category, spec.description or spec.source))
  add()
  local torch_path = op.dir .. "/" .. op.name .. "_torch.py"
  local torch_text = read(torch_path)
  if torch_text then
    add("## The reference, in PyTorch eager (" .. op.name .. "_torch.py)")
    add()
    add("Your outputs must match what this computes, within the tolerances below. `forward` receives the "
      .. "inputs by name and `case` (the case's parameters and `dtype`).")
    add()
    add(fence("python", torch_text))
  end
  add("## config.yaml (the cases, the work formulas, the timing protocol)")
  add()
  add(fence("yaml", cfg_text))
  add("## What the plan launches")
  add()
  add("At each dtype's representative case (the one with the most bytes, where `tilebench eval` judges a file "
    .. "by default), the operator's own plan makes these launches; yours are the ones from `" .. spec.source .. "`.")
  local source_text = read(context.kernel_path(op.dir, spec.source)) or ""
  local declared = {}
  for _, d in ipairs(dtypes) do
    local case = candidate.representative(op, d)
    local c = M.contract(op, backend, case)
    add()
    add(string.format("### %s, case %s", d, case.id))
    add()
    for _, t in ipairs(c.inputs) do add(string.format("- input `%s`: %s, shape %s", t.name, t.dtype, t.shape)) end
    for _, t in ipairs(c.outputs) do
      local a, r = config.tolerance(op.config, t.dtype, "hopper")
      add(string.format("- output `%s`: %s, shape %s (verified with atol %g, rtol %g: |out - ref| <= atol + rtol * |ref|)",
        t.name, t.dtype, t.shape, a, r))
    end
    for _, l in ipairs(c.launches) do
      add(string.format("- %s `%s` from `%s`:", l.own and "**yours**:" or "the operator's own (not yours):", l.name, l.file))
      if l.kind == "cuda" then
        add(string.format("  grid %s, block %s, dynamic shared memory %d bytes; defines: %s", dims(l.grid), dims(l.block),
          l.smem, defines_text(l.defines)))
        add("  arguments, in order: " .. table.concat(l.args, "; "))
      else
        add(string.format("  grid %s programs, num_warps %d, num_stages %d; constexprs: %s", dims(l.grid), l.num_warps,
          l.num_stages, defines_text(l.constexprs)))
        add("  arguments by name: " .. table.concat(l.args, "; "))
      end
      if l.own then declared[l.name] = true end
    end
  end
  add()
  add("## The signature to keep")
  add()
  add("The current `" .. spec.source .. "` declares these kernels; keep the names and parameter lists:")
  add()
  for _, name in ipairs(sorted_keys(declared)) do
    local decl = M.declaration(source_text, backend, name)
    add(fence(backend == "triton" and "python" or "cuda", decl or ("(no declaration of " .. name .. " found)")))
  end
  add("## Conventions of the `" .. backend .. "` backend")
  add()
  if backend == "cuda" then cuda_conventions(op, L) else triton_conventions(L) end
  add("- Each call must compute every output from the inputs it is given: no state kept between calls, "
    .. "no writes to the inputs, no work outside the launches listed.")
  add()
  add("## How the file is judged (`tilebench eval --operator " .. op.name .. " --backend " .. backend .. " --impl FILE --json`)")
  add()
  add("1. It compiles (a compile error is the verdict `compile_error`, with the compiler's log).")
  add("2. Its outputs, written over poisoned buffers, verify against the reference (else `wrong`, with the first mismatches).")
  add("3. It is timed under the protocol of config.yaml's `benchmark` block (CUDA graphs, L2 flushed between runs).")
  add("4. Honesty checks after the timed runs (else `refused`, with the check and the reason): the inputs are "
    .. "unchanged; each timed run ran exactly the plan's kernels; the outputs, poisoned again, verify after the "
    .. "timed runs; and they verify on fresh inputs drawn with another seed into the same buffers.")
  add("5. The verdict reports the time, the roofline fraction rho and the speedup over PyTorch eager.")
  add()
  add("## Output format")
  add()
  add(string.format("Answer with the complete file `%s` in one fenced code block (```%s ... ```), nothing "
    .. "elided; text outside the block is ignored.", spec.source, backend == "triton" and "python" or "cuda"))
  return table.concat(L, "\n") .. "\n"
end

return M
