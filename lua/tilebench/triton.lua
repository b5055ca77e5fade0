-- triton.lua: Triton kernels compiled ahead of time and launched from C. An operator's
-- operators/<name>/<name>_triton.py holds @triton.jit functions; its `triton` implementation's
-- plan calls ctx:triton{...} (context.lua), which gets the kernel's cubin and description from
-- the compile cache (compiling it through host/python/tb_triton.py in the embedded interpreter on
-- a miss) and returns a launch-plan step: the cubin loaded by the backend's module loader, the
-- arguments packed in the description's parameter order. No Python runs during a measurement.
--
--   triton.NAME                         "triton"
--   triton.prepare(spec, name, dir)     completes an operator's `triton` implementation table (the
--                                       loader calls it): source, description, supports
--   triton.available()                  -> true, version | false, reason   (asked once per process)
--   triton.versions_for(impls)          -> {triton} | {error} | nil (no triton in impls)
--   triton.type_of(value)               -> triton type of a tensor (pointer) or tb.launch scalar
--   triton.signature(args)              -> {name = type}, {names divisible by 16}
--   triton.key(desc)                    -> the cache key (source, config, triton version, arch)
--   triton.compile(desc)                -> description, cubin, from_cache   (raises a `compile` tb.error)
--   triton.pack(description, args, scratch) -> the argument list in the kernel's parameter order
--   triton.grid_size(grid)              -> the number of programs (for scratch sizes)
--   triton.record_launches(ctx)         -> a list that fills with {spec, step} as ctx's plans call
--                                       ctx:triton (checks against triton's own launcher and Proton)
--   triton.launch_request(l)            -> a recorded launch as triton's launcher takes it: the
--                                       compile request, grid, arch number, the cubin tilebench
--                                       launches (hex, SHA-256) and its shared memory
local json = require("tilebench.json")
local errors = require("tb.error")

local M = { NAME = "triton", KEY_VERSION = "tilebench-triton-1" }

-- tilebench dtype -> triton's element type name
M.ELEMENT = { fp32 = "fp32", fp16 = "fp16", bf16 = "bf16", fp8_e4m3 = "fp8e4nv", fp8_e5m2 = "fp8e5", int8 = "i8", uint8 = "u8",
              int32 = "i32", int64 = "i64", fp64 = "fp64", int16 = "i16" }
-- tb.launch scalar kind -> triton scalar type
local SCALAR = { i32 = "i32", i64 = "i64", u32 = "u32", u64 = "u64", f32 = "fp32", f64 = "fp64" }
-- triton scalar type -> the tb.launch constructor that packs it (the layout the kernel expects)
local PACK = { i32 = "i32", i64 = "i64", u32 = "u32", u64 = "u64", fp32 = "f32", fp64 = "f64" }

function M.driver() return TILEBENCH_HOME .. "/host/python/tb_triton.py" end

local probed -- {ok, version or reason}
function M.available()
  if not probed then
    local py = require("tb.python")
    local ok, why = py.available()
    if not ok then
      probed = { false, "no python: " .. tostring(why) }
    else
      local okc, out = pcall(py.call, "triton_version", M.driver(), 0)
      local info = okc and json.decode(out) or { error = tostring(out) }
      if info.error then probed = { false, info.error } else probed = { true, info.triton } end
    end
  end
  return probed[1], probed[2]
end

function M.versions_for(impls)
  for _, i in ipairs(impls or {}) do
    if i == M.NAME then
      local ok, v = M.available()
      if ok then return { triton = v } end
      return { error = v }
    end
  end
  return nil
end

-- The loader's part: the implementation's source is <name>_triton.py (precompile.lua compiles
-- implementations that have one), and it is `unsupported` with the reason where triton does not
-- import, before the operator's own supports is asked.
function M.prepare(spec, name, dir)
  spec.source = spec.source or (name .. "_triton.py")
  spec.description = spec.description or ("Triton (" .. spec.source .. "), compiled ahead of time, launched from C")
  local own = spec.supports
  spec.supports = function(case, ctx)
    local ok, why = M.available()
    if not ok then return false, why end
    if own then return own(case, ctx) end
    return true
  end
end

-- a device tensor, or compile-only mode's stand-in (a table with dtype and numel)
local function is_tensor(v)
  if type(v) == "userdata" then return require("tb.tensor").is_tensor(v) end
  return type(v) == "table" and type(v.dtype) == "string" and v.numel ~= nil
end

function M.type_of(v)
  if is_tensor(v) then
    local e = M.ELEMENT[v.dtype]
    if not e then error("triton: no triton element type for dtype " .. v.dtype, 0) end
    return "*" .. e
  end
  local ok, kind, value = pcall(require("tb.launch").value, v)
  if ok and SCALAR[kind] then return SCALAR[kind], value end
  error("triton: an argument must be a tensor or a tb.launch scalar (ctx.i32, ctx.i64, ctx.f32, ...), got "
    .. type(v), 0)
end

-- The signature of a call: each argument's triton type, and the integers that are multiples of
-- 16 (what triton's own launcher specialises on, so the AOT kernel is the one the JIT would
-- build; pointers are always taken as 16-byte aligned: tilebench's tensors are allocations).
function M.signature(args)
  local sig, div = {}, {}
  for name, v in pairs(args) do
    local t, value = M.type_of(v)
    sig[name] = t
    if (t == "i32" or t == "i64" or t == "u32" or t == "u64") and value % 16 == 0 then div[#div + 1] = name end
  end
  table.sort(div)
  return sig, div
end

local function read(path)
  local fh, err = io.open(path, "rb")
  if not fh then error(string.format("triton kernel source %s: %s", path, err), 0) end
  local s = fh:read("a")
  fh:close()
  return s
end

-- Length-prefixed fields, so no two inputs can run together into the same key.
local function field(parts, tag, value)
  value = tostring(value)
  parts[#parts + 1] = tag .. ":" .. #value .. ":" .. value
end

local function sorted_pairs_string(t)
  local keys = {}
  for k in pairs(t or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do out[#out + 1] = k .. "=" .. tostring(t[k]) end
  return table.concat(out, ",")
end

-- desc: {file, kernel, signature, constexprs, divisible, num_warps, num_stages, arch}; version:
-- triton's. The source is the whole file (a kernel may call the file's other functions); the
-- compile driver's source counts too, since it writes the description.
function M.key(desc, version)
  local parts = {}
  field(parts, "version", M.KEY_VERSION)
  field(parts, "driver", read(M.driver())) -- tb_triton.py makes the description
  field(parts, "source", read(desc.file))
  field(parts, "kernel", desc.kernel)
  field(parts, "signature", sorted_pairs_string(desc.signature))
  field(parts, "constexprs", sorted_pairs_string(desc.constexprs))
  field(parts, "divisible", table.concat(desc.divisible or {}, ","))
  field(parts, "num_warps", desc.num_warps)
  field(parts, "num_stages", desc.num_stages)
  field(parts, "triton", version)
  field(parts, "arch", desc.arch)
  return require("tb.kernel").sha256(table.concat(parts, "\n"))
end

local function unhex(h)
  return (h:gsub("%x%x", function(b) return string.char(tonumber(b, 16)) end))
end

local compiled, failures = {}, {} -- per process: key -> {description, cubin}, key -> error

-- The description and cubin of desc, from the cache or compiled (and stored: the .json first, so
-- a reader that finds the cubin finds its description). Raises a `compile` tb.error when triton
-- refuses the kernel (remembered, so a group's later cases do not compile it again).
function M.compile(desc)
  local ok, version = M.available()
  if not ok then error(errors.new("compile", "triton: " .. tostring(version)), 0) end
  local kernel = require("tb.kernel")
  local key = M.key(desc, version)
  if compiled[key] then return compiled[key][1], compiled[key][2], true, key end
  if failures[key] then error(failures[key], 0) end
  local djson, cubin = kernel.cache_read(key .. ".json"), kernel.cache_read(key .. ".cubin")
  if djson and cubin then
    local d = json.decode(djson)
    compiled[key] = { d, cubin }
    return d, cubin, true, key
  end
  local req = { driver = M.driver(), file = desc.file, kernel = desc.kernel, signature = desc.signature,
                constexprs = desc.constexprs or {}, divisible = desc.divisible or {},
                num_warps = desc.num_warps, num_stages = desc.num_stages, arch = tonumber((desc.arch:gsub("^sm_", ""))) }
  local r = json.decode(require("tb.python").call("triton_compile", json.encode_sorted(req), 0))
  if r.error or r.unsupported then
    failures[key] = errors.new("compile", string.format("%s: %s does not compile with triton %s:\n%s",
      desc.file, desc.kernel, version, r.error or r.unsupported))
    error(failures[key], 0)
  end
  local d = r.description
  cubin = unhex(r.cubin_hex)
  kernel.cache_write(key .. ".json", json.encode_sorted(d))
  kernel.cache_write(key .. ".cubin", cubin)
  compiled[key] = { d, cubin }
  return d, cubin, false, key
end

function M.grid_size(grid)
  return (grid[1] or 1) * (grid[2] or 1) * (grid[3] or 1)
end

-- The launch arguments in the kernel's parameter order. args: {name = tensor | tb.launch scalar
-- | number}; a number is packed as its parameter's type. scratch: {name = tensor} for the
-- scratch parameters whose size is > 0 (a NULL pointer, u64 0, otherwise, as triton's launcher
-- passes). Raises naming the parameter that is missing or does not match.
function M.pack(description, args, scratch)
  local launch = require("tb.launch")
  local out, used = {}, {}
  for i, p in ipairs(description.params) do
    local v
    if p.scratch then
      v = (p.size or 0) > 0 and (scratch or {})[p.name] or nil
      if (p.size or 0) > 0 and not v then
        error(string.format("triton: %s needs a %s buffer of %d bytes per program", description.name, p.name, p.size), 0)
      end
      v = v or launch.u64(0)
    else
      v = args[p.name]
      used[p.name] = true
      if v == nil then error(string.format("triton: %s: no argument for parameter %d (%s %s)",
        description.name, i, p.type, p.name), 0) end
      if p.kind == "ptr" then
        if not is_tensor(v) then error(string.format("triton: %s: parameter %s is %s, a tensor is needed",
          description.name, p.name, p.type), 0) end
        local want = p.type:sub(2)
        if M.ELEMENT[v.dtype] ~= want then error(string.format("triton: %s: parameter %s is %s, the tensor is %s",
          description.name, p.name, p.type, v.dtype), 0) end
      else
        local ctor = PACK[p.type]
        if not ctor then error(string.format("triton: %s: parameter %s has type %s, which tilebench does not pack",
          description.name, p.name, p.type), 0) end
        if type(v) == "number" then
          v = launch[ctor](v)
        else
          local t, value = M.type_of(v)
          if t ~= p.type then error(string.format("triton: %s: parameter %s is %s, the argument is %s",
            description.name, p.name, p.type, t), 0) end
          v = launch[ctor](value)
        end
      end
    end
    out[i] = v
  end
  for name in pairs(args) do
    if not used[name] then error(string.format("triton: %s has no parameter %s", description.name, name), 0) end
  end
  return out
end

-- Launches recorded from a context: wraps ctx:triton so that every plan step it makes is also
-- appended (with the spec the plan gave) to the list returned.
function M.record_launches(ctx)
  local launched = {}
  local own = ctx.triton
  ctx.triton = function(self, s)
    local step = own(self, s)
    launched[#launched + 1] = { spec = s, step = step }
    return step
  end
  return launched
end

-- A recorded launch {spec, step} as host/python/tb_triton.py's adopt_binary and launcher take it
-- (the arguments are the caller's: pointers for a launch on tilebench's memory, shapes for one on
-- fresh tensors).
function M.launch_request(l)
  local kernel = require("tb.kernel")
  local r = {}
  for k, v in pairs(l.step.request) do r[k] = v end
  r.driver = M.driver()
  r.grid = l.step.grid
  r.arch = tonumber((tostring(r.arch):gsub("^sm_", "")))
  r.name = l.step.description and l.step.description.name or nil
  local cubin = assert(kernel.cache_read(l.step.key .. ".cubin"))
  r.cubin_sha256 = kernel.sha256(cubin)
  r.cubin_hex = cubin:gsub(".", function(c) return string.format("%02x", c:byte()) end)
  r.shared = l.step.description.shared
  return r
end

return M
