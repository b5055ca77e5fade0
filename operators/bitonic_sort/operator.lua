-- bitonic_sort: data (n,) sorted ascending, values only; the result is torch.sort(data).values
-- (OPERATORS.md 42). Order: NaN last, -0.0 before +0.0 (equal as values); stability cannot show in
-- values (docs/SORTING.md). Reference: the bitonic network OPERATORS.md describes, one launch a
-- step in global memory (operators/_shared/sort_ref.cu). `cuda`: the same network with the steps
-- inside a 2^LOG_S-key chunk in shared memory and long steps fused three (or two) to a pass in registers
-- (bitonic_sort.cu). `triton`: chunks sorted by tl.sort, long steps one kernel each
-- (bitonic_sort_triton.py). No vendor library runs a bitonic network: CUB's radix sort of the same
-- values is radix_sort's `lib`; PERFORMANCE.md sets bitonic_sort's times beside torch.sort, which
-- on CUDA is a CUB radix sort.
local sorting = require("sorting")
local op = {}
op.category = "Data Layout"

function op.inputs(case, ctx)
  return { data = ctx.randn("data", { case.params.n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.n }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local n = case.params.n
  return sorting.reference(ctx, ins.data, outs.out, n, n, case.dtype)
end

-- the keys' scratch: 32-bit keys in an int32 tensor, 16-bit keys in an fp16 one (tensors have no
-- unsigned 16-bit dtype; only the kernels read it, as KEY_T)
local KEY = { fp32 = { ctype = "unsigned int", dtype = "int32", size = 4 },
              fp16 = { ctype = "unsigned short", dtype = "fp16", size = 2 } }
local SMEM_OPTIN = 232448 -- H100/H200 per-block opt-in (valid sees no device)

local function supports(case)
  if not KEY[case.dtype] then return false, "bitonic_sort: dtype " .. case.dtype .. " (fp16 and fp32 only)" end
  return true
end

op.implementations = {
  cuda = {
    source = "bitonic_sort.cu",
    description = "bitonic network over keys (32-bit fp32, 16-bit fp16): every stage up to a 2^LOG_S-key chunk and each later stage's short steps in shared memory, long steps three to a pass in registers; the last merge writes the values",
    default = { BLOCK = 512, LOG_S = 13 },
    space = { BLOCK = { 256, 512, 1024 }, LOG_S = { 11, 12, 13, 14 } },
    supports = supports,
    -- a chunk in shared memory, at least two keys a thread
    valid = function(case, cfg)
      local key = KEY[case.dtype]
      return key ~= nil and (1 << cfg.LOG_S) * key.size <= SMEM_OPTIN and (1 << cfg.LOG_S) >= 2 * cfg.BLOCK
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local n = case.params.n
      local key = KEY[case.dtype]
      local s = 1 << cfg.LOG_S
      local p = math.max(sorting.pow2_at_least(n), s)
      local defs = { SORT_KIND = sorting.kind(case.dtype), KEY_T = key.ctype, BLOCK = cfg.BLOCK, LOG_S = cfg.LOG_S }
      local keys = ctx.empty({ p }, key.dtype)
      local smem = s * key.size
      local chunks = p // s
      local steps = { { fn = ctx:kernel("bitonic_sort.cu", "bitonic_sort_chunks", defs), grid = { chunks },
                        block = { cfg.BLOCK }, smem = smem, args = { ins.data, keys, outs.out, ctx.i64(n), ctx.i64(p) } } }
      local g3 = ctx:kernel("bitonic_sort.cu", "bitonic_global3", defs)
      local g2 = ctx:kernel("bitonic_sort.cu", "bitonic_global2", defs)
      local g1 = ctx:kernel("bitonic_sort.cu", "bitonic_global1", defs)
      local merge = ctx:kernel("bitonic_sort.cu", "bitonic_merge", defs)
      local k = 2 * s
      while k <= p do
        local j = k // 2
        while j // 4 >= s do -- three long steps a pass
          steps[#steps + 1] = { fn = g3, grid = { math.min(ctx.cdiv(p // 8, 256), 65535) }, block = { 256 },
                                args = { keys, ctx.i64(p), ctx.i64(j), ctx.i64(k) } }
          j = j // 8
        end
        if j // 2 >= s then -- two
          steps[#steps + 1] = { fn = g2, grid = { math.min(ctx.cdiv(p // 4, 256), 65535) }, block = { 256 },
                                args = { keys, ctx.i64(p), ctx.i64(j), ctx.i64(k) } }
          j = j // 4
        elseif j >= s then -- one
          steps[#steps + 1] = { fn = g1, grid = { math.min(ctx.cdiv(p // 2, 256), 65535) }, block = { 256 },
                                args = { keys, ctx.i64(p), ctx.i64(j), ctx.i64(k) } }
        end
        steps[#steps + 1] = { fn = merge, grid = { chunks }, block = { cfg.BLOCK }, smem = smem,
                              args = { keys, outs.out, ctx.i64(n), ctx.i64(k), ctx.i32(k == p and 1 or 0) } }
        k = k * 2
      end
      return ctx.plan(steps)
    end,
  },
  -- bitonic_sort_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: the bitonic network on int32 keys: BLOCK-key chunks sorted by tl.sort in the network's direction (every stage up to BLOCK, each later stage's short steps), long steps one kernel each",
    default = { BLOCK = 2048, num_warps = 8 },
    space = { BLOCK = { 1024, 2048, 4096 }, num_warps = { 4, 8, 16 } },
    supports = supports,
    plan = function(case, ins, outs, cfg, ctx)
      local n = case.params.n
      local b = cfg.BLOCK
      local p = sorting.pow2_at_least(n)
      local file = "bitonic_sort_triton.py"
      local function chunk(src, dst, k, from, to, programs)
        return ctx:triton { file = file, kernel = "bitonic_chunk_kernel", grid = { programs },
          args = { src = src, dst = dst, n = ctx.i64(n), k = ctx.i64(k) },
          constexprs = { FROM_VALUES = from, TO_VALUES = to, BLOCK = b }, num_warps = cfg.num_warps, num_stages = 1 }
      end
      if p <= b then return ctx.plan { chunk(ins.data, outs.out, b, 1, 1, 1) } end
      local keys = ctx.empty({ p }, "int32")
      local steps = { chunk(ins.data, keys, b, 1, 0, p // b) }
      local SB = 1024
      local k = 2 * b
      while k <= p do
        local j = k // 2
        while j >= b do
          steps[#steps + 1] = ctx:triton { file = file, kernel = "bitonic_step_kernel", grid = { p // 2 // SB },
            args = { keys = keys, j = ctx.i64(j), k = ctx.i64(k) }, constexprs = { BLOCK = SB }, num_warps = 4,
            num_stages = 1 }
          j = j // 2
        end
        local last = k == p
        steps[#steps + 1] = chunk(keys, last and outs.out or keys, k, 0, last and 1 or 0, p // b)
        k = k * 2
      end
      return ctx.plan(steps)
    end,
  },
}

return op
