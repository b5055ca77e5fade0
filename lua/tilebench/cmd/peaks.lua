-- cmd/peaks.lua: `tilebench peaks --gpu LABEL` measures the present device's ceilings -- copy
-- bandwidth, fp32 FMA rate and cuBLASLt matrix rates per dtype -- into peaks/<label>.json, the
-- denominators of rho (metrics.lua).
local options = require("tilebench.options")

local M = {}
local spec = {
  { name = "gpu", type = "label", metavar = "LABEL", desc = "label of the device: writes peaks/LABEL.json (required)" },
  { name = "quick", type = "flag", desc = "small buffers, one shape, one algorithm (a smoke run, not a ceiling)" },
  { name = "out", type = "string", metavar = "DIR", desc = "directory for LABEL.json (default: peaks/ in the tilebench tree)" },
}
M.summary = "measure the GPU's memory ceilings, fp32 and matrix peaks into peaks/<label>.json"
M.usage = "usage: tilebench peaks --gpu LABEL [--quick] [--out DIR]\n\n" .. options.help(spec) .. "\n"
  .. "\nMeasures: the memory ceiling, the best sustained rate of four traffic mixes (read-only, 2 reads :\n"
  .. "1 write, copy, the driver's device-to-device copy; bytes read plus written; >= 2 GiB per buffer,\n"
  .. "best of a few grids) and the same mixes near the L2 (1/4 to 8 x L2, L2 evicted before each run),\n"
  .. "the copy kernel's rate (bandwidth_gbs, TileBench's ceiling), the fp32 FMA rate, and cuBLASLt\n"
  .. "matmul rates for fp16, bf16, tf32, fp8 e4m3\n"
  .. "(with and without fast accumulation) and int8 (TOP/s): the best over large shapes and the\n"
  .. "heuristic's first algorithms. Times are medians of 15 timed runs after 3 warm-ups, L2 not flushed.\n"

-- Every measurement: 3 warm-up and 15 timed runs, L2 not flushed (a ceiling, not a case).
local PROTOCOL = { flush = false, mode = "fixed", warmup = 3, ["repeat"] = 15 }
-- The rates near the L2 (bandwidth_by_size): a case's eviction before every run, more samples
-- (the runs are short).
local SIZE_PROTOCOL = { flush = true, mode = "fixed", warmup = 3, ["repeat"] = 30 }

-- Matrix rates: what cuBLASLt is asked for each entry of matrix_tflops.
M.MATRIX = {
  { key = "fp16", ab = "fp16", c = "fp16" },
  { key = "bf16", ab = "bf16", c = "bf16" },
  { key = "tf32", ab = "fp32", c = "fp32", compute = "tf32" },
  { key = "fp8_e4m3", ab = "fp8_e4m3", c = "bf16", b_transposed = true, fp8 = { fast_accum = false, out_dtype = "bf16" } },
  { key = "fp8_e4m3_fast_accum", ab = "fp8_e4m3", c = "bf16", b_transposed = true, fp8 = { fast_accum = true, out_dtype = "bf16" } },
  { key = "int8", ab = "int8", c = "int32", b_transposed = true },
}

function M.plan_sizes(quick)
  return {
    copy_bytes = quick and 256 * 2 ^ 20 or 2 * 2 ^ 30,
    copy_grids = quick and { 8 } or { 4, 8, 16, 32 },   -- blocks per SM
    -- working sets near the L2, in L2 sizes (bandwidth_by_size; peaks.L2_NEAR is 4)
    l2_factors = quick and { 0.5, 2 } or { 0.25, 0.5, 1, 1.5, 2, 3, 4, 6, 8 },
    fma_iters = quick and 1024 or 8192,
    shapes = quick and { { 4096, 4096, 4096 } } or { { 8192, 8192, 8192 }, { 16384, 16384, 8192 } },
    algos = quick and 1 or 3,
  }
end

-- TFLOP/s (or TOP/s) of an m x n x k matmul taking ms milliseconds.
function M.tflops(m, n, k, ms) return 2 * m * n * k / (ms * 1e-3) / 1e12 end
function M.gbs(bytes, ms) return bytes / (ms * 1e-3) / 1e9 end

local function alloc(tensor, shape, dtype)
  local t, msg = tensor.empty(shape, dtype)
  if not t then error(string.format("peaks: allocating %s %s: %s", table.concat(shape, "x"), dtype, tostring(msg)), 0) end
  return t
end

-- Random operands (tensor cores draw less power on zeros, which would flatter the rate).
local function random(tensor, shape, dtype, seed)
  local t, msg
  if dtype == "int8" then t, msg = tensor.randint(shape, dtype, seed, -64, 65)
  else t, msg = tensor.randn(shape, dtype, seed, 0, 1) end
  if not t then error(string.format("peaks: generating %s %s: %s", table.concat(shape, "x"), dtype, tostring(msg)), 0) end
  return t
end

local function log(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end

function M.run(args)
  local opts = options.parse(args, spec, "peaks")
  if not opts.gpu then options.usage_error("peaks: --gpu LABEL is required (see 'tilebench peaks --help')") end
  local device, tensor, launch = require("tb.device"), require("tb.tensor"), require("tb.launch")
  local timer, kernel, blas = require("tb.timer"), require("tb.kernel"), require("tb.blas")
  local json = require("tilebench.json")
  local props = device.props()
  local sizes = M.plan_sizes(opts.quick)
  -- A ceiling is what the device sustains: a short fixed protocol, and no throttle filter when
  -- every sample runs under it (heavy tensor-core loads do on an H200); clocks are recorded.
  local clocks = {}
  local function median(plan, what, protocol)
    local res = require("tilebench.runner").measure(plan, protocol or PROTOCOL)
    if what then clocks[what] = res.sm_clock_mhz end
    return res.median
  end
  local t0 = os.clock()

  -- The copy embedded in the binary, as every host kernel (not the source tree's: the two can differ).
  local src = assert(kernel.host_source("peaks.cu"), "peaks.cu is not embedded in this build")
  local mod, clog = kernel.compile(src, { name = "peaks.cu" })
  if not mod then error("peaks: host/kernels/peaks.cu does not compile:\n" .. tostring(clog), 0) end
  local method = { timer = "tb.timer.measure median, fixed 3 warm-up + 15 runs, no L2 flush", sm_clock_mhz = clocks }

  local bandwidth, best_grid = 0, nil
  local mixes, by_size, ceiling = {}, {}, 0
  do
    -- Memory ceilings (issue 19): the best sustained rate of each traffic mix the suite's kernels
    -- have -- read-only, 2 reads : 1 write, copy, and the driver's device-to-device copy -- at
    -- working sets far past the L2, over a few grids; memory_ceiling_gbs is the best of them.
    -- bandwidth_gbs stays the copy kernel's rate (TileBench's ceiling, rho_tilebench's).
    local l2 = props.l2_bytes or 0
    local buf = math.max(sizes.copy_bytes, l2 * 8) // 2 ^ 20 * 2 ^ 20 -- bytes per buffer
    local a <close> = alloc(tensor, { buf }, "uint8")
    local b <close> = alloc(tensor, { buf }, "uint8")
    local c <close> = alloc(tensor, { buf }, "uint8")
    local sink <close> = alloc(tensor, { props.sm_count * 32 * 256 * 16 }, "uint8")
    -- Each mix: its plan over `bytes` per buffer at per_sm blocks per SM (nil: the driver's copy,
    -- one grid), the bytes it moves (read + written) and its working set.
    local MIXES = {
      { key = "read", kernel = "peak_read", moved = 1,
        args = function(n) return { a, sink, launch.i64(n // 16) } end },
      { key = "read2_write1", kernel = "peak_read2", moved = 3,
        args = function(n) return { a, b, c, launch.i64(n // 16) } end },
      { key = "copy", kernel = "peak_copy", moved = 2,
        args = function(n) return { a, b, launch.i64(n // 16) } end },
      { key = "driver_copy", moved = 2 },
    }
    local function mix_plan(mix, n, per_sm)
      if not mix.kernel then return launch.plan{ { copy = { dst = b, src = a, bytes = n } } } end
      return launch.plan{ { fn = mod:get(mix.kernel), grid = { props.sm_count * per_sm }, block = { 256 },
                            args = mix.args(n) } }
    end
    -- The driver's copy is no kernel CUPTI records: it is timed by events (a few us on ~1 ms).
    local function best_rate(mix, n, protocol, grids, what)
      local best, grid = 0, nil
      for _, per_sm in ipairs(mix.kernel and grids or { 0 }) do
        local proto = protocol
        if not mix.kernel then
          proto = {}
          for k, v in pairs(protocol) do proto[k] = v end
          proto.clock = "events"
        end
        local ok, ms = pcall(median, mix_plan(mix, n, per_sm), what, proto)
        if ok then
          local gbs = M.gbs(mix.moved * n, ms)
          if gbs > best then best, grid = gbs, per_sm end
        else
          log("%s at %d bytes: %s", mix.key, n, tostring(ms))
        end
      end
      return best > 0 and best or nil, grid
    end
    local mix_method = {}
    for _, mix in ipairs(MIXES) do
      local gbs, grid = best_rate(mix, buf, PROTOCOL, sizes.copy_grids, mix.key)
      log("%-13s %5.0f MiB per buffer: %s GB/s", mix.key, buf / 2 ^ 20, gbs and ("%.0f"):format(gbs) or "failed")
      mixes[mix.key] = gbs or json.null
      mix_method[mix.key] = { blocks_per_sm = grid, working_set_bytes = mix.moved * buf,
                              kernel = mix.kernel or "cuMemcpyDtoDAsync (events clock)" }
      if gbs and gbs > ceiling then ceiling = gbs end
      if mix.key == "copy" then bandwidth, best_grid = gbs or 0, grid end
    end
    if bandwidth <= 0 then error("peaks: the copy kernel gave no time (see the messages above)", 0) end
    -- Near the L2: the best mix at working sets from L2/4 to 8 x L2, each run after the L2 is
    -- evicted as a case's is (the case protocol's flush), at the grid each mix liked best.
    if l2 > 0 then
      for _, f in ipairs(sizes.l2_factors) do
        local best = 0
        for _, mix in ipairs(MIXES) do
          local n = math.floor(f * l2 / mix.moved / 4096) * 4096
          local g = mix_method[mix.key].blocks_per_sm
          local gbs = n > 0 and best_rate(mix, n, SIZE_PROTOCOL, { g or 8 })
          if gbs and gbs > best then best = gbs end
        end
        if best > 0 then by_size[#by_size + 1] = { bytes = math.floor(f * l2), gbs = best } end
        log("working set %.2f x L2 (%.0f MiB): best %.0f GB/s", f, f * l2 / 2 ^ 20, best)
      end
    end
    method.bandwidth = { buffer_bytes = buf, kernel = "peak_copy (16-byte words, 4 loads in flight)",
                         blocks_per_sm = best_grid, counted = "bytes read + bytes written", mixes = mix_method,
                         by_size = "best mix per working set, L2 evicted before each run (fixed 3 warm-up + 30 runs)",
                         driver_copy = "a plan copy step (cuMemcpyDtoDAsync), timed by events" }
  end

  -- fp32 FMA rate: 8 blocks of 256 threads per SM, 8 independent chains per thread.
  local fp32_tflops
  do
    local out <close> = alloc(tensor, { props.sm_count * 8 * 256 }, "fp32")
    local blocks = props.sm_count * 8
    local plan = launch.plan{ { fn = mod:get("peak_fma"), grid = { blocks }, block = { 256 },
                                args = { out, launch.i32(sizes.fma_iters), launch.f32(0.999999), launch.f32(1e-7) } } }
    fp32_tflops = 2 * 8 * sizes.fma_iters * blocks * 256 / (median(plan, "fp32_fma") * 1e-3) / 1e12
    log("fp32 FMA: %.1f TFLOP/s", fp32_tflops)
    method.fp32 = { kernel = "peak_fma (8 independent chains per thread)", blocks = blocks, threads = 256,
                    iters = sizes.fma_iters }
  end

  -- Matrix rates through cuBLASLt.
  local matrix, matrix_method = {}, {}
  for _, d in ipairs(M.MATRIX) do
    local best, where = 0, nil
    local ok, err = pcall(function()
      for _, s in ipairs(sizes.shapes) do
        local m, n, k = s[1], s[2], s[3]
        local a <close> = random(tensor, { m, k }, d.ab, 11)
        local b <close> = random(tensor, d.b_transposed and { n, k } or { k, n }, d.ab, 12)
        local c <close> = alloc(tensor, { m, n }, d.c)
        local first = blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, compute = d.compute,
                                   b_transposed = d.b_transposed, fp8 = d.fp8 }
        local count = first:algo_count()
        first:close()
        for i = 1, math.min(count, sizes.algos) do
          local op <close> = blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, compute = d.compute,
                                          b_transposed = d.b_transposed, fp8 = d.fp8, algo_index = i }
          local okm, ms = pcall(median, launch.plan{ { call = op } }, d.key)
          if okm then
            local r = M.tflops(m, n, k, ms)
            log("%-20s %5dx%5dx%5d algo %d/%d: %.1f %s", d.key, m, n, k, i, count, r, d.ab == "int8" and "TOP/s" or "TFLOP/s")
            if r > best then best, where = r, { m = m, n = n, k = k, algo_index = i, algo_count = count } end
          else
            log("%-20s %5dx%5dx%5d algo %d/%d failed: %s", d.key, m, n, k, i, count, tostring(ms))
          end
        end
      end
    end)
    if not ok then log("%s: %s", d.key, tostring(err)) end
    matrix[d.key] = best > 0 and best or json.null
    matrix_method[d.key] = where or { error = tostring(err or "no algorithm ran") }
    collectgarbage()
  end
  method.matrix = { library = "cuBLASLt", shapes = sizes.shapes, algos_tried = sizes.algos,
                    per_dtype = matrix_method, workspace_bytes = 32 * 2 ^ 20,
                    note = "fp8: unit scales, bf16 output, TN; int8: int32 output, TN; tf32: fp32 data, COMPUTE_32F_FAST_TF32" }

  local versions = device.versions()
  local bv = blas.version()
  local doc = {
    gpu = opts.gpu,
    device = { name = props.name, arch = props.arch, sm_count = props.sm_count, clock_khz = props.clock_khz,
               mem_clock_khz = props.mem_clock_khz, l2_bytes = props.l2_bytes, total_mem = props.total_mem },
    measured_at = os.date("!%Y-%m-%dT%H:%M:%SZ"),
    tilebench = { version = TILEBENCH_VERSION, git_sha = TILEBENCH_GIT_SHA },
    driver = versions.driver,
    cublaslt_version = bv.version,
    bandwidth_gbs = bandwidth,
    memory_ceiling_gbs = ceiling > 0 and ceiling or nil,
    bandwidth_mixes = mixes,
    bandwidth_by_size = #by_size > 0 and by_size or nil,
    fp32_tflops = fp32_tflops,
    matrix_tflops = matrix,
    quick = opts.quick or false,
    method = method,
  }
  local dir = opts.out or (TILEBENCH_HOME .. "/peaks")
  local lfs = require("lfs")
  if lfs.attributes(dir, "mode") ~= "directory" then
    local okd, derr = lfs.mkdir(dir)
    if not okd then error(string.format("peaks: cannot create %s: %s", dir, tostring(derr)), 0) end
  end
  local path = dir .. "/" .. opts.gpu .. ".json"
  require("tilebench.util").write_atomic(path, json.encode(doc) .. "\n")
  io.write(string.format("memory ceiling %.0f GB/s (read %s, 2 reads:1 write %s, copy %s, driver copy %s)\n", ceiling,
    tostring(mixes.read), tostring(mixes.read2_write1), tostring(mixes.copy), tostring(mixes.driver_copy)))
  io.write(string.format("%s: bandwidth %.0f GB/s, fp32 %.1f TFLOP/s, fp16 %s, bf16 %s, tf32 %s, fp8 %s (fast %s), int8 %s\n",
    path, bandwidth, fp32_tflops, tostring(matrix.fp16), tostring(matrix.bf16), tostring(matrix.tf32),
    tostring(matrix.fp8_e4m3), tostring(matrix.fp8_e4m3_fast_accum), tostring(matrix.int8)))
  log("peaks: %.0f s of host CPU time", os.clock() - t0)
  return 0
end

return M
