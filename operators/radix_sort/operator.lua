-- radix_sort: out = torch.sort(input).values, int32 ascending (OPERATORS.md 43); the input is not
-- modified. Values only: stability cannot show in the output, and int32 has no NaN, so every
-- implementation's output is the one sorted sequence (docs/SORTING.md states the rules).
-- Reference: a bitonic network in global memory (operators/_shared/sort_ref.cu). `cuda`: an LSD
-- radix sort, 8-bit digits, onesweep passes with decoupled look-back (radix_sort.cu).
-- `triton`: the same digits in reduce-then-scan passes, the in-program rank by tl.sort
-- (radix_sort_triton.py says why). `lib`: CUB's DeviceRadixSort::SortKeys (libtb_cub, built with
-- nvcc where it is found; tb.cub).
local sorting = require("sorting")
local op = {}
op.category = "Data Layout"

function op.inputs(case, ctx)
  return { input = ctx.randint("input", { case.params.n }, "int32", 0, 2147483648) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, "int32") }
end

function op.reference(case, ins, outs, ctx)
  local n = case.params.n
  return sorting.reference(ctx, ins.input, outs.out, n, n, case.dtype)
end

local RADIX, PASSES = 256, 4
local SMEM_OPTIN = 232448 -- H100/H200 per-block opt-in (valid sees no device)

-- n must fit the 30-bit counts of the look-back's status words
local function supports(case)
  if case.params.n >= (1 << 30) then
    return false, string.format("n = %d: the look-back's 30-bit counts need n < 2^30", case.params.n)
  end
  return true
end

-- `lib`: CUB through libtb_cub.so (sorting.lua, docs/SORTING.md)
local function tiles(n, cfg) return math.max(1, (n + cfg.BLOCK * cfg.ITEMS - 1) // (cfg.BLOCK * cfg.ITEMS)) end

local lib = {
  description = "CUB's DeviceRadixSort::SortKeys over all 32 bits of the int32 keys (libtb_cub.so, nvcc-built; tb.cub)",
  default = {},
  plan = function(case, ins, outs, cfg, ctx)
    local cub = require("tb.cub")
    local n = case.params.n
    local temp = ctx.empty({ math.max(1, cub.temp_bytes("sort_i32", n)) }, "uint8")
    local c = cub.sort { op = "sort_i32", input = ins.input, out = outs.out, temp = temp, n = n }
    local plan = ctx.plan { { call = c } }
    plan.note = sorting.cub_note(c) -- the row's note_lib: CUB's version, the call, its storage
    return plan
  end,
}
lib.supports = sorting.cub_supports(lib, supports)

op.implementations = {
  lib = lib,
  cuda = {
    source = "radix_sort.cu",
    description = "LSD radix sort, four 8-bit passes (onesweep): one histogram kernel for all passes, then per pass one kernel of BLOCK x ITEMS-key tiles: early digit counts published before the rank, stable warp ranking by ballots straight into shared memory, decoupled look-back over LB tiles at a time, coalesced digit runs out",
    -- CUB's tile for int32 keys on sm_90 (384 x 20; ptxas gives this configuration 48 registers,
    -- three blocks an SM) and a look-back window of 4 (docs/SORTING.md)
    default = { BLOCK = 384, ITEMS = 20, LB = 4 },
    space = { BLOCK = { 256, 384, 512 }, ITEMS = { 12, 16, 20, 24, 28 }, LB = { 1, 4, 8 } },
    supports = supports,
    -- registers: ITEMS keys a thread plus about 24 (what __launch_bounds__(BLOCK) leaves a
    -- thread); shared memory: the tile, a 256-counter row per warp, the digit bases
    valid = function(case, cfg)
      local smem = cfg.BLOCK * cfg.ITEMS * 4 + (cfg.BLOCK // 32) * RADIX * 4 + RADIX * 4 + 64
      return cfg.BLOCK >= RADIX and cfg.BLOCK % 32 == 0 and cfg.ITEMS + 24 <= math.min(255, 65536 // cfg.BLOCK)
        and smem <= SMEM_OPTIN
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local n = case.params.n
      local nt = tiles(n, cfg)
      local defs = { SORT_KIND = 1, BLOCK = cfg.BLOCK, ITEMS = cfg.ITEMS, LB = cfg.LB }
      -- status[4][nt][256] | hist[4][256] | counters[4] | the histogram blocks' done counter
      local ws = ctx.empty({ PASSES * nt * RADIX + PASSES * RADIX + PASSES + 1 }, "int32")
      local tmp = ctx.empty({ n }, "int32")
      -- 4 blocks a SM stream the input, 4 vectors of 4 keys a thread at a time; each block adds
      -- its 1024 counts to the same 1024 words
      local hist_grid = math.max(1, math.min(ctx.cdiv(n, 4 * 4 * 256), (ctx.props.sm_count or 132) * 4))
      local steps = {
        { fn = ctx:kernel("radix_sort.cu", "radix_sort_zero", defs), grid = { 1 }, block = { 256 },
          args = { ws, ctx.i32(nt) } },
        { fn = ctx:kernel("radix_sort.cu", "radix_sort_hist", defs), grid = { hist_grid }, block = { 256 },
          args = { ins.input, ws, ctx.i32(n), ctx.i32(nt) } },
      }
      -- input -> tmp -> out -> tmp -> out: the input is only read
      local pass_fn = ctx:kernel("radix_sort.cu", "radix_sort_pass", defs)
      local from = { ins.input, tmp, outs.out, tmp }
      local to = { tmp, outs.out, tmp, outs.out }
      for p = 0, PASSES - 1 do
        steps[#steps + 1] = { fn = pass_fn, grid = { nt }, block = { cfg.BLOCK }, smem = cfg.BLOCK * cfg.ITEMS * 4,
                              args = { from[p + 1], to[p + 1], ws, ctx.i32(n), ctx.i32(nt), ctx.i32(p) } }
      end
      return ctx.plan(steps)
    end,
  },
  -- radix_sort_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: LSD radix sort, four 8-bit passes of four kernels: per-program tl.histogram, a scan per digit over the programs, the digits' bases, a stable in-program rank by tl.sort of (digit, index) and the scatter",
    default = { BLOCK = 2048, num_warps = 8 },
    space = { BLOCK = { 1024, 2048, 4096 }, num_warps = { 4, 8, 16 } },
    plan = function(case, ins, outs, cfg, ctx)
      local n = case.params.n
      local nb = ctx.cdiv(n, cfg.BLOCK)
      local tmp = ctx.empty({ n }, "int32")
      local counts = ctx.empty({ RADIX * nb }, "int32")
      local starts = ctx.empty({ nb * RADIX }, "int32")
      local totals = ctx.empty({ RADIX }, "int32")
      local base = ctx.empty({ RADIX }, "int32")
      local from = { ins.input, tmp, outs.out, tmp }
      local to = { tmp, outs.out, tmp, outs.out }
      local steps = {}
      local file = "radix_sort_triton.py"
      for p = 0, PASSES - 1 do
        local shift, flip = ctx.i32(8 * p), ctx.i32(p == PASSES - 1 and 128 or 0)
        steps[#steps + 1] = ctx:triton { file = file, kernel = "radix_hist_kernel", grid = { nb },
          args = { src = from[p + 1], counts = counts, starts = starts, n = ctx.i64(n), nblocks = ctx.i32(nb),
                   shift = shift, flip = flip },
          constexprs = { BLOCK = cfg.BLOCK }, num_warps = cfg.num_warps, num_stages = 1 }
        steps[#steps + 1] = ctx:triton { file = file, kernel = "radix_scan_rows_kernel", grid = { RADIX },
          args = { counts = counts, totals = totals, nblocks = ctx.i32(nb) },
          constexprs = { CHUNK = 1024 }, num_warps = 4, num_stages = 1 }
        steps[#steps + 1] = ctx:triton { file = file, kernel = "radix_digit_base_kernel", grid = { 1 },
          args = { totals = totals, base = base }, constexprs = {}, num_warps = 4, num_stages = 1 }
        steps[#steps + 1] = ctx:triton { file = file, kernel = "radix_scatter_kernel", grid = { nb },
          args = { src = from[p + 1], dst = to[p + 1], counts = counts, starts = starts, base = base,
                   n = ctx.i64(n), nblocks = ctx.i32(nb), shift = shift, flip = flip },
          constexprs = { BLOCK = cfg.BLOCK }, num_warps = cfg.num_warps, num_stages = 1 }
      end
      return ctx.plan(steps)
    end,
  },
}

op.baseline = "lib"

return op
