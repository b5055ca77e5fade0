-- destindex: the KV-cache scatter copy of OPERATORS.md 41: out_nope = o_nope cloned, then
-- out_nope[dest_loc[t]] = kv_nope[t] for every token t (index_copy_ along dim 0); out_rope likewise
-- from o_rope and kv_rope. dest_loc is a random permutation of 0..T-1 (int64), drawn on the host
-- from the case's seed (below). The `cuda` kernel is a point-wise pass over kv's 16-byte vectors
-- (oplib's point-wise family, destindex.cu's own vector); docs/LAYOUT.md.
local oplib = require("oplib")
local grid = require("tilebench.grid")

local op = {}
op.category = "Data Layout"

-- T tokens, rows of ln (kv_nope: heads x dim) and lr (kv_rope) elements.
local function shape(case)
  local p = case.params
  return p.batch_size * p.seq_len, p.kv_nope_head_num, p.kv_nope_head_dim, p.kv_rope_head_num, p.kv_rope_head_dim
end
local function rows(case)
  local T, hn, dn, hr, dr = shape(case)
  return T, hn * dn, hr * dr
end

-- A permutation of 0 .. T-1 by Fisher-Yates on xorshift64* draws seeded from the case's seed and
-- the tensor's name (as ctx's generators seed theirs), so every run of a case scatters alike.
-- T is at most 40960 on the grid: a few milliseconds on the host, uploaded once.
local function permutation(T, seed)
  local s = seed ~ 0x2545F4914F6CDD1D
  if s == 0 then s = 1 end
  local perm = {}
  for i = 1, T do perm[i] = i - 1 end
  for i = T, 2, -1 do
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    local r = ((s * 0x2545F4914F6CDD1D) >> 11) -- 53 random bits, non-negative
    local j = r % i + 1
    perm[i], perm[j] = perm[j], perm[i]
  end
  return perm
end
op.permutation = permutation -- for the specs

function op.inputs(case, ctx)
  local T, hn, dn, hr, dr = shape(case)
  local function gen(name, shp)
    if case.dtype == "int8" then return ctx.randint(name, shp, "int8", -64, 65) end -- [-64, 64]
    return ctx.randn(name, shp, case.dtype)
  end
  return {
    kv_nope = gen("kv_nope", { T, hn, dn }), kv_rope = gen("kv_rope", { T, hr, dr }),
    o_nope = gen("o_nope", { T, hn, dn }), o_rope = gen("o_rope", { T, hr, dr }),
    dest_loc = ctx.from_table(permutation(T, grid.hash(tostring(ctx.seed) .. "/dest_loc")), "int64", { T }),
  }
end

function op.outputs(case, ins, ctx)
  local T, hn, dn, hr, dr = shape(case)
  return { out_nope = ctx.empty({ T, hn, dn }, case.dtype), out_rope = ctx.empty({ T, hr, dr }, case.dtype) }
end

-- The reference: OPERATORS.md's two steps, the clone then the scatter (destindex_ref.cu).
function op.reference(case, ins, outs, ctx)
  local T, ln, lr = rows(case)
  local defs = { DTYPE = ctx.ctype(case.dtype) }
  local clone = ctx:kernel("destindex_ref.cu", "destindex_ref_clone", defs)
  local scatter = ctx:kernel("destindex_ref.cu", "destindex_ref_scatter", defs)
  local all = T * (ln + lr)
  return ctx.plan {
    { fn = clone, grid = { ctx.cdiv(all, 256) }, block = { 256 },
      args = { ins.o_nope, ins.o_rope, outs.out_nope, outs.out_rope, ctx.i64(T * ln), ctx.i64(T * lr) } },
    { fn = scatter, grid = { ctx.cdiv(all, 256) }, block = { 256 },
      args = { ins.kv_nope, ins.kv_rope, ins.dest_loc, outs.out_nope, outs.out_rope, ctx.i64(T), ctx.i64(ln), ctx.i64(lr) } },
  }
end

-- `cuda` (destindex.cu): the scatter only (dest_loc is a permutation: every row of out is
-- written), over the T * (ln + lr) elements in 16-byte vectors. Default BLOCK 128 x UNROLL 2, as
-- matrix_copy (docs/LAYOUT.md).
local _, cuda = oplib.pointwise {
  name = "destindex",
  count = function(case) local T, ln, lr = rows(case) return T * (ln + lr) end,
  args = function(ins, outs, _, ctx, case)
    local T, ln, lr = rows(case)
    return { ins.kv_nope, ins.kv_rope, ins.dest_loc, outs.out_nope, outs.out_rope, ctx.i64(T), ctx.i64(ln), ctx.i64(lr) }
  end,
  default = { BLOCK = 128, UNROLL = 2, WAVES = 0 },
}
cuda.description = "the scatter alone over kv's 16-byte vectors (read in order, each stored at its dest_loc row), UNROLL in flight per thread"

-- Triton: a program per token, its kv_nope row in BLOCK-element chunks and its kv_rope row whole.
local function next_pow2(n) return oplib.next_pow2(n) end
op.implementations = {
  cuda = cuda,
  -- destindex_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per token, its dest_loc row written from kv_nope in BLOCK-element chunks and kv_rope whole",
    default = { BLOCK = 2048, num_warps = 4, num_stages = 1 },
    space = { BLOCK = { 512, 1024, 2048 }, num_warps = { 1, 2, 4, 8 }, num_stages = { 1 } },
    -- each thread at least 16 bytes of a chunk, at most 64 elements
    valid = function(case, cfg)
      local size = require("tb.dtype").info[case.dtype].size
      local per_thread = cfg.BLOCK // (32 * cfg.num_warps)
      return per_thread * size >= 16 and per_thread <= 64
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local T, ln, lr = rows(case)
      return ctx.plan { ctx:triton { file = "destindex_triton.py", kernel = "destindex_kernel", grid = { T },
        args = { kv_nope = ins.kv_nope, kv_rope = ins.kv_rope, dest_loc = ins.dest_loc, out_nope = outs.out_nope,
                 out_rope = outs.out_rope, T = ctx.i64(T) },
        constexprs = { LN = ln, LR = lr, BLOCK = cfg.BLOCK, BR = next_pow2(lr) },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end,
  },
}

return op
