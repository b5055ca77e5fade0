-- cpu_check/pointwise.lua (GPU, part of tests/gpu/operators_cpu_check.lua): the elementwise
-- operators (vector_add, mul2, relu, sigmoid, swiglu and issue 16's leaky_relu .. rope): inputs n
-- long with every kind of tail, one element, a grid-sized n.
-- The table it returns is described in cpu_check/common.lua.
local C = require("cpu_check.common")
local round_to, wrap_int8, fail, POINTWISE_N = C.round_to, C.wrap_int8, C.fail, C.POINTWISE_N

local cpu = {}

function cpu.vector_add(c, h)
  local out = {}
  for i = 1, #h.x do
    out[i] = c.dtype == "int8" and wrap_int8(h.x[i] + h.y[i]) or round_to(c.dtype, h.x[i] + h.y[i])
  end
  return out
end

function cpu.mul2(c, h)
  local out = {}
  for i = 1, #h.x do out[i] = c.dtype == "int8" and wrap_int8(2 * h.x[i]) or round_to(c.dtype, 2 * h.x[i]) end
  return out
end

function cpu.relu(c, h)
  local out = {}
  for i = 1, #h.x do
    local v = h.x[i]
    out[i] = (v ~= v or v > 0) and v or 0
  end
  return out
end

-- x * 0.01f rounded to fp32 (the device's product), then to the dtype: PyTorch's two roundings.
local SLOPE = round_to("fp32", 0.01)
function cpu.leaky_relu(c, h)
  local out = {}
  for i = 1, #h.x do
    local v = h.x[i]
    out[i] = v > 0 and v or round_to(c.dtype, round_to("fp32", v * SLOPE))
  end
  return out
end

-- (x * x_keep) rounded to the dtype, then * fp32(1 / (1 - p)) rounded (PyTorch eager's order).
-- The mask itself is checked too: 0/1 values only, and a kept fraction near 1 - p.
function cpu.dropout(c, h)
  local out, scale, kept_n = {}, round_to("fp32", 1 / (1 - c.params.p)), 0
  for i = 1, #h.x do
    local m = h.x_keep[i]
    if m ~= 0 and m ~= 1 then fail("dropout %s: x_keep[%d] = %s, not 0 or 1", c.dtype, i - 1, tostring(m)) end
    kept_n = kept_n + (m ~= 0 and 1 or 0)
    local kept = round_to(c.dtype, round_to("fp32", h.x[i] * m))
    out[i] = round_to(c.dtype, round_to("fp32", kept * scale))
  end
  C.count()
  if #h.x >= 10000 and math.abs(kept_n / #h.x - (1 - c.params.p)) > 0.01 then
    fail("dropout %s n=%d: %d of %d kept, expected a fraction near %g", c.dtype, #h.x, kept_n, #h.x, 1 - c.params.p)
  end
  return out
end

-- z = x * gate + bias with both ops rounded to fp32 (PyTorch eager), then silu(z).
function cpu.fused_activation(c, h)
  local out = {}
  for i = 1, #h.x do
    local z = round_to("fp32", round_to("fp32", h.x[i] * h.gate[i]) + h.bias[i])
    out[i] = round_to("fp32", z / (1 + math.exp(-z)))
  end
  return out
end

function cpu.quantize_global(c, h)
  local out = {}
  for i = 1, #h.x do out[i] = round_to("fp16", h.x[i]) end
  return out
end

-- (state_x[r] * x) rounded to fp32, * fp32(1 / 127) rounded to fp32, then to fp16.
local INV127 = round_to("fp32", 1 / 127)
function cpu.dequantize_rowwise(c, h)
  local rows, cols, out = c.params.rows, c.params.cols, {}
  for r = 0, rows - 1 do
    local s = h.state_x[r + 1]
    for j = 1, cols do
      local i = r * cols + j
      out[i] = round_to("fp16", round_to("fp32", round_to("fp32", s * h.x[i]) * INV127))
    end
  end
  return out
end

-- X * S[i // T, j // T], the product rounded once to the dtype.
function cpu.weight_dequant(c, h)
  local m, t = c.params.M, c.params.TILE_SIZE
  local n = c.params.N or m
  local sn = (n + t - 1) // t
  local out = {}
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local e = i * n + j + 1
      out[e] = round_to(c.dtype, round_to("fp32", h.X[e] * h.S[(i // t) * sn + j // t + 1]))
    end
  end
  return out
end

-- rope: per pair (j, j + D/2) of row (b, s, h), each product and the sum rounded to the dtype.
function cpu.rope(c, h)
  local p = c.params
  local rows, d, half = p.batch_size * p.seq_len * p.n_heads, p.head_dim, p.head_dim // 2
  local function r(v) return round_to(c.dtype, round_to("fp32", v)) end
  local out = {}
  for row = 0, rows - 1 do
    local s = (row // p.n_heads) % p.seq_len
    for j = 0, half - 1 do
      local a, b = h.q[row * d + j + 1], h.q[row * d + j + half + 1]
      local cc, t = h.cos[s * half + j + 1], h.sin[s * half + j + 1]
      out[row * d + j + 1] = r(r(a * cc) - r(b * t))
      out[row * d + j + half + 1] = r(r(b * cc) + r(a * t))
    end
  end
  return out
end

function cpu.sigmoid(c, h)
  local out = {}
  for i = 1, #h.x do out[i] = round_to(c.dtype, 1 / (1 + math.exp(-h.x[i]))) end
  return out
end

-- silu rounded to the dtype, then the product rounded. The device's fp32 silu is within a few
-- fp32 ulps of the exact one, which can flip the first rounding: both outcomes are accepted.
function cpu.swiglu(c, h)
  local out = {}
  for i = 1, #h.x do
    local x, y = h.x[i], h.y[i]
    local silu = x / (1 + math.exp(-x))
    local cands = {}
    for _, d in ipairs({ 0, 4e-7, -4e-7 }) do
      cands[#cands + 1] = round_to(c.dtype, round_to(c.dtype, silu * (1 + d)) * y)
    end
    out[i] = cands
  end
  return out
end

local CASES = {
  vector_add = { dtypes = { "fp16", "bf16", "fp32", "int8" }, params = POINTWISE_N },
  mul2 = { dtypes = { "fp16", "bf16", "fp32", "int8" }, params = POINTWISE_N },
  relu = { dtypes = { "fp16", "bf16", "fp32", "int8" }, params = POINTWISE_N },
  sigmoid = { dtypes = { "fp16", "bf16", "fp32" }, params = POINTWISE_N },
  leaky_relu = { dtypes = { "fp16", "bf16", "fp32" }, params = POINTWISE_N, exact = true },
  dropout = { dtypes = { "fp16", "bf16", "fp32" }, exact = true,
              params = { { n = 1, p = 0.5 }, { n = 1000003, p = 0.5 }, { n = 70001, p = 0.5 } } },
  fused_activation = { dtypes = { "fp32" }, params = POINTWISE_N },
  quantize_global = { dtypes = { "fp32" }, params = POINTWISE_N, exact = true },
  -- cols a multiple of 16 (the vector path) and not (every element scalar), a single row
  -- vector path (N and T multiples of the vector) or not, partial tiles at the edges, one tile
  weight_dequant = { dtypes = { "fp16", "bf16", "fp32" }, exact = true,
                     params = { { M = 37, N = 40, TILE_SIZE = 8 }, { M = 100, N = 100, TILE_SIZE = 16 },
                                { M = 130, TILE_SIZE = 128 }, { M = 1024, TILE_SIZE = 128 },
                                { M = 5, N = 7, TILE_SIZE = 3 }, { M = 300, N = 256, TILE_SIZE = 64 } } },
  -- head_dim 128 (the grid's), 16 and 8 (vector path for fp32, and for fp16 at 16), 6 (scalar)
  rope = { dtypes = { "fp16", "fp32" }, exact = true,
           params = { { batch_size = 2, seq_len = 37, n_heads = 3, head_dim = 128 },
                      { batch_size = 1, seq_len = 300, n_heads = 32, head_dim = 128 },
                      { batch_size = 3, seq_len = 5, n_heads = 7, head_dim = 16 },
                      { batch_size = 1, seq_len = 9, n_heads = 5, head_dim = 8 },
                      { batch_size = 2, seq_len = 11, n_heads = 3, head_dim = 6 } } },
  dequantize_rowwise = { dtypes = { "int8" }, exact = true,
                         params = { { rows = 37, cols = 1008 }, { rows = 5, cols = 1001 }, { rows = 1, cols = 7 },
                                    { rows = 300, cols = 4096 }, { rows = 3, cols = 40 },
                                    -- rows shorter than 32 pieces (a group's high piece rows
                                    -- further by division), rows of 33 pieces (one row further)
                                    { rows = 100, cols = 40 }, { rows = 33, cols = 264 } } },
  swiglu = { dtypes = { "fp16", "bf16", "fp32" }, params = { { M = 3, N = 1001 }, { M = 64, N = 1024 }, { M = 1, N = 7 } } },
}

return {
  order = {
    "vector_add", "mul2", "relu", "sigmoid", "swiglu", "leaky_relu", "dropout",
    "fused_activation", "quantize_global", "dequantize_rowwise", "weight_dequant", "rope",
  },
  cpu = cpu,
  cases = CASES,
}
