-- oplib.lua (operators/_shared; operator.lua files `require("oplib")`): launch logic several
-- operators share, so that each operator.lua says only what is its own (inputs, outputs, kernel
-- names, arguments). Two families, each giving an operator its reference plan and its `cuda`
-- implementation (their device code: tb_pointwise.cuh and tb_rows.cuh beside this file):
--   pointwise: n elements in 16-byte vectors, UNROLL vectors per thread in flight, the grid
--              optionally capped at WAVES x what the device holds (a grid-stride loop does the rest);
--   rowwise:   rows of `cols` elements, RPG rows per group of TPR threads holding them in
--              registers (RPG = 1: a row per group).
-- Kernel files follow the operator's name: <name>.cu defines <name>_cuda, <name>_ref.cu defines
-- <name>_ref, both compiled with DTYPE = the case's C type (plus the family's tuning defines).
local M = {}

local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = type(v) == "table" and copy(v) or v end
  return out
end

local function with(defines, extra)
  local out = copy(defines)
  for k, v in pairs(extra or {}) do out[k] = v end
  return out
end

-- ---- point-wise -------------------------------------------------------------------------------

-- The default: BLOCK 128 with UNROLL 0, "the family's rule" (pointwise_resolve): 2 vectors a
-- thread for 2-byte dtypes, 1 for 1- and 4-byte ones. Per dtype size, the configuration of the
-- space behind torch (by more than 2 %) on the fewest of the 360 cases of session 12's H200
-- autotune run of vector_add, mul2, relu, sigmoid and swiglu, torch timed beside: 40 cases,
-- against 116 for the former default 256 x 4 (bench/pointwise/defaults.py and its table
-- bench/results/pointwise_defaults.md; docs/KERNELS.md, "The default launch shape"). 0 is not in
-- the space: autotune screens the same kernels as 128 x 1 and 128 x 2.
M.POINTWISE_DEFAULT = { BLOCK = 128, UNROLL = 0, WAVES = 0 }
M.POINTWISE_SPACE = { BLOCK = { 128, 256, 512, 1024 }, UNROLL = { 1, 2, 4, 8 }, WAVES = { 0, 2 } }
M.POINTWISE_RULE_UNROLL = { [1] = 1, [2] = 2, [4] = 1 } -- by the dtype's size in bytes

-- cfg with UNROLL = 0 replaced by the rule's UNROLL for dtype (a copy); cfg itself otherwise.
-- The plan resolves it before it forms the kernel's defines and the grid, so the default is one
-- configuration of the space at each case (recorded as UNROLL=0, the dtype giving the value).
function M.pointwise_resolve(cfg, dtype)
  if cfg.UNROLL ~= 0 then return cfg end
  local r = copy(cfg)
  r.UNROLL = M.POINTWISE_RULE_UNROLL[require("tb.dtype").info[dtype].size] or 1
  return r
end

-- Blocks for n elements: one per BLOCK * UNROLL vectors, or, with WAVES > 0, at most WAVES
-- times what the device holds at once. A vector is 16 bytes of the dtype, or `vec` elements
-- where the operator's kernel says otherwise (tb_pointwise_ops: mixed dtypes, element pairs).
function M.pointwise_grid(n, dtype, cfg, ctx, vec)
  cfg = M.pointwise_resolve(cfg, dtype)
  local per_block = cfg.BLOCK * cfg.UNROLL * (vec or 16 // ctx.dtype_size(dtype))
  local blocks = math.max(1, ctx.cdiv(n, per_block))
  if cfg.WAVES > 0 then
    local resident = ctx.props.sm_count * math.max(1, (ctx.props.max_threads_per_sm or 2048) // cfg.BLOCK)
    blocks = math.min(blocks, resident * cfg.WAVES)
  end
  return blocks
end

-- t = { name = "mul2", count = function(case) -> n,
--       args = function(ins, outs, n, ctx, case) -> the kernel arguments (the same for both kernels),
--       vec = function(case) -> elements per vector of the cuda kernel (optional: 16 bytes of the
--             dtype; a tb_pointwise_ops kernel's tb_Op::N otherwise),
--       default = the cuda default configuration (optional: POINTWISE_DEFAULT, UNROLL by the rule) }
-- Returns reference(case, ins, outs, ctx) (one thread per element) and the `cuda` implementation.
function M.pointwise(t)
  local function reference(case, ins, outs, ctx)
    local n = t.count(case)
    local f = ctx:kernel(t.name .. "_ref.cu", t.name .. "_ref", { DTYPE = ctx.ctype(case.dtype) })
    return ctx.plan { { fn = f, grid = { ctx.cdiv(n, 256) }, block = { 256 }, args = t.args(ins, outs, n, ctx, case) } }
  end
  local impl = {
    source = t.name .. ".cu",
    description = "16-byte vector loads/stores, UNROLL vectors per thread in flight (UNROLL 0: the family's rule, "
      .. "2 for 2-byte dtypes, 1 otherwise), grid-stride chunks",
    default = copy(t.default or M.POINTWISE_DEFAULT),
    space = copy(M.POINTWISE_SPACE),
    plan = function(case, ins, outs, cfg, ctx)
      cfg = M.pointwise_resolve(cfg, case.dtype)
      local n = t.count(case)
      local f = ctx:kernel(t.name .. ".cu", t.name .. "_cuda",
        { DTYPE = ctx.ctype(case.dtype), BLOCK = cfg.BLOCK, UNROLL = cfg.UNROLL })
      return ctx.plan { { fn = f, grid = { M.pointwise_grid(n, case.dtype, cfg, ctx, t.vec and t.vec(case)) },
                          block = { cfg.BLOCK }, args = t.args(ins, outs, n, ctx, case) } }
    end,
  }
  return reference, impl
end

-- ---- row-wise ---------------------------------------------------------------------------------

-- 16-byte vectors hold VEC elements of each dtype the row kernels take (sizes from tb.dtype).
M.ROW_VEC = {}
for _, d in ipairs({ "fp32", "fp16", "bf16" }) do M.ROW_VEC[d] = 16 // require("tb.dtype").info[d].size end
M.ROW_DEFAULT = { TPR = 0, BLOCK = 0, RPG = 1, STAGES = -1, FULLVEC = 0 }
M.ROW_SPACE = { TPR = { 0, 32, 64, 128, 256, 512, 1024 }, BLOCK = { 0, 128, 256, 512, 1024 }, RPG = { 1, 2 },
                STAGES = { 0, 2 }, FULLVEC = { 0, 1 } }
-- FULLVEC = 1 compiles the kernels' bound checks per whole 16-byte vector instead of per element
-- (tb_for_elems: the same arithmetic in the same order); 0 passes no define, the measured kernels.

-- The row layout for rows of `cols` elements: TPR threads per row, BLOCK threads per block, NV
-- vectors per thread (the row lives in registers). TPR = 0 picks the smallest power of two from
-- 32 (a warp per row) up to 1024 (a block per row) that covers the row with at most 4 vectors per
-- thread; BLOCK = 0 picks max(TPR, 128), several short rows to a block. RPG (rows per group)
-- does not change the layout: a group holds RPG rows of NV vectors per thread each, and a block
-- BLOCK / TPR * RPG rows.
function M.row_layout(cols, dtype, cfg)
  local vec = M.ROW_VEC[dtype]
  local tpr = cfg.TPR
  if tpr == 0 then
    -- At least 4 vectors a thread, up to 512 threads a row; 1024 only where 512 would need more
    -- than 16 vectors. (H200, 2026-11-29: 1024 threads with 3 vectors each made fp32 rows of
    -- 8704-10240 elements 1.5x slower than 512 with 5; PERFORMANCE.md.)
    tpr = 32
    while tpr < 1024 and ((tpr < 512 and tpr * vec * 4 < cols) or tpr * vec * 16 < cols) do tpr = tpr * 2 end
  end
  local block = cfg.BLOCK == 0 and math.max(tpr, 128) or cfg.BLOCK
  return tpr, block, math.max(1, (cols + tpr * vec - 1) // (tpr * vec))
end

-- Rows a group of TPR threads holds at once (the RPG define; absent or 1 = one row).
function M.row_rpg(cfg) return cfg.RPG or 1 end

-- ---- the stream kernels (<name>_stream, STAGES >= 1) ----
-- STAGES = 0 is the register kernel (<name>_cuda); STAGES = k >= 1 the stream kernel: persistent
-- blocks, a block per row (TPR = BLOCK), k shared-memory row slots filled by cp.async.bulk (sm_90
-- and newer). STAGES = -1 (the default) applies the operator's measured rule, t.stream =
-- { dtypes = {fp16 = true, ...}, min_bytes = N, block = B, stages = k }: the stream kernel with
-- BLOCK B and k slots for those dtypes where the device is sm_90 or newer and rows are whole
-- 16-byte multiples of at least min_bytes; fullvec = 0/1 also sets FULLVEC there. Each of
-- min_bytes, block, stages and fullvec is one value or a table by dtype ({fp16 = 34816, ...}); the register kernel otherwise (and for every case of an
-- operator without a rule), with FULLVEC = reg_fullvec (one value or by dtype) where the rule
-- has that field. docs/KERNELS.md has the H200 measurements behind each rule.
local SMEM_OPTIN = 232448 -- H100/H200 per-block limit; plans check ctx.props
local SMEM_PER_SM = 233472

function M.stream_slot_bytes(cols, dtype)
  local bytes = cols * (16 // M.ROW_VEC[dtype])
  return (bytes + 127) // 128 * 128
end

-- The stream layout: BLOCK threads per row (0: the register layout's automatic TPR, at least
-- 128), NV vectors per thread.
function M.stream_layout(cols, dtype, cfg)
  local vec = M.ROW_VEC[dtype]
  local block = cfg.BLOCK
  if block == 0 then block = math.max(128, (M.row_layout(cols, dtype, { TPR = 0, BLOCK = 0 }))) end
  return block, math.max(1, (cols + block * vec - 1) // (block * vec))
end

-- Whether cfg (resolved: STAGES >= 1) can run the stream kernel on this case.
function M.stream_fits(cols, dtype, cfg, smem_optin)
  if (cfg.TPR or 0) ~= 0 or M.row_rpg(cfg) ~= 1 then return false end -- TPR is BLOCK, one row per block
  local block, nv = M.stream_layout(cols, dtype, cfg)
  if block < 128 or nv > 16 then return false end
  if cfg.STAGES * M.stream_slot_bytes(cols, dtype) + 1024 > (smem_optin or SMEM_OPTIN) then return false end
  return 24 + 1.5 * nv * M.ROW_VEC[dtype] <= math.min(255, 65536 // block)
end

-- The configuration the plan runs: STAGES = -1 resolved by the operator's rule (props: the
-- device's, or nil when unknown).
function M.row_resolve(cols, dtype, cfg, props, rule)
  local stages = cfg.STAGES or 0
  if stages >= 0 then return cfg end
  local r = {}
  for k, v in pairs(cfg) do r[k] = v end
  r.STAGES = 0
  local function pick(v) -- a rule field: one value, or a table by dtype
    if type(v) == "table" then return v[dtype] end
    return v
  end
  if rule and pick(rule.reg_fullvec) ~= nil then r.FULLVEC = pick(rule.reg_fullvec) end
  if not rule or not (rule.dtypes or {})[dtype] then return r end
  local arch_ok = props == nil or (props.cc_major or 0) >= 9
  local row_bytes = cols * (16 // M.ROW_VEC[dtype])
  local min_bytes = pick(rule.min_bytes) or math.huge
  local block, stages = pick(rule.block), pick(rule.stages)
  if arch_ok and row_bytes % 16 == 0 and row_bytes >= min_bytes and block and stages
      and (cfg.TPR or 0) == 0 and (cfg.BLOCK or 0) == 0 and M.row_rpg(cfg) == 1 then
    local s = { TPR = 0, BLOCK = block, RPG = 1, STAGES = stages }
    if M.stream_fits(cols, dtype, s, props and props.smem_per_block_optin) then
      r.BLOCK, r.STAGES = block, stages
      local fullvec = pick(rule.fullvec)
      if fullvec ~= nil then r.FULLVEC = fullvec end
    end
  end
  return r
end

-- Registers an RPG > 1 group needs per thread, as base + per * (RPG x NV x VEC elements), for
-- 2- and 4-byte dtypes: upper bounds fitted to ptxas -v (sm_90) over the RPG 2 and 4 kernels of
-- the largest case of every dtype of the five row operators, none of which they let spill
-- (docs/KERNELS.md). An operator whose kernel needs fewer passes its own as `rpg_regs`.
M.ROW_RPG_REGS = { [2] = { 36, 1.95 }, [4] = { 16, 1.45 } }

-- A layout runs when the row group fits its block, NV is at most 16, and the rows fit in the
-- registers a thread gets at that block size (min(255, 65536 / BLOCK)) without spilling:
--   RPG = 1: about 24 + 1.5 per element (a fit of ptxas's numbers for sm_90);
--   RPG > 1: rpg_regs (default ROW_RPG_REGS) over all RPG x NV vectors, at most 64 of them.
function M.row_layout_fits(cols, dtype, cfg, rpg_regs)
  local tpr, block, nv = M.row_layout(cols, dtype, cfg)
  local rpg = M.row_rpg(cfg)
  local budget = math.min(255, 65536 // block)
  if not (tpr <= block and block % tpr == 0 and nv <= 16) then return false end
  if rpg == 1 then return 24 + 1.5 * nv * M.ROW_VEC[dtype] <= budget end
  local model = (rpg_regs or M.ROW_RPG_REGS)[16 // M.ROW_VEC[dtype]]
  return rpg * nv <= 64 and model[1] + model[2] * rpg * nv * M.ROW_VEC[dtype] <= budget
end

-- The stream kernel's plan: one persistent block per row slot set, as many blocks per SM as
-- threads (2048), registers (64 per thread assumed) and shared memory allow.
function M.stream_plan(t, case, ins, outs, cfg, ctx, rows, cols)
  local props = ctx.props or {}
  if (props.cc_major or 9) < 9 then
    error(string.format("STAGES=%d: the stream kernel needs cp.async.bulk (sm_90 or newer); this device is sm_%d%d",
      cfg.STAGES, props.cc_major or 0, props.cc_minor or 0), 0)
  end
  local optin = props.smem_per_block_optin or SMEM_OPTIN
  if not M.stream_fits(cols, case.dtype, cfg, optin) then
    error(string.format("STAGES=%d BLOCK=%d: %d-byte row slots do not fit this layout (TPR 0, RPG 1, %d bytes of shared memory per block)",
      cfg.STAGES, cfg.BLOCK, M.stream_slot_bytes(cols, case.dtype), optin), 0)
  end
  local block, nv = M.stream_layout(cols, case.dtype, cfg)
  local smem = cfg.STAGES * M.stream_slot_bytes(cols, case.dtype)
  local per_sm = math.min(2048 // block, 65536 // (block * 64),
                          (props.smem_per_sm or SMEM_PER_SM) // (smem + 1024))
  local grid = math.max(1, math.min(rows, (props.sm_count or 132) * math.max(1, per_sm)))
  local defines = { DTYPE = ctx.ctype(case.dtype), TPR = block, BLOCK = block, NV = nv, STAGES = cfg.STAGES }
  if (cfg.FULLVEC or 0) ~= 0 then defines.FULLVEC = 1 end
  local f = ctx:kernel(t.name .. ".cu", t.name .. "_stream", with(defines, t.defines))
  return ctx.plan { { fn = f, grid = { grid }, block = { block }, smem = smem,
                      args = t.args(ins, outs, rows, cols, ctx) } }
end

-- t = { name = "softmax", description = "...", rows_cols = function(case) -> rows, cols,
--       args = function(ins, outs, rows, cols, ctx) -> the kernel arguments (both kernels),
--       defines = extra defines for both kernels (optional),
--       rpg_regs = { [2] = { base, per }, [4] = { base, per } }: the kernel's register need with
--                  RPG > 1 by dtype size (optional; ROW_RPG_REGS otherwise),
--       stream = { dtypes, min_bytes, block, stages }: where the default configuration runs the
--                stream kernel (optional; see row_resolve) }
-- Returns reference(case, ins, outs, ctx) (one thread per row) and the `cuda` implementation.
-- Defines that carry a case's size: only NV (and, for TPR = 0, the TPR/BLOCK the layout picks
-- from the row length). The row lives in registers (NV vectors per thread, loops unrolled over
-- NV), so NV must be a compile-time constant: a run-time NV would put the row in local memory.
-- Every other define (DTYPE, TPR, BLOCK, RPG, FULLVEC, STAGES, the operator's own) is a
-- configuration; the point-wise and gemm families carry no size at all (docs/KERNELS.md,
-- "Kernels and case sizes").
-- Candidates the search leaves out before compiling, from the H200's autotune run of session 12
-- (run 20261202T094236Z-946022: every case of softmax, layernorm, rmsnorm, argmax and
-- mean_reduction, 260 cases, every valid candidate screened; bench/autotune/row_space.lua reads
-- its journal and checks that no winner of it is cut): layouts the kernels run correctly but
-- whose best screen never came within 2.7 % of the case's winner in the row sizes named, while
-- their compiles (NV carries the row length) were a fifth of the whole suite's NVRTC kernels
-- (bench/results/autotune/README.md). Row bytes = columns x the dtype's size.
--   RPG > 1 only for rows under 12 KiB: from 12 KiB on, the best RPG 2 candidate screened at
--     least 3.1 % slower than the winner in every case (161); under it RPG 2 won 4 cases (rows of
--     4-10 KiB).
--   the stream kernel (STAGES >= 1) only with 256-thread blocks: at 128, 512 and 1024 threads
--     its best screened at least 2.2 %, 3.1 % and 3.7 % slower in every case; 256 won 10. The
--     default's stream rule (STAGES = -1) is not a candidate and keeps its own blocks.
--   register layouts of TPR threads a row only for rows of ROW_TPR_BYTES[TPR] bytes: 64 threads
--     under 12 KiB (from there at least 3.6 % slower: 12 or more vectors a thread; 32 threads
--     cannot hold such rows at all), 512 from 12 KiB (under it at least 2.7 % slower), 1024
--     from 32 KiB (under it at least 6.0 %).
M.ROW_RPG_MAX_BYTES = 12 * 1024
M.ROW_STREAM_BLOCK = 256
M.ROW_TPR_BYTES = { [64] = { 0, 12 * 1024 }, [512] = { 12 * 1024, math.huge },
                    [1024] = { 32 * 1024, math.huge } }

-- Whether the search screens this candidate (one the kernel runs): the cuts above. The GPU
-- check still tries the layouts they leave out (M.row_fits).
function M.row_worth(cols, dtype, cfg)
  local bytes = cols * (16 // M.ROW_VEC[dtype])
  if (cfg.STAGES or 0) > 0 then return (M.stream_layout(cols, dtype, cfg)) == M.ROW_STREAM_BLOCK end
  if M.row_rpg(cfg) > 1 and bytes >= M.ROW_RPG_MAX_BYTES then return false end
  local range = M.ROW_TPR_BYTES[(M.row_layout(cols, dtype, cfg))]
  return not range or (bytes >= range[1] and bytes < range[2])
end

-- implementation table -> fits(case, cfg): whether the kernel runs cfg at the case, the
-- implementation's `valid` before the search's cuts (tests/gpu/cpu_check tries layouts by it)
M.row_fits = setmetatable({}, { __mode = "k" })

function M.rowwise(t)
  local function reference(case, ins, outs, ctx)
    local rows, cols = t.rows_cols(case)
    local f = ctx:kernel(t.name .. "_ref.cu", t.name .. "_ref", with({ DTYPE = ctx.ctype(case.dtype) }, t.defines))
    return ctx.plan { { fn = f, grid = { ctx.cdiv(rows, 128) }, block = { 128 },
                        args = t.args(ins, outs, rows, cols, ctx) } }
  end
  local function fits(case, cfg)
    local _, cols = t.rows_cols(case)
    local stages = cfg.STAGES or 0
    if stages > 0 then return M.stream_fits(cols, case.dtype, cfg) end
    if stages < 0 then cfg = M.row_resolve(cols, case.dtype, cfg, nil, t.stream) end
    if (cfg.STAGES or 0) > 0 then return true end
    return M.row_layout_fits(cols, case.dtype, cfg, t.rpg_regs)
  end
  local impl = {
    source = t.name .. ".cu",
    description = t.description,
    default = copy(M.ROW_DEFAULT),
    space = copy(M.ROW_SPACE),
    -- a layout the kernel runs (fits, below) and the search screens (row_worth); the default
    -- (STAGES = -1, RPG 1) is never cut
    valid = function(case, cfg)
      local _, cols = t.rows_cols(case)
      if not fits(case, cfg) then return false end
      return (cfg.STAGES or 0) < 0 or M.row_worth(cols, case.dtype, cfg)
    end,
    -- What the configuration runs at this case (runner.distinct_candidates): TPR = 0 and BLOCK = 0
    -- resolve to one of the explicit layouts, so two candidates with the same key compile to the
    -- same kernel and launch it alike, and only one of them is screened. Every define the plan
    -- passes and every launch dimension follow from these fields.
    launch_key = function(case, cfg)
      local _, cols = t.rows_cols(case)
      local r = M.row_resolve(cols, case.dtype, cfg, nil, t.stream)
      local fullvec = (r.FULLVEC or 0) ~= 0 and 1 or 0
      if (r.STAGES or 0) > 0 then
        local block, nv = M.stream_layout(cols, case.dtype, r)
        return string.format("stream BLOCK=%d NV=%d STAGES=%d FULLVEC=%d", block, nv, r.STAGES, fullvec)
      end
      local tpr, block, nv = M.row_layout(cols, case.dtype, r)
      return string.format("registers TPR=%d BLOCK=%d NV=%d RPG=%d FULLVEC=%d", tpr, block, nv, M.row_rpg(r), fullvec)
    end,
    supports = function(case) -- the automatic layout must fit: rows up to 1024 threads x 4 vectors
      local _, cols = t.rows_cols(case)
      return M.row_layout_fits(cols, case.dtype, M.ROW_DEFAULT)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = t.rows_cols(case)
      cfg = M.row_resolve(cols, case.dtype, cfg, ctx.props, t.stream)
      if (cfg.STAGES or 0) > 0 then return M.stream_plan(t, case, ins, outs, cfg, ctx, rows, cols) end
      local tpr, block, nv = M.row_layout(cols, case.dtype, cfg)
      local rpg = M.row_rpg(cfg)
      local defines = { DTYPE = ctx.ctype(case.dtype), TPR = tpr, BLOCK = block, NV = nv }
      -- RPG 1 passes no define (the kernels default to 1): the same kernels as before RPG existed.
      if rpg > 1 then defines.RPG = rpg end
      if (cfg.FULLVEC or 0) ~= 0 then defines.FULLVEC = 1 end
      local f = ctx:kernel(t.name .. ".cu", t.name .. "_cuda", with(defines, t.defines))
      return ctx.plan { { fn = f, grid = { ctx.cdiv(rows, block // tpr * rpg) }, block = { block },
                          args = t.args(ins, outs, rows, cols, ctx) } }
    end,
  }
  M.row_fits[impl] = fits
  return reference, impl
end

-- ---- Triton ------------------------------------------------------------------------------------

-- The point-wise family's `triton` implementation: <name>_triton.py defines
-- <name>_kernel(<the tensors of args, in order>, n, <scalars>, BLOCK: constexpr), a program per
-- BLOCK elements (lua/tilebench/triton.lua compiles it ahead of time; ctx:triton launches it).
-- t = { name, count = function(case) -> n, tensors = function(ins, outs) -> {argname = tensor},
--       scalars = function(case, ctx) -> {argname = ctx.f32(..) ...} (optional: dropout's scale) }
M.TRITON_POINTWISE_DEFAULT = { BLOCK = 4096, num_warps = 8, num_stages = 1 }
M.TRITON_POINTWISE_SPACE = { BLOCK = { 1024, 2048, 4096, 8192 }, num_warps = { 4, 8, 16 }, num_stages = { 1 } }

function M.triton_pointwise(t)
  return {
    description = "Triton: a program per BLOCK elements, loads and stores masked at the tail",
    default = copy(M.TRITON_POINTWISE_DEFAULT),
    space = copy(M.TRITON_POINTWISE_SPACE),
    -- each thread at least one 16-byte vector, at most 64 elements in flight
    valid = function(case, cfg)
      local size = require("tb.dtype").info[case.dtype].size
      local per_thread = cfg.BLOCK // (32 * cfg.num_warps)
      return per_thread * size >= 16 and per_thread <= 64
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local n = t.count(case)
      local args = t.tensors(ins, outs)
      args.n = ctx.i64(n)
      for k, v in pairs(t.scalars and t.scalars(case, ctx) or {}) do args[k] = v end
      return ctx.plan { ctx:triton { file = t.name .. "_triton.py", kernel = t.name .. "_kernel",
        grid = { ctx.cdiv(n, cfg.BLOCK) }, args = args, constexprs = { BLOCK = cfg.BLOCK },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end,
  }
end

-- The row family's `triton` implementation: <name>_triton.py defines <name>_kernel(<tensors>,
-- rows, cols, <scalars>, BLOCK: constexpr [, extra constexprs]), one program per row. With
-- loop = false the row is held whole (BLOCK = the next power of two >= cols: softmax, layernorm,
-- rmsnorm, which read it twice); with loop = true the kernel streams the row in chunks of BLOCK
-- columns (mean_reduction, argmax: one pass). WARPS = 0 picks num_warps from BLOCK: 8 elements
-- per thread, 4 to 16 warps (triton's softmax tutorial's rule, give or take); BLOCK = 0 in loop
-- mode: min(next power of two >= cols, 4096).
-- t = { name, rows_cols = function(case) -> rows, cols, loop = bool,
--       tensors = function(ins, outs) -> {argname = tensor},
--       scalars = function(ctx) -> {argname = scalar} (optional), constexprs = {NAME = v} (optional) }
local function next_pow2(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end
M.next_pow2 = next_pow2

function M.triton_rows(t)
  local default = t.loop and { BLOCK = 0, WARPS = 0, num_stages = 3 } or { WARPS = 0, num_stages = 1 }
  local space = t.loop and { BLOCK = { 0, 1024, 2048, 4096, 8192 }, WARPS = { 0, 4, 8, 16 }, num_stages = { 1, 3 } }
    or { WARPS = { 0, 4, 8, 16, 32 }, num_stages = { 1 } }
  local function block_of(cols, cfg)
    if not t.loop then return next_pow2(cols) end
    if cfg.BLOCK > 0 then return cfg.BLOCK end
    return math.min(next_pow2(cols), 4096)
  end
  local function warps_of(block, cfg)
    if cfg.WARPS > 0 then return cfg.WARPS end
    return math.max(4, math.min(16, block // 256))
  end
  return {
    description = t.loop and "Triton: a program per row, the row streamed in BLOCK-column chunks, fp32 accumulators"
      or "Triton: a program per row, the whole row in registers (BLOCK = next power of two of the row)",
    default = copy(default),
    space = copy(space),
    -- at most 64 elements of the row per thread, at least one (short rows: 512 fp16 columns on
    -- 4 warps load 8 bytes a thread), and no chunk wider than the row
    valid = function(case, cfg)
      local _, cols = t.rows_cols(case)
      local block = block_of(cols, cfg)
      local per_thread = block // (32 * warps_of(block, cfg))
      return per_thread >= 1 and per_thread <= 64 and (not t.loop or block <= next_pow2(cols))
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = t.rows_cols(case)
      local block = block_of(cols, cfg)
      local args = t.tensors(ins, outs)
      args.rows, args.cols = ctx.i32(rows), ctx.i32(cols)
      for k, v in pairs(t.scalars and t.scalars(ctx) or {}) do args[k] = v end
      local constexprs = { BLOCK = block }
      for k, v in pairs(t.constexprs or {}) do constexprs[k] = v end
      return ctx.plan { ctx:triton { file = t.name .. "_triton.py", kernel = t.name .. "_kernel", grid = { rows },
        args = args, constexprs = constexprs, num_warps = warps_of(block, cfg), num_stages = cfg.num_stages } }
    end,
  }
end

return M
