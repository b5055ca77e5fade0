-- cpu_check/layout.lua (GPU, part of tests/gpu/operators_cpu_check.lua): issue 18's data-layout
-- operators (docs/LAYOUT.md): matrix_copy, matrix_transpose, interleave, destindex, reverse_array;
-- no arithmetic, so the reference matches the CPU bit for bit.
-- The table it returns is described in cpu_check/common.lua.
local C = require("cpu_check.common")
local fail, POINTWISE_N = C.fail, C.POINTWISE_N

local cpu = {}

local CASES = {}

-- ---- issue 18's data-layout operators (docs/LAYOUT.md): each moves elements without arithmetic,
-- so the reference must match the CPU bit for bit (exact) and every implementation the reference.
-- Sizes: tails of every kind (counts that are not a multiple of any vector), one element, rows
-- whose bytes are not a multiple of 16 (the kernels' element paths), and a grid-sized case.
-- matrix_copy: B = A + 0 (-0.0 becomes +0.0: equal under the comparison either way)
function cpu.matrix_copy(c, h)
  local out = {}
  for i = 1, #h.A do out[i] = h.A[i] + 0 end
  return out
end
CASES.matrix_copy = { dtypes = { "fp16", "bf16", "fp32", "int8" }, exact = true,
                      params = { { N = 1 }, { N = 37 }, { N = 1001 }, { N = 256 } } }
-- matrix_transpose: out (n, m), out[j, i] = x[i, j]. Shapes: one element, both sides odd (every
-- tile partial, element paths), out rows whose bytes are not a multiple of 16 while x's are and
-- the reverse (one side's vector path only), whole tiles of every dtype, partial tiles on the
-- vector paths.
function cpu.matrix_transpose(c, h)
  local m, n, out = c.params.m, c.params.n, {}
  for i = 0, m - 1 do
    for j = 0, n - 1 do out[j * m + i + 1] = h.x[i * n + j + 1] end
  end
  return out
end
CASES.matrix_transpose = { dtypes = { "fp16", "bf16", "fp32", "int8" }, exact = true,
                           params = { { m = 1, n = 1 }, { m = 37, n = 53 }, { m = 130, n = 264 }, { m = 264, n = 130 },
                                      { m = 256, n = 1024 }, { m = 160, n = 2080 }, { m = 1000, n = 48 } } }
-- interleave: out[2i] = A[i], out[2i + 1] = B[i]; n = 1, tails of every vector width, a grid-like n.
function cpu.interleave(c, h)
  local out = {}
  for i = 1, #h.A do
    out[2 * i - 1], out[2 * i] = h.A[i], h.B[i]
  end
  return out
end
CASES.interleave = { dtypes = { "fp16", "bf16", "fp32", "int8" }, exact = true, params = POINTWISE_N }
-- destindex: out = o cloned, then out[dest_loc[t]] = kv[t] for both pairs (outputs by name). On
-- generated inputs it also checks the generator: dest_loc is a permutation of 0 .. T-1. Shapes:
-- the grid's heads (vector path), rows not a multiple of any vector (scalar path), one token, and
-- rope rows of 8 elements (int8's rope takes the scalar path, the other dtypes vectors).
function cpu.destindex(c, h)
  local p = c.params
  local T = p.batch_size * p.seq_len
  local ln, lr = p.kv_nope_head_num * p.kv_nope_head_dim, p.kv_rope_head_num * p.kv_rope_head_dim
  local seen, perm_ok = {}, #h.dest_loc == T
  for t = 1, #h.dest_loc do
    local d = h.dest_loc[t]
    if math.type(d) ~= "integer" or d < 0 or d >= T or seen[d] then perm_ok = false end
    seen[d] = true
  end
  C.count()
  if not perm_ok then fail("destindex %s: the generated dest_loc is not a permutation of 0..%d", c.id, T - 1) end
  local function scatter(o, kv, len)
    local out = {}
    for i = 1, #o do out[i] = o[i] end
    for t = 0, T - 1 do
      local d = h.dest_loc[t + 1]
      if d >= 0 and d < T then
        for e = 1, len do out[d * len + e] = kv[t * len + e] end
      end
    end
    return out
  end
  return { out_nope = scatter(h.o_nope, h.kv_nope, ln), out_rope = scatter(h.o_rope, h.kv_rope, lr) }
end
CASES.destindex = { dtypes = { "fp16", "bf16", "fp32", "int8" }, exact = true,
  params = { { batch_size = 1, seq_len = 37, kv_nope_head_num = 12, kv_nope_head_dim = 128, kv_rope_head_num = 1, kv_rope_head_dim = 64 },
             { batch_size = 2, seq_len = 5, kv_nope_head_num = 3, kv_nope_head_dim = 7, kv_rope_head_num = 1, kv_rope_head_dim = 5 },
             { batch_size = 1, seq_len = 1, kv_nope_head_num = 12, kv_nope_head_dim = 128, kv_rope_head_num = 1, kv_rope_head_dim = 64 },
             { batch_size = 1, seq_len = 300, kv_nope_head_num = 2, kv_nope_head_dim = 24, kv_rope_head_num = 1, kv_rope_head_dim = 8 },
             { batch_size = 2, seq_len = 2048, kv_nope_head_num = 12, kv_nope_head_dim = 128, kv_rope_head_num = 1, kv_rope_head_dim = 64 } } }
-- reverse_array: out[i] = input[n - 1 - i]; n = 1, odd n (every element one by one in cuda),
-- multiples of every vector width (the vector path), partial last programs in triton.
function cpu.reverse_array(c, h)
  local n, out = #h.input, {}
  for i = 1, n do out[i] = h.input[n + 1 - i] end
  return out
end
CASES.reverse_array = { dtypes = { "fp16", "bf16", "fp32", "int8" }, exact = true,
                        params = { { n = 1 }, { n = 1000003 }, { n = 70001 }, { n = 1000000 }, { n = 4112 } } }

return {
  order = { "matrix_copy", "matrix_transpose", "interleave", "destindex", "reverse_array" },
  cpu = cpu,
  cases = CASES,
}
