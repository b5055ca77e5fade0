-- context.lua: the ctx object handed to operator.lua: seeded tensor generators, NVRTC kernels
-- from the operator's folder, launch plans and scalars. It tracks every tensor it creates so
-- the case's device memory is released as soon as the case ends (ctx:close()).
local tensor = require("tb.tensor")
local launch = require("tb.launch")
local kernel = require("tb.kernel")
local dtypes = require("tb.dtype")
local errors = require("tb.error")
local opmod = require("tilebench.operator")
local grid = require("tilebench.grid")

local M = {}
local Ctx = {}
Ctx.__index = Ctx

local DTYPES = dtypes.info -- the one table (host/tb_dtype.c): C types and sizes

-- The canonical name of a dtype a tensor can hold (aliases accepted, as tb.tensor does).
local function canon(dtype)
  local d = DTYPES[dtype] and dtype or dtypes.aliases[dtype] -- exact spelling, like tb.tensor
  if not d or not DTYPES[d].tensor then error(string.format("unknown dtype '%s'", tostring(dtype)), 2) end
  return d
end

-- An out-of-memory failure travels as a tb.error of class 'oom' so the runner records status 'oom'.
function M.is_oom(e) return errors.class(e) == "oom" end
-- Raises an out-of-memory failure the runner records as status 'oom'.
function M.oom_error(message) error(errors.new("oom", message), 0) end

-- Compile-only mode (CI, no GPU): tensors are shape-only stand-ins, kernels are compiled with
-- NVRTC for M.compile_arch but not loaded, and plans are the step tables themselves.
local Fake = {}
Fake.__index = Fake
function Fake:numel() return self.n end
function Fake:nbytes() return self.n * DTYPES[self.dtype].size end
function Fake:ndim() return #self.shape end
function Fake:close() self.closed = true end
function Fake:is_closed() return self.closed == true end
function Fake:reshape(shape) return setmetatable({ dtype = self.dtype, shape = shape, n = self.n }, Fake) end
local function fake_tensor(shape, dtype)
  if type(shape) == "number" then shape = { shape } end
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return setmetatable({ dtype = dtype, shape = shape, n = n }, Fake)
end
M.compile_arch = "sm_90"

local function lfs_exists(path) return require("lfs").attributes(path, "mode") == "file" end

local function track(self, t, msg, code)
  if t == nil then
    if code == "oom" then M.oom_error(msg) end
    error(msg or "tensor allocation failed", 0)
  end
  self.tensors[#self.tensors + 1] = t
  return t
end

-- The headers operator kernels may include by name: operators/_shared/*.cuh, read once.
local headers_cache
local function shared_headers()
  if headers_cache then return headers_cache end
  local lfs = require("lfs")
  headers_cache = {}
  local dir = opmod.shared_dir()
  if lfs.attributes(dir, "mode") == "directory" then
    for f in lfs.dir(dir) do
      if f:match("%.cuh$") then
        local fh = assert(io.open(dir .. "/" .. f, "rb"))
        headers_cache[f] = fh:read("a")
        fh:close()
      end
    end
  end
  return headers_cache
end
M.shared_headers = shared_headers

-- The headers of `available` (name -> text) that `source` includes, directly or through one of
-- them: `#include "name"` lines, comments and #if not interpreted, so a guarded include still
-- counts. Only these are handed to NVRTC, and so hashed into the cache key: an edit to a header
-- recompiles the kernels that can see it and no others, and a header a kernel cannot see is not
-- offered (it would fail to compile, never compile stale).
function M.included_headers(source, available)
  local used, todo = {}, { source }
  while #todo > 0 do
    local text = table.remove(todo)
    for line in text:gmatch("[^\n]*") do
      local name = line:match('^%s*#%s*include%s*"([^"]+)"')
      if name and available[name] and not used[name] then
        used[name] = available[name]
        todo[#todo + 1] = available[name]
      end
    end
  end
  return used
end

-- Where ctx:kernel finds `file`: the operator's folder, else operators/_shared (a family's
-- kernels, e.g. gemm_wgmma.cu for both matmul operators).
function M.kernel_path(dir, file)
  local path = dir .. "/" .. file
  if lfs_exists(path) then return path end
  local shared = opmod.shared_dir() .. "/" .. file
  if lfs_exists(shared) then return shared end
  return path
end

local modules = {} -- per process: compile key -> module
local failures = {} -- per process: compile key -> the error it raised (the source does not change)

local function define_list(defines)
  local keys = {}
  for k in pairs(defines or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(defines[k]) end
  return table.concat(parts, ";")
end

-- Compiles (or fetches) the module of `file` in dir with defines/options.
function M.compile(dir, file, defines, options, load)
  local path = M.kernel_path(dir, file)
  local key = path .. "|" .. define_list(defines) .. "|" .. table.concat(options or {}, " ")
    .. (load == false and "|noload" or "")
  local m = modules[key]
  if m then return m end
  if failures[key] then error(failures[key], 0) end
  local fh, err = io.open(path, "rb")
  if not fh then error(string.format("kernel source %s: %s", path, err), 0) end
  local src = fh:read("a")
  fh:close()
  local opts = { name = file, defines = defines or {}, options = options or {},
                  headers = M.included_headers(src, shared_headers()) }
  if load == false then
    opts.load = false
    opts.arch = M.compile_arch
  end
  local mod, log = kernel.compile(src, opts)
  if not mod then
    failures[key] = errors.new("compile", string.format("%s does not compile:\n%s", path, tostring(log)))
    error(failures[key], 0)
  end
  modules[key] = mod
  return mod
end

-- Where `file` of the operator's folder is read from: itself, or the file ctx.sources names in
-- its place (a candidate implementation under evaluation, lua/tilebench/candidate.lua): dir, file.
function Ctx:source_of(file)
  local o = self.sources and self.sources[file]
  if o then return o.dir, o.file end
  return self.dir, file
end

function Ctx:kernel(file, name, defines, options)
  local dir, f = self:source_of(file)
  local mod = M.compile(dir, f, defines, options, not self.compile_only)
  if self.compile_only then return { compiled = mod, name = name } end
  return mod:get(name)
end

-- A Triton kernel of the operator's folder as one launch-plan step (lua/tilebench/triton.lua):
-- spec = {file, kernel, grid = {gx [, gy, gz]}, args = {name = tensor | ctx.i32(...) ...},
--         constexprs = {NAME = value}, num_warps, num_stages}. The cubin comes from the compile
-- cache (compiled through triton on a miss), is loaded once per process by the backend, and
-- the step passes the arguments in the kernel's parameter order, with the scratch buffers its
-- description asks for. In compile-only mode the step only names what was compiled.
local triton_modules = {} -- per process: key -> module
function Ctx:triton(spec)
  local tri = require("tilebench.triton")
  local sig, div = tri.signature(spec.args)
  local arch = self.compile_only and M.compile_arch
    or (self.props.cc_major and string.format("sm_%d%d", self.props.cc_major, self.props.cc_minor or 0))
    or self.props.arch
  local desc = { file = M.kernel_path(self:source_of(spec.file)), kernel = spec.kernel, signature = sig,
                 divisible = div, constexprs = spec.constexprs or {}, num_warps = spec.num_warps or 4,
                 num_stages = spec.num_stages or 3, arch = arch }
  local d, cubin, from_cache, key = tri.compile(desc)
  local g = spec.grid
  -- description, key and request: what tests/gpu/triton_launch.lua hands triton's own launcher
  local step = { grid = g, block = { d.block }, smem = d.shared, description = d, key = key, request = desc }
  local scratch = {}
  for _, p in ipairs(d.params) do
    if p.scratch and (p.size or 0) > 0 then
      scratch[p.name] = self.empty({ tri.grid_size(g) * d.num_ctas * p.size }, "uint8")
    end
  end
  if self.compile_only then
    step.fn = { compiled = { key = key, from_cache = from_cache }, name = d.name }
  else
    local mod = triton_modules[key]
    if not mod then
      mod = kernel.load_image(cubin)
      triton_modules[key] = mod
    end
    step.fn = mod:get(d.name)
    -- the kernel was specialised for 16-byte aligned pointers (triton.signature): hold them to it
    for argname, v in pairs(spec.args) do
      if tensor.is_tensor(v) and require("tb.python").describe(v).ptr % 16 ~= 0 then
        error(string.format("triton: %s: argument %s is not 16-byte aligned", d.name, argname), 0)
      end
    end
  end
  step.args = tri.pack(d, spec.args, scratch)
  return step
end

function Ctx:close()
  for i = #self.tensors, 1, -1 do
    local t = self.tensors[i]
    if not t:is_closed() then t:close() end
    self.tensors[i] = nil
  end
end
Ctx.__close = Ctx.close

-- op: a loaded operator (tilebench.operator); case: one of its cases.
function M.new(op, case, opts)
  opts = opts or {}
  local self = setmetatable({ tensors = {}, dir = op.dir, op = op, case = case,
                              compile_only = opts.compile_only }, Ctx)
  local seed = case.seed or opmod.case_seed(op.name, case)
  local function seed_for(name)
    if type(name) ~= "string" then error("ctx generators take a tensor name first (for its seed)", 3) end
    return grid.hash(tostring(seed) .. "/" .. name)
  end
  self.seed = seed
  if self.compile_only then
    local function fake(shape, dtype) return fake_tensor(shape, canon(dtype)) end
    self.empty = fake
    self.full = function(shape, dtype) return fake(shape, dtype) end
    self.randn = function(_, shape, dtype) return fake(shape, dtype) end
    self.rand = self.randn
    self.randint = self.randn
    self.from_table = function(values, dtype, shape) return fake(shape or #values, dtype) end
  else
  self.empty = function(shape, dtype) return track(self, tensor.empty(shape, canon(dtype))) end
  self.full = function(shape, dtype, value) return track(self, tensor.full(shape, canon(dtype), value)) end
  self.randn = function(name, shape, dtype, mean, std)
    return track(self, tensor.randn(shape, canon(dtype), seed_for(name), mean or 0, std or 1))
  end
  self.rand = function(name, shape, dtype, lo, hi)
    return track(self, tensor.rand(shape, canon(dtype), seed_for(name), lo or 0, hi or 1))
  end
  self.randint = function(name, shape, dtype, lo, hi)
    return track(self, tensor.randint(shape, canon(dtype), seed_for(name), lo, hi))
  end
  self.from_table = function(values, dtype, shape)
    return track(self, tensor.from_table(values, canon(dtype), shape))
  end
  end
  -- A TMA tensor map over tensor t (tb.launch.tensormap's spec), uploaded into a 128-byte
  -- uint8 tensor that a kernel takes as a pointer (the map lives in global memory).
  self.tensormap = function(t, spec)
    if self.compile_only then return fake_tensor({ 128 }, "uint8") end
    return self.from_table({ launch.tensormap(t, spec):byte(1, -1) }, "uint8")
  end
  self.plan = function(steps)
    if self.compile_only then return steps end
    return launch.plan(steps)
  end
  self.i32, self.i64, self.u32, self.f32, self.f64 = launch.i32, launch.i64, launch.u32, launch.f32, launch.f64
  self.u64 = launch.u64
  self.ctype = function(dtype) return DTYPES[canon(dtype)].c_type end
  self.dtype_size = function(dtype) return DTYPES[canon(dtype)].size end
  self.cdiv = function(a, b) return (a + b - 1) // b end
  if opts.props then
    self.props = opts.props
  elseif opts.compile_only then -- an H200's figures, so plans size their grids as they would there
    self.props = { name = "compile-only (H200 figures)", arch = M.compile_arch, family = "hopper",
                   sm_count = 132, warp_size = 32, max_threads_per_block = 1024, max_threads_per_sm = 2048,
                   l2_bytes = 60 * 1024 * 1024, smem_per_block_optin = 232448, smem_per_sm = 233472,
                   cc_major = 9, cc_minor = 0 }
  else
    self.props = require("tb.device").props()
  end
  return self
end

return M
