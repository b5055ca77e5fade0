-- operators_cpu_check.lua (GPU): the memory-bound operators (vector_add, mul2, relu, sigmoid,
-- swiglu, softmax, layernorm, rmsnorm, mean_reduction, argmax, and issue 16's, including the
-- matmuls matmul_int8 and streamk_matmul: ORDER below lists every operator checked). On small
-- cases with odd sizes (tails of every kind, rows shorter and longer than a warp's reach), per
-- dtype:
--   1. the GPU reference agrees with a plain CPU implementation (Lua, on tensor:to_host(), with the
--      dtype's rounding points emulated) within the operator's tolerance;
--   2. the `cuda` implementation, in its default configuration and in a spread of autotune
--      candidates, verifies against the reference with tb.verify (outputs poisoned first); the
--      row-wise ones also with 2 and 4 rows per group (RPG) on row counts that leave partial groups,
--      and their stream kernels (STAGES >= 1) with 1 to 3 slots and grids smaller than the row count,
--      and with FULLVEC = 1 (bound checks per vector) in both kernel families.
-- argmax also gets rows with planted ties, which must resolve to the first index.
-- Issue 16's reduction/norm operators (l2_norm .. batch_normalization) also run their `triton`
-- default on every small case where triton imports; moe_topk_gating gets planted ties (lower index
-- first) and histogramming out-of-range values (not counted), both for the reference, cuda and
-- triton; kl_divergence, moe_topk_gating and histogramming check their input generators.
-- flash_decode, linear_self_attention, flash_attention and block_sparse_attention (issue 16's
-- attention) also run their `triton` default (block_sparse_attention also a spread of its space);
-- flash_decode gets b_seqlen values other than the generator's (0, negative, past the allocation,
-- partial blocks); flash_decode's and linear_self_attention's plans, which keep state on the device
-- (counters, a workspace), are run three times and must still verify.
-- Issue 18's stencils (jacobi_stencil_2d, gaussian_blur ...; docs/STENCILS.md) are compared with the
-- CPU (jacobi bit for bit: it emulates every rounding) and also run their `triton` default;
-- gaussian_blur's generated kernel is checked (in [0, 1], summing to 1); 2d_max_pooling gets
-- planted NaN and -inf (NaN propagates, exactly as the CPU says).
-- Issue 18's sorting operators (radix_sort, top_k_selection, bitonic_sort; docs/SORTING.md): the
-- reference against a plain Lua sort exactly, cuda (and lib where libtb_cub.so opens) in a spread
-- of its space and triton's default; then planted values (duplicates past k, NaN of both signs,
-- +-inf, signed zeros, subnormals; negative and extreme int32): NaN last in a sort, first in a
-- top-k, every value as often as it occurs.
-- Exits 77 (skipped) where no device is present.
-- usage: tilebench script tests/gpu/operators_cpu_check.lua [--compile-only] [OPERATOR ...]
--   --compile-only: no device needed; compiles every kernel the check would run into the NVRTC
--   cache ($TILEBENCH_CACHE_DIR), in compile-only contexts as `tilebench compile` does, so a GPU
--   machine spends its time on the checks (hundreds of configurations: minutes of NVRTC).
local compile_only = arg[1] == "--compile-only"
if compile_only then table.remove(arg, 1) end
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev and not compile_only then
  io.stderr:write("skipped: ", tostring(why), "\n")
  os.exit(77)
end

local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local runner = require("tilebench.runner")
local config = require("tilebench.config")
local verify = require("tb.verify")

local failures, checks = 0, 0
local function fail(fmt, ...)
  failures = failures + 1
  io.stderr:write("FAILED: ", string.format(fmt, ...), "\n")
end

-- ---- rounding to a dtype, as the device does it (round to nearest, ties to even) -------------
local function round_bits(v, p, emin, maxv)
  if v ~= v or v == 0 or v == math.huge or v == -math.huge then return v end
  local a = math.abs(v)
  local e = math.floor(math.log(a, 2))
  if 2.0 ^ e > a then e = e - 1 elseif 2.0 ^ (e + 1) <= a then e = e + 1 end
  if e < emin then e = emin end             -- subnormals share the smallest exponent
  local q = 2.0 ^ (e - p + 1)               -- the spacing of representable values near a
  local x = a / q
  local r = math.floor(x)
  local frac = x - r
  if frac > 0.5 or (frac == 0.5 and r % 2 == 1) then r = r + 1 end
  local res = r * q
  if res > maxv then res = math.huge end
  return v < 0 and -res or res
end

local function round_to(dtype, v)
  if dtype == "fp32" then return (string.unpack("f", string.pack("f", v))) end
  if dtype == "fp16" then return round_bits(v, 11, -14, 65504) end
  if dtype == "bf16" then return round_bits(v, 8, -126, 3.3895313892515355e38) end
  error("round_to: " .. dtype)
end

local function wrap_int8(v) return ((v + 128) % 256) - 128 end

-- ---- the CPU implementations: inputs as flat host tables, result a flat table ----------------
-- Each returns expected values; an entry may be a list of acceptable values where the device's
-- fp32 arithmetic may legitimately land an intermediate rounding on either side (see swiglu).
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
  checks = checks + 1
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

local function rows_of(h, rows, cols, f)
  local out = {}
  for r = 0, rows - 1 do f(r * cols, out) end
  return out
end

function cpu.softmax(c, h)
  local rows, cols = c.params.n_rows, c.params.n_cols
  return rows_of(h, rows, cols, function(base, out)
    local m = -math.huge
    for j = 1, cols do m = math.max(m, h.x[base + j]) end
    local s = 0
    for j = 1, cols do s = s + math.exp(h.x[base + j] - m) end
    for j = 1, cols do out[base + j] = round_to(c.dtype, math.exp(h.x[base + j] - m) / s) end
  end)
end

function cpu.layernorm(c, h)
  local cols = c.params.K
  return rows_of(h, c.params.batch * c.params.M, cols, function(base, out)
    local s = 0
    for j = 1, cols do s = s + h.x[base + j] end
    local mean = s / cols
    local v = 0
    for j = 1, cols do v = v + (h.x[base + j] - mean) ^ 2 end
    local rstd = 1 / math.sqrt(v / cols + 1e-5)
    for j = 1, cols do
      out[base + j] = round_to(c.dtype, (h.x[base + j] - mean) * rstd * h.weight[j] + h.bias[j])
    end
  end)
end

function cpu.rmsnorm(c, h)
  local cols = c.params.K
  return rows_of(h, c.params.batch * c.params.M, cols, function(base, out)
    local ss = 0
    for j = 1, cols do ss = ss + h.x[base + j] ^ 2 end
    local rstd = 1 / math.sqrt(ss / cols + 1e-6)
    for j = 1, cols do out[base + j] = round_to(c.dtype, h.x[base + j] * rstd * h.rms_w[j]) end
  end)
end

function cpu.l2_norm(c, h)
  local cols = c.params.K
  return rows_of(h, c.params.batch * c.params.M, cols, function(base, out)
    local ss = 0
    for j = 1, cols do ss = ss + h.x[base + j] ^ 2 end
    local rstd = 1 / math.sqrt(ss + 1e-6)
    for j = 1, cols do out[base + j] = round_to(c.dtype, h.x[base + j] * rstd) end
  end)
end

function cpu.cross_entropy(c, h)
  local rows, cols = c.params.batch_size, c.params.num_classes
  local out = {}
  for r = 0, rows - 1 do
    local m = -math.huge
    for j = 1, cols do m = math.max(m, h.logits[r * cols + j]) end
    local s = 0
    for j = 1, cols do s = s + math.exp(h.logits[r * cols + j] - m) end
    out[r + 1] = round_to(c.dtype, m + math.log(s) - h.logits[r * cols + h.targets[r + 1] + 1])
  end
  return out
end

-- Also checks the operator's input generator (kl_divergence_gen.cu): every row of y_true is a
-- distribution (positive, summing to 1), every row of log_y_pred one in log space.
function cpu.kl_divergence(c, h)
  local rows, cols = c.params.rows, c.params.cols
  local out = {}
  for r = 0, rows - 1 do
    local s, sy, sp, ypos = 0, 0, 0, true
    for j = 1, cols do
      local y, lp = h.y_true[r * cols + j], h.log_y_pred[r * cols + j]
      s = s + y * (math.log(y) - lp)
      sy, sp, ypos = sy + y, sp + math.exp(lp), ypos and y > 0
    end
    checks = checks + 1
    if not (ypos and math.abs(sy - 1) < 1e-4 and math.abs(sp - 1) < 1e-4) then
      fail("kl_divergence rows=%d cols=%d: generated row %d: y_true sums to %.7g (all positive: %s), exp(log_y_pred) to %.7g",
           rows, cols, r, sy, tostring(ypos), sp)
    end
    out[r + 1] = round_to("fp32", s)
  end
  return out
end

-- The k best of each row in value order, equal values by the lower index (the operator's stated
-- rule), softmax of the k values; weights and indices by output name. On generated inputs (not the
-- planted ties) it also checks the generator: each row is a permutation of linspace(-3, 3, E)
-- computed in fp32 (moe_topk_gating_gen.cu's arithmetic, no contraction) rounded to the dtype.
function cpu.moe_topk_gating(c, h)
  local M, E, k = c.params.M, c.params.E, c.params.k
  local x = h.logits
  local lin
  if c.id ~= "ties" then
    local f32 = function(v) return round_to("fp32", v) end
    local step = f32(6 / (E > 1 and E - 1 or 1))
    lin = {}
    for i = 0, E - 1 do
      lin[i + 1] = round_to(c.dtype, i < E // 2 and f32(-3 + f32(step * i)) or f32(3 - f32(step * (E - 1 - i))))
    end
    table.sort(lin)
  end
  local w, idx = {}, {}
  for r = 0, M - 1 do
    local order = {}
    for j = 0, E - 1 do order[j + 1] = j end
    table.sort(order, function(a, b)
      local va, vb = x[r * E + a + 1], x[r * E + b + 1]
      if va ~= vb then return va > vb end
      return a < b
    end)
    if lin then
      local row = {}
      for j = 1, E do row[j] = x[r * E + j] end
      table.sort(row)
      checks = checks + 1
      for j = 1, E do
        if row[j] ~= lin[j] then
          fail("moe_topk_gating %s %s: generated row %d is not a permutation of linspace(-3, 3, %d): sorted[%d] = %.9g, expected %.9g",
               c.dtype, c.id, r, E, j - 1, row[j], lin[j])
          break
        end
      end
    end
    local top, s = x[r * E + order[1] + 1], 0
    for q = 1, k do s = s + math.exp(x[r * E + order[q] + 1] - top) end
    for q = 1, k do
      w[r * k + q] = round_to(c.dtype, math.exp(x[r * E + order[q] + 1] - top) / s)
      idx[r * k + q] = order[q]
    end
  end
  return { weights = w, indices = idx }
end

-- Counts of the values in [0, num_bins) (others not counted: the operator's rule); on generated
-- inputs it also checks the generator (input[i] = i % num_bins).
function cpu.histogramming(c, h)
  local bins = c.params.num_bins
  local hist = {}
  for b = 1, bins do hist[b] = 0 end
  local gen_ok = true
  for i = 1, #h.input do
    local v = h.input[i]
    if v >= 0 and v < bins then hist[v + 1] = hist[v + 1] + 1 end
    if v ~= (i - 1) % bins then gen_ok = false end
  end
  if c.id ~= "outliers" then
    checks = checks + 1
    if not gen_ok then fail("histogramming %s: the generated input is not arange(N) %% num_bins", c.id) end
  end
  return hist
end

function cpu.batch_normalization(c, h)
  local N, C, eps = c.params.N, c.params.C, c.params.eps
  local out = {}
  for ch = 1, C do
    local s = 0
    for n = 0, N - 1 do s = s + h.x[n * C + ch] end
    local mean = s / N
    local v = 0
    for n = 0, N - 1 do v = v + (h.x[n * C + ch] - mean) ^ 2 end
    local rstd = 1 / math.sqrt(v / N + eps)
    for n = 0, N - 1 do
      out[n * C + ch] = round_to(c.dtype, (h.x[n * C + ch] - mean) * rstd * h.gamma[ch] + h.beta[ch])
    end
  end
  return out
end

-- flash_decode: per (b, h) the lse-weighted mean of the first nb blocks (double precision),
-- nb = min(ceil(b_seqlen[b] / block_seq), num_blocks), 0 for b_seqlen <= 0 (out = 0 / 1e-10).
function cpu.flash_decode(c, h)
  local p = c.params
  local nbk = (p.seq_len + p.block_seq - 1) // p.block_seq
  local out = {}
  for bh = 0, p.batch * p.heads - 1 do
    local len = h.b_seqlen[bh // p.heads + 1]
    local nb = len <= 0 and 0 or math.min((len - 1) // p.block_seq + 1, nbk)
    local m = -math.huge
    for s = 0, nb - 1 do m = math.max(m, h.mid_o_lse[bh * nbk + s + 1]) end
    local w, sw = {}, 0
    for s = 0, nb - 1 do
      w[s] = math.exp(h.mid_o_lse[bh * nbk + s + 1] - m)
      sw = sw + w[s]
    end
    for d = 0, p.head_dim - 1 do
      local a = 0
      for s = 0, nb - 1 do a = a + w[s] * h.mid_o[(bh * nbk + s) * p.head_dim + d + 1] end
      out[bh * p.head_dim + d + 1] = a / (sw + 1e-10)
    end
  end
  return out
end

-- linear_self_attention: S = phi(K)^T V, Z = column sums of phi(K), out = phi(Q) S / (phi(Q) Z +
-- eps), in double with phi rounded to fp32 as the kernels compute it (x + 1, or exp).
local function lsa_phi(x) return round_to("fp32", x > 0 and x + 1 or math.exp(x)) end
function cpu.linear_self_attention(c, h)
  local M, D, eps = c.params.M, c.params.D, c.params.eps
  local S, Z = {}, {}
  for i = 0, D * D - 1 do S[i] = 0 end
  for i = 0, D - 1 do Z[i] = 0 end
  for m = 0, M - 1 do
    local base = m * D
    for i = 0, D - 1 do
      local pk = lsa_phi(h.K[base + i + 1])
      Z[i] = Z[i] + pk
      local row = i * D
      for j = 0, D - 1 do S[row + j] = S[row + j] + pk * h.V[base + j + 1] end
    end
  end
  local out, pq = {}, {}
  for m = 0, M - 1 do
    local base = m * D
    local den = 0
    for i = 0, D - 1 do
      pq[i] = lsa_phi(h.Q[base + i + 1])
      den = den + pq[i] * Z[i]
    end
    for j = 0, D - 1 do
      local num = 0
      for i = 0, D - 1 do num = num + pq[i] * S[i * D + j] end
      out[base + j + 1] = num / (den + eps)
    end
  end
  return out
end

-- flash_attention: softmax(q k^T / sqrt(D) + causal) v per (b, h) in double (two passes), against
-- the fp16 reference within fp16's tolerance (the reference rounds once).
function cpu.flash_attention(c, h)
  local p = c.params
  local S, D = p.seq_len, p.head_dim
  local causal = p.causal == nil or p.causal == true or p.causal == 1
  local scale = 1 / math.sqrt(D)
  local out = {}
  for bh = 0, p.batch_size * p.n_heads - 1 do
    local base = bh * S * D
    for i = 0, S - 1 do
      local jend = causal and i or S - 1
      local w, m = {}, -math.huge
      for j = 0, jend do
        local dot = 0
        for d = 1, D do dot = dot + h.q[base + i * D + d] * h.k[base + j * D + d] end
        w[j] = dot * scale
        if w[j] > m then m = w[j] end
      end
      local l = 0
      for j = 0, jend do
        w[j] = math.exp(w[j] - m)
        l = l + w[j]
      end
      for d = 1, D do
        local a = 0
        for j = 0, jend do a = a + w[j] * h.v[base + j * D + d] end
        out[base + i * D + d] = a / l
      end
    end
  end
  return out
end

-- block_sparse_attention: the admissible keys from OPERATORS.md 26's own rule (key block n //
-- BLOCK_N in max(0, r - 2) .. r for r = m // BLOCK_M, and n <= m; not from the layout tensors, so
-- the layout the operator builds is checked too), kv head h // (H / H_kv), softmax in double (two
-- passes), against the fp16 reference within fp16's tolerance.
function cpu.block_sparse_attention(c, h)
  local p = c.params
  local M, D, G = p.M, p.D, p.H // p.H_kv
  local scale = 1 / math.sqrt(D)
  local out = {}
  for b = 0, p.B - 1 do
    for hh = 0, p.H - 1 do
      local qbase = (b * p.H + hh) * M * D
      local kbase = (b * p.H_kv + hh // G) * M * D
      for m = 0, M - 1 do
        local r = m // p.BLOCK_M
        local keys, w, mx = {}, {}, -math.huge
        for n = 0, m do
          local cb = n // p.BLOCK_N
          if cb >= math.max(0, r - 2) and cb <= r then
            local dot = 0
            for d = 1, D do dot = dot + h.q[qbase + m * D + d] * h.k[kbase + n * D + d] end
            keys[#keys + 1] = n
            w[#keys] = dot * scale
            if w[#keys] > mx then mx = w[#keys] end
          end
        end
        local l = 0
        for i = 1, #keys do
          w[i] = math.exp(w[i] - mx)
          l = l + w[i]
        end
        for d = 1, D do
          local a = 0
          for i = 1, #keys do a = a + w[i] * h.v[kbase + keys[i] * D + d] end
          out[qbase + m * D + d] = l > 0 and a / l or 0
        end
      end
    end
  end
  return out
end

function cpu.mean_reduction(c, h)
  local rows, cols = c.params.M, c.params.N
  local out = {}
  for r = 0, rows - 1 do
    local s = 0
    for j = 1, cols do s = s + h.x[r * cols + j] end
    out[r + 1] = round_to("fp32", s / cols)
  end
  return out
end

function cpu.argmax(c, h)
  local rows, cols = c.params.M, c.params.N
  local out = {}
  for r = 0, rows - 1 do
    local best, bi = h.x[r * cols + 1], 0
    for j = 2, cols do
      local v = h.x[r * cols + j]
      if best ~= best then break end
      if v ~= v or v > best then best, bi = v, j - 1 end
    end
    out[r + 1] = bi
  end
  return out
end

-- matmul_int8: A int8 (M, K) @ Bu (K, N), Bu[i * K4 + k, n] = ((B[k, n] >> 2i) & 3) - 1, exact
-- int32 sums. On generated inputs it also checks the generator's ranges (A in [-64, 64], B any byte).
function cpu.matmul_int8(c, h)
  local M, N, K = c.params.M, c.params.N, c.params.K
  local k4 = K // 4
  local a, b = h.a, h.b
  checks = checks + 1
  for i = 1, #a do
    if a[i] < -64 or a[i] > 64 or math.type(a[i]) ~= "integer" then
      fail("matmul_int8 %s: a[%d] = %s is outside randint(-64, 65)", c.id, i - 1, tostring(a[i]))
      break
    end
  end
  local bu = {} -- Bu row-major, decoded once
  for kk = 0, K - 1 do
    local slice, r = kk // k4, kk % k4
    for n = 0, N - 1 do bu[kk * N + n + 1] = ((b[r * N + n + 1] >> (2 * slice)) & 3) - 1 end
  end
  local out = {}
  for m = 0, M - 1 do
    local row = {}
    for n = 1, N do row[n] = 0 end
    for kk = 0, K - 1 do
      local av = a[m * K + kk + 1]
      if av ~= 0 then
        local base = kk * N
        for n = 1, N do row[n] = row[n] + av * bu[base + n] end
      end
    end
    for n = 1, N do out[m * N + n] = row[n] end
  end
  return out
end

-- streamk_matmul: C = A @ B in double, rounded once to the dtype (the reference sums in fp32:
-- CASES' cpu_tol allows for that).
function cpu.streamk_matmul(c, h)
  local M, N, K = c.params.m, c.params.n, c.params.k
  local a, b = h.a, h.b
  local out = {}
  for m = 0, M - 1 do
    local row = {}
    for n = 1, N do row[n] = 0 end
    for kk = 0, K - 1 do
      local av, base = a[m * K + kk + 1], kk * N
      for n = 1, N do row[n] = row[n] + av * b[base + n] end
    end
    for n = 1, N do out[m * N + n] = round_to(c.dtype, row[n]) end
  end
  return out
end

-- ---- issue 18's stencils (docs/STENCILS.md) ------------------------------------------------
-- jacobi_stencil_2d: boundary rows and columns copied; interior ((up + down) + left) + right,
-- each sum rounded to the dtype, then * 0.25 rounded (PyTorch eager).
function cpu.jacobi_stencil_2d(c, h)
  local rows, cols = c.params.rows, c.params.cols or c.params.rows
  local x, out, dt = h.input, {}, c.dtype
  for r = 0, rows - 1 do
    for j = 0, cols - 1 do
      local i = r * cols + j + 1
      if r == 0 or r == rows - 1 or j == 0 or j == cols - 1 then
        out[i] = x[i]
      else
        local t = round_to(dt, x[i - cols] + x[i + cols])
        t = round_to(dt, t + x[i - 1])
        t = round_to(dt, t + x[i + 1])
        out[i] = round_to(dt, 0.25 * t)
      end
    end
  end
  return out
end

-- gaussian_blur: the zero-padded "same" cross-correlation summed in double, rounded once. The
-- generated kernel is checked too: values in [0, 1] summing to 1 within the dtype's rounding.
function cpu.gaussian_blur(c, h)
  local p = c.params
  local R, C, kr, kc = p.input_rows, p.input_cols or p.input_rows, p.kernel_rows, p.kernel_cols
  local x, w, out = h.input, h.kernel, {}
  local sum, bad = 0, false
  for i = 1, kr * kc do
    sum = sum + w[i]
    bad = bad or w[i] < 0 or w[i] > 1
  end
  checks = checks + 1
  if bad or math.abs(sum - 1) > kr * kc * (c.dtype == "fp32" and 1e-6 or 1e-3) then
    fail("gaussian_blur %s: the generated kernel sums to %.9g (values in [0, 1]: %s)", c.dtype, sum, tostring(not bad))
  end
  local hr, hc = kr // 2, kc // 2
  for r = 0, R - 1 do
    for col = 0, C - 1 do
      local s = 0.0
      for a = 0, kr - 1 do
        local rr = r + a - hr
        if rr >= 0 and rr < R then
          local base, wb = rr * C + 1, a * kc + 1
          for b = 0, kc - 1 do
            local cc = col + b - hc
            if cc >= 0 and cc < C then s = s + x[base + cc] * w[wb + b] end
          end
        end
      end
      out[r * C + col + 1] = round_to(c.dtype, s)
    end
  end
  return out
end

-- 2d_max_pooling: the K x K window's maximum, positions outside the image skipped (-inf padding),
-- a NaN in the window giving NaN (PyTorch's max_pool2d); exact.
cpu["2d_max_pooling"] = function(c, h)
  local p = c.params
  local planes, H, W = p.N * p.C, p.H, p.W or p.H
  local K, S, P = p.kernel_size, p.stride, p.padding
  local Ho, Wo = (H + 2 * P - K) // S + 1, (W + 2 * P - K) // S + 1
  local x, out = h.input, {}
  for pl = 0, planes - 1 do
    for oh = 0, Ho - 1 do
      for ow = 0, Wo - 1 do
        local m = -math.huge
        for a = 0, K - 1 do
          local r = oh * S - P + a
          if r >= 0 and r < H then
            for b = 0, K - 1 do
              local col = ow * S - P + b
              if col >= 0 and col < W then
                local v = x[(pl * H + r) * W + col + 1]
                if m == m and (v ~= v or v > m) then m = v end
              end
            end
          end
        end
        out[(pl * Ho + oh) * Wo + ow + 1] = m
      end
    end
  end
  return out
end

-- ---- the sorting operators (docs/SORTING.md): values only, so a sort's only rules are the order
-- and the multiplicity of equal values; NaN is the largest value (last in a sort, first in a
-- top-k), -0.0 and +0.0 are equal values (either order passes: the comparison is by value).
local function sort_lt(a, b)
  if a ~= a then return false end -- NaN is never below anything
  if b ~= b then return true end
  return a < b
end

local function sorted_copy(t, desc)
  local out = {}
  for i = 1, #t do out[i] = t[i] end
  if desc then table.sort(out, function(a, b) return sort_lt(b, a) end) else table.sort(out, sort_lt) end
  return out
end

function cpu.radix_sort(c, h) return sorted_copy(h.input) end

function cpu.bitonic_sort(c, h) return sorted_copy(h.data) end

function cpu.top_k_selection(c, h)
  local all, out = sorted_copy(h.input, true), {}
  for i = 1, c.params.k do out[i] = all[i] end
  return out
end

-- ---- small cases: odd sizes for tails, rows shorter and longer than one warp covers ---------
-- exact = true: the CPU implementation emulates every rounding of the reference, which must then
-- agree bit for bit (atol = rtol = 0), not merely within the output dtype's tolerance.
local POINTWISE_N = { { n = 1 }, { n = 1000003 }, { n = 70001 } }
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
  softmax = { dtypes = { "fp16", "fp32" },
              params = { { n_rows = 5, n_cols = 1000 }, { n_rows = 33, n_cols = 2049 }, { n_rows = 4, n_cols = 10240 },
                         { n_rows = 3, n_cols = 7 }, { n_rows = 7, n_cols = 10240 }, { n_rows = 9, n_cols = 2049 },
                         { n_rows = 1001, n_cols = 100 }, { n_rows = 300, n_cols = 4096 } } },
  layernorm = { dtypes = { "fp16", "bf16", "fp32" },
                params = { { batch = 1, M = 5, K = 1001 }, { batch = 2, M = 3, K = 4096 }, { batch = 1, M = 7, K = 10240 },
                           { batch = 1, M = 3, K = 9 }, { batch = 1, M = 9, K = 2049 }, { batch = 7, M = 143, K = 40 },
                           { batch = 2, M = 150, K = 4096 } } },
  rmsnorm = { dtypes = { "fp16", "bf16", "fp32" },
              params = { { batch = 1, M = 5, K = 1001 }, { batch = 2, M = 3, K = 4096 }, { batch = 1, M = 7, K = 10240 },
                         { batch = 1, M = 3, K = 9 }, { batch = 1, M = 9, K = 2049 }, { batch = 7, M = 143, K = 40 },
                           { batch = 2, M = 150, K = 4096 } } },
  l2_norm = { dtypes = { "fp16", "bf16", "fp32" },
              params = { { batch = 1, M = 5, K = 1001 }, { batch = 2, M = 3, K = 4096 }, { batch = 1, M = 7, K = 10240 },
                         { batch = 1, M = 3, K = 9 }, { batch = 1, M = 9, K = 2049 }, { batch = 7, M = 143, K = 40 },
                         { batch = 2, M = 150, K = 4096 } } },
  cross_entropy = { dtypes = { "fp16", "fp32" },
                    params = { { batch_size = 5, num_classes = 1001 }, { batch_size = 33, num_classes = 512 },
                               { batch_size = 3, num_classes = 7 }, { batch_size = 1001, num_classes = 100 },
                               { batch_size = 9, num_classes = 20480 }, { batch_size = 300, num_classes = 4096 } } },
  kl_divergence = { dtypes = { "fp32" },
                    params = { { rows = 5, cols = 1001 }, { rows = 33, cols = 1024 }, { rows = 3, cols = 7 },
                               { rows = 7, cols = 16384 }, { rows = 1001, cols = 100 }, { rows = 9, cols = 4098 } } },
  moe_topk_gating = { dtypes = { "fp16", "bf16", "fp32" },
                      params = { { M = 5, E = 128, k = 2 }, { M = 1001, E = 128, k = 2 }, { M = 33, E = 7, k = 3 },
                                 { M = 9, E = 1000, k = 8 }, { M = 300, E = 64, k = 1 }, { M = 17, E = 37, k = 4 },
                                 { M = 6, E = 128, k = 4 } } },
  histogramming = { dtypes = { "int32" },
                    params = { { N = 1, num_bins = 64 }, { N = 1000003, num_bins = 64 }, { N = 70001, num_bins = 4096 },
                               { N = 262147, num_bins = 1000 }, { N = 5, num_bins = 7 }, { N = 65536, num_bins = 256 } } },
  -- N = 1: the variance is 0 and y = beta (torch refuses one row in training mode; the grid has none)
  batch_normalization = { dtypes = { "fp16", "bf16", "fp32" },
                          params = { { N = 7, C = 1024, eps = 1e-5 }, { N = 1000, C = 1024, eps = 1e-5 },
                                     { N = 333, C = 100, eps = 1e-5 }, { N = 2, C = 37, eps = 1e-5 },
                                     { N = 5001, C = 64, eps = 1e-5 }, { N = 1, C = 33, eps = 1e-5 },
                                     { N = 3000, C = 1030, eps = 1e-5 } } },
  -- the grid's first case (one CTA per (b, h)), a partial last block, many splits (2500 blocks:
  -- the split count capped), head_dim 6 (scalar loads, a row narrower than a warp), 256 (two
  -- vectors a thread), one block, and the grid's largest case
  flash_decode = { dtypes = { "fp32" },
                   params = { { batch = 2, heads = 8, head_dim = 128, block_seq = 128, seq_len = 2048 },
                              { batch = 3, heads = 5, head_dim = 128, block_seq = 128, seq_len = 1000 },
                              { batch = 1, heads = 3, head_dim = 64, block_seq = 16, seq_len = 40000 },
                              { batch = 2, heads = 2, head_dim = 6, block_seq = 7, seq_len = 100 },
                              { batch = 1, heads = 1, head_dim = 256, block_seq = 128, seq_len = 128 },
                              { batch = 2, heads = 8, head_dim = 128, block_seq = 128, seq_len = 40960 } } },
  -- M not a multiple of 32 (rows past M must enter neither S nor Z), each D of the grid, one row,
  -- and the grid's odd M = 10000
  linear_self_attention = { dtypes = { "fp32" },
                            params = { { M = 37, D = 32, eps = 1e-6 }, { M = 1000, D = 64, eps = 1e-6 },
                                       { M = 130, D = 128, eps = 1e-6 }, { M = 5, D = 256, eps = 1e-6 },
                                       { M = 1, D = 32, eps = 1e-6 }, { M = 10000, D = 32, eps = 1e-6 },
                                       -- more 128-row tiles than SMs: the default's 64-row
                                       -- tiles compiled for 3 CTAs an SM (out_tiles)
                                       { M = 17000, D = 32, eps = 1e-6 } } },
  -- causal = 1/0 (the grid's true): rows past S in the last query tile and keys past S in the last
  -- key tile (37, 130), D = 64 and 16, a non-causal case, an exact multiple of 128 rows, one row;
  -- for VARIANT wgmma (every valid candidate runs at each case: configs_to_try) also query tiles
  -- whose key loop wraps the K/V ring several times, each slot's mbarrier parity flipping (777
  -- causal: 7 query tiles, up to 13 key tiles of 64; 600 non-causal, D = 64: 10 tiles of 64), and
  -- D = 16 and 64 (TMA zero-fills the columns up to 64 past D)
  flash_attention = { dtypes = { "fp16" },
                      params = { { batch_size = 1, n_heads = 2, seq_len = 37, head_dim = 128, causal = 1 },
                                 { batch_size = 2, n_heads = 1, seq_len = 130, head_dim = 64, causal = 1 },
                                 { batch_size = 1, n_heads = 1, seq_len = 200, head_dim = 128, causal = 0 },
                                 { batch_size = 1, n_heads = 1, seq_len = 256, head_dim = 128, causal = 1 },
                                 { batch_size = 1, n_heads = 3, seq_len = 70, head_dim = 16, causal = 1 },
                                 { batch_size = 1, n_heads = 1, seq_len = 1, head_dim = 128, causal = 1 },
                                 { batch_size = 1, n_heads = 2, seq_len = 777, head_dim = 128, causal = 1 },
                                 { batch_size = 1, n_heads = 1, seq_len = 600, head_dim = 64, causal = 0 } } },
  -- TileBench's blocks (64) with a single partial row block (37: rows past M in the CTA), a window
  -- sliding over 4 row blocks the last partial (200), 5 full ones with D = 64 and GQA groups of 4
  -- (320), no GQA with an odd head count (130), one row, smaller blocks (32 and 16: key tiles of 32
  -- and 16, fewer warps a CTA, D = 16 and 32), blocks of 128 (two key tiles a listed block, two
  -- CTAs a layout row)
  block_sparse_attention = { dtypes = { "fp16" },
    params = { { B = 1, H = 4, H_kv = 2, M = 37, D = 128, BLOCK_M = 64, BLOCK_N = 64 },
               { B = 1, H = 2, H_kv = 1, M = 200, D = 128, BLOCK_M = 64, BLOCK_N = 64 },
               { B = 2, H = 4, H_kv = 1, M = 320, D = 64, BLOCK_M = 64, BLOCK_N = 64 },
               { B = 1, H = 3, H_kv = 3, M = 130, D = 128, BLOCK_M = 64, BLOCK_N = 64 },
               { B = 1, H = 2, H_kv = 2, M = 1, D = 128, BLOCK_M = 64, BLOCK_N = 64 },
               { B = 1, H = 2, H_kv = 1, M = 150, D = 16, BLOCK_M = 32, BLOCK_N = 32 },
               { B = 1, H = 4, H_kv = 2, M = 100, D = 32, BLOCK_M = 16, BLOCK_N = 16 },
               { B = 1, H = 2, H_kv = 1, M = 300, D = 64, BLOCK_M = 128, BLOCK_N = 128 } } },
  mean_reduction = { dtypes = { "fp16", "bf16", "fp32" },
                     params = { { M = 5, N = 1001 }, { M = 33, N = 20480 }, { M = 3, N = 17 }, { M = 7, N = 20480 },
                                { M = 9, N = 4097 }, { M = 1001, N = 100 }, { M = 300, N = 4096 } } },
  argmax = { dtypes = { "fp16", "fp32" }, params = { { M = 5, N = 1001 }, { M = 33, N = 20480 }, { M = 3, N = 17 },
                                                     { M = 7, N = 20480 }, { M = 9, N = 4097 }, { M = 1001, N = 100 }, { M = 300, N = 4096 } } },
  -- K4 = K / 4 not a multiple of 16 (the unpack's byte path) and a multiple (its vector path),
  -- partial tiles of every kind, and a shape only the reference and triton take (K % 16, N % 8)
  matmul_int8 = { dtypes = { "int8" }, exact = true,
                  params = { { M = 37, N = 40, K = 48 }, { M = 130, N = 264, K = 1040 }, { M = 200, N = 136, K = 256 },
                             { M = 64, N = 256, K = 1024 }, { M = 5, N = 13, K = 20 }, { M = 1, N = 8, K = 16 } } },
  -- tiles fewer than the SMs (every tile stream-K, several CTAs a tile), ragged edges, K not a
  -- K-tile multiple; STREAMK_CONFIGS below adds small grids, so that tiles outnumber the CTAs
  streamk_matmul = { dtypes = { "fp16", "bf16", "fp32" }, cpu_tol = { 1e-2, 1e-2 },
                     params = { { m = 37, n = 40, k = 48 }, { m = 130, n = 264, k = 520 }, { m = 300, n = 136, k = 1000 },
                                { m = 256, n = 512, k = 128 }, { m = 33, n = 37, k = 29 }, { m = 1, n = 8, k = 8 } } },
  -- one row, one column, 2 x 2 (no interior), odd shapes (one element a thread), shapes whose
  -- cols take 16-byte vectors (1000: fp32 and fp16 alike) with partial warps and blocks, the
  -- grid's first case, and strips of several rows a block with tails (the ROWS spread)
  jacobi_stencil_2d = { dtypes = { "fp16", "bf16", "fp32" }, exact = true,
                        params = { { rows = 1, cols = 9 }, { rows = 7, cols = 1 }, { rows = 2 }, { rows = 5, cols = 7 },
                                   { rows = 37, cols = 1000 }, { rows = 130, cols = 1030 }, { rows = 512 },
                                   { rows = 301, cols = 264 }, { rows = 3, cols = 4104 } } },
  -- one row, an image smaller than the kernel, odd shapes (one element a thread: halos from three
  -- lanes away), 1000 / 264 / 4104 columns (16-byte vectors, one or two a thread, partial warps),
  -- the grid's first case, 3 x 5 and even (4 x 6) kernels, a 1 x 1 kernel
  gaussian_blur = { dtypes = { "fp16", "fp32" },
                    params = { { input_rows = 1, input_cols = 40, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 5, input_cols = 3, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 37, input_cols = 1000, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 130, input_cols = 1030, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 512, kernel_rows = 7, kernel_cols = 7 },
                               { input_rows = 33, input_cols = 264, kernel_rows = 3, kernel_cols = 5 },
                               { input_rows = 20, input_cols = 36, kernel_rows = 4, kernel_cols = 6 },
                               { input_rows = 9, input_cols = 16, kernel_rows = 1, kernel_cols = 1 },
                               { input_rows = 64, input_cols = 4104, kernel_rows = 7, kernel_cols = 7 } } },
  -- one pixel, odd shapes (one output a thread; the last window past the right and bottom
  -- edges), H odd with vector rows (33 x 48), W a vector multiple for fp32 only (40), the grid's
  -- first case, strips over a taller image, and kernel / stride / padding other than the grid's
  -- (the reference and triton only: cuda is unsupported there)
  ["2d_max_pooling"] = { dtypes = { "fp16", "bf16", "fp32" }, exact = true,
    params = { { N = 1, C = 1, H = 1, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 2, H = 5, W = 7, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 5, H = 33, W = 48, kernel_size = 3, stride = 2, padding = 1 },
               { N = 2, C = 3, H = 64, W = 40, kernel_size = 3, stride = 2, padding = 1 },
               { N = 4, C = 128, H = 32, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 3, H = 301, W = 160, kernel_size = 3, stride = 2, padding = 1 },
               { N = 1, C = 2, H = 9, W = 11, kernel_size = 2, stride = 2, padding = 0 },
               { N = 1, C = 2, H = 10, W = 12, kernel_size = 3, stride = 1, padding = 1 } } },
  -- one key; a partial tile; exactly one default tile (4096) and one key past it; hundreds of
  -- tiles (the look-back across many), odd lengths
  radix_sort = { dtypes = { "int32" }, exact = true,
                 params = { { n = 1 }, { n = 7 }, { n = 4096 }, { n = 4097 }, { n = 70001 }, { n = 1000003 } } },
  -- k = N, k = 1, k a power of two and not, N below a vector, N % 4 tails, many blocks
  top_k_selection = { dtypes = { "fp32" }, exact = true,
                      params = { { N = 5, k = 5 }, { N = 1000, k = 1 }, { N = 4096, k = 16 }, { N = 33, k = 7 },
                                 { N = 70001, k = 1024 }, { N = 262147, k = 256 }, { N = 1000003, k = 64 },
                                 { N = 16385, k = 1000 } } },
  -- one value; shorter than a chunk; one past a power of two; a power of two; long strides
  -- (p = 2^22: several fused pairs and a single long step a stage)
  bitonic_sort = { dtypes = { "fp16", "fp32" }, exact = true,
                   params = { { n = 1 }, { n = 7 }, { n = 8193 }, { n = 16384 }, { n = 70001 }, { n = 1000003 },
                              { n = 3000000 } } },
}
local ORDER = { "vector_add", "mul2", "relu", "sigmoid", "swiglu", "softmax", "layernorm", "rmsnorm",
                "mean_reduction", "argmax",
                "leaky_relu", "dropout", "fused_activation", "quantize_global", "dequantize_rowwise",
                "weight_dequant", "rope", "matmul_int8", "streamk_matmul" }

local function case_id(params)
  local keys = {}
  for k in pairs(params) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. params[k] end
  return table.concat(parts, ",")
end

local function host_all(tensors)
  local h = {}
  for name, t in pairs(tensors) do h[name] = t:to_host(1 << 24) end
  return h
end

local function within(got, want, atol, rtol)
  if type(want) == "table" then
    for _, w in ipairs(want) do if within(got, w, atol, rtol) then return true end end
    return false
  end
  if want ~= want then return got ~= got end
  if want == math.huge or want == -math.huge then return got == want end
  return math.abs(got - want) <= atol + rtol * math.abs(want)
end

-- Reference vs CPU: returns the number of mismatches (reporting the first few).
local function compare_cpu(where, got, want, atol, rtol)
  checks = checks + 1
  if #got ~= #want then
    fail("%s: reference has %d elements, CPU %d", where, #got, #want)
    return
  end
  local bad = 0
  for i = 1, #want do
    if not within(got[i], want[i], atol, rtol) then
      bad = bad + 1
      if bad <= 4 then
        local w = want[i]
        fail("%s: reference[%d] = %.9g, CPU expects %s", where, i - 1, got[i],
             type(w) == "table" and table.concat((function() local s = {}
               for k, v in ipairs(w) do s[k] = string.format("%.9g", v) end return s end)(), " or ")
             or string.format("%.9g", w))
      end
    end
  end
  if bad > 4 then fail("%s: %d mismatches in all", where, bad) end
end

-- Row-wise layouts with several rows per group (RPG 2 and 4: the group loads all its rows before
-- reducing any), tried on top of the spread wherever the space has RPG and they are valid:
-- the automatic layout, a warp per row and several groups to a block (per-row shared buffers),
-- and a block per row. The row counts of CASES (7, 9, 1001, 33 ...) leave partial groups and
-- partial blocks.
local RPG_LAYOUTS = { { TPR = 0, BLOCK = 0 }, { TPR = 32, BLOCK = 128 }, { TPR = 128, BLOCK = 512 },
                      { TPR = 256, BLOCK = 256 }, { TPR = 1024, BLOCK = 1024 } }

-- Row-wise stream kernels (STAGES >= 1: persistent blocks, rows through shared-memory slots by
-- cp.async.bulk): one slot (the barrier's phase flips every row), two and three slots, with block
-- sizes that make the grid smaller than the row count (blocks loop over rows) and larger. Rows
-- whose bytes are not a multiple of 16 (N = 1001, 4097 ...) take the kernel's copy fallback.
local STREAM_LAYOUTS = { { STAGES = 1, BLOCK = 1024 }, { STAGES = 2, BLOCK = 0 }, { STAGES = 3, BLOCK = 256 },
                         { STAGES = 2, BLOCK = 1024 } }

-- FULLVEC = 1 (one bound check per whole vector): the automatic register layout, a warp per row
-- with 2 rows per group, and the stream kernel with 2 slots.
local FULLVEC_LAYOUTS = { { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 0 }, { TPR = 32, BLOCK = 128, RPG = 2, STAGES = 0 },
                          { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 2 } }

-- The Stream-K kernel (VARIANT = sk) on grids of 2, 3 and 7 CTAs (cfg.CTAS, gemm.lua): with the
-- small cases' tiles outnumbering them, both splits leave data-parallel tiles after the stream-K
-- ones, CTAs cross several tile boundaries, and the ring wraps across units.
local STREAMK_CONFIGS = { { BN = 128, STAGES = 3, SK = 1, CTAS = 2 }, { BN = 256, STAGES = 4, SK = 2, CTAS = 3 },
                          { BN = 128, STAGES = 5, SK = 2, CTAS = 7 }, { BN = 128, STAGES = 4, SK = 1, CTAS = 7 } }

-- A spread of the implementation's autotune candidates: the default plus every k-th valid one,
-- plus the RPG_LAYOUTS for row-wise implementations and STREAMK_CONFIGS for the Stream-K kernel.
local function configs_to_try(spec, c)
  local cfgs = { spec.default or {} }
  local valid = {}
  for _, cfg in ipairs(runner.candidates(spec)) do
    if not spec.valid or spec.valid(c, cfg) then valid[#valid + 1] = cfg end
  end
  local step = math.max(1, #valid // 6)
  for i = 1, #valid, step do cfgs[#cfgs + 1] = valid[i] end
  cfgs[#cfgs + 1] = valid[#valid]
  if spec.space and spec.space.STAGES and not spec.space.VARIANT then -- row-wise (the gemm family's STAGES differ)
    for _, l in ipairs(STREAM_LAYOUTS) do
      local cfg = { TPR = 0, BLOCK = l.BLOCK, RPG = 1, STAGES = l.STAGES }
      if not spec.valid or spec.valid(c, cfg) then cfgs[#cfgs + 1] = cfg end
    end
  end
  if spec.space and spec.space.FULLVEC then -- bound checks per vector: each kernel family once more
    for _, l in ipairs(FULLVEC_LAYOUTS) do
      local cfg = { TPR = l.TPR, BLOCK = l.BLOCK, RPG = l.RPG, STAGES = l.STAGES, FULLVEC = 1 }
      if not spec.valid or spec.valid(c, cfg) then cfgs[#cfgs + 1] = cfg end
    end
  end
  if spec.space and spec.space.SK and spec.space.VARIANT then
    for _, l in ipairs(STREAMK_CONFIGS) do
      local cfg = { VARIANT = "sk", BN = l.BN, STAGES = l.STAGES, SK = l.SK, CTAS = l.CTAS }
      if not spec.valid or spec.valid(c, cfg) then cfgs[#cfgs + 1] = cfg end
    end
  end
  if spec.space and spec.space.RPG then
    for _, rpg in ipairs({ 2, 4 }) do
      for _, l in ipairs(RPG_LAYOUTS) do
        local cfg = { TPR = l.TPR, BLOCK = l.BLOCK, RPG = rpg }
        if not spec.valid or spec.valid(c, cfg) then cfgs[#cfgs + 1] = cfg end
      end
    end
  end
  return cfgs
end

-- Runs every configuration of every implementation into poisoned outputs; tb.verify vs refs.
-- impls: the implementations to run (default op.impls, the default set).
-- Operators whose plans keep state between runs (streamk_matmul's fix-up workspace and tile
-- counters, which each run must leave zeroed): every plan runs three times, outputs poisoned
-- before each, and the last run is what is verified -- the timed runs are such later runs.
local RERUN = { streamk_matmul = 3 }

local function run_plan(op, plan, outs)
  for _ = 2, RERUN[op.name] or 1 do
    plan:run()
    for _, t in pairs(outs) do verify.poison(t) end
  end
  plan:run()
end

local function check_impls(op, c, ctx, ins, refs, where, impls)
  local family = device.props().family
  for _, impl in ipairs(impls or op.impls) do
    local spec = op.module.implementations[impl]
    if not spec.supports or spec.supports(c, ctx) then
      for _, cfg in ipairs(configs_to_try(spec, c)) do
        local tag = string.format("%s %s {%s}", where, impl, runner.config_string(cfg))
        local okrun, err = xpcall(function()
          local outs = op.module.outputs(c, ins, ctx)
          for _, t in pairs(outs) do verify.poison(t) end
          run_plan(op, spec.plan(c, ins, outs, cfg, ctx), outs)
          for name, ref in pairs(refs) do
            checks = checks + 1
            local atol, rtol = config.tolerance(op.config, ref.dtype, family)
            local r = verify.compare(outs[name], ref, { atol = atol, rtol = rtol, max_report = 3 })
            if not r.ok then
              local f = r.first and r.first[1]
              fail("%s: output '%s': %d of %d mismatches (max abs %.3g)%s", tag, name, r.mismatches, r.numel,
                   r.max_abs or 0, f and string.format(", first [%d] got %s expected %s", f.index,
                   tostring(f.got), tostring(f.expected)) or "")
            end
          end
        end, debug.traceback)
        if not okrun then fail("%s: %s", tag, tostring(err)) end
      end
    end
  end
end

-- Operators whose `triton` implementation also runs here, in its default configuration only
-- (triton compiles on the GPU machine: a second or two per kernel), where triton imports.
local TRITON_DEFAULT = { l2_norm = true, cross_entropy = true, kl_divergence = true, moe_topk_gating = true,
                         histogramming = true, batch_normalization = true, flash_decode = true,
                         linear_self_attention = true, flash_attention = true, block_sparse_attention = true }
-- issue 16's matmuls (docs/MATMUL.md)
TRITON_DEFAULT.matmul_int8, TRITON_DEFAULT.streamk_matmul = true, true
-- issue 18's stencils
TRITON_DEFAULT.jacobi_stencil_2d, TRITON_DEFAULT.gaussian_blur = true, true
TRITON_DEFAULT["2d_max_pooling"] = true
-- issue 18's sorting operators (docs/SORTING.md)
TRITON_DEFAULT.radix_sort, TRITON_DEFAULT.top_k_selection, TRITON_DEFAULT.bitonic_sort = true, true, true

local function check_triton_default(op, c, ctx, ins, refs, where)
  local spec = op.module.implementations.triton
  if not (spec and require("tilebench.triton").available()) then return end
  if spec.supports and not spec.supports(c, ctx) then return end
  local family = device.props().family
  local tag = string.format("%s triton {%s}", where, runner.config_string(spec.default))
  local okrun, err = xpcall(function()
    local outs = op.module.outputs(c, ins, ctx)
    for _, t in pairs(outs) do verify.poison(t) end
    run_plan(op, spec.plan(c, ins, outs, spec.default, ctx), outs)
    for name, ref in pairs(refs) do
      checks = checks + 1
      local atol, rtol = config.tolerance(op.config, ref.dtype, family)
      local r = verify.compare(outs[name], ref, { atol = atol, rtol = rtol, max_report = 3 })
      if not r.ok then fail("%s: output '%s': %d of %d mismatches (max abs %.3g)", tag, name, r.mismatches, r.numel, r.max_abs or 0) end
    end
  end, debug.traceback)
  if not okrun then fail("%s: %s", tag, tostring(err)) end
end

local function check_case(op, name, dtype, params)
  local c = { params = params, dtype = dtype, index = 1, id = case_id(params) }
  local where = string.format("%s %s %s", name, dtype, c.id)
  local ctx <close> = context.new(op, c)
  local ins = op.module.inputs(c, ctx)
  local refs = op.module.outputs(c, ins, ctx)
  for _, t in pairs(refs) do verify.poison(t) end
  op.module.reference(c, ins, refs, ctx):run()
  local want = cpu[name](c, host_all(ins))
  for oname, ref in pairs(refs) do
    local atol, rtol = config.tolerance(nil, ref.dtype)
    if (CASES[name] or {}).exact then atol, rtol = 0, 0 end -- the CPU emulates every rounding: bit for bit
    local ct = (CASES[name] or {}).cpu_tol -- the reference's own summation order (matmuls)
    if ct then atol, rtol = ct[1], ct[2] end
    -- an operator with several outputs returns its expected values by output name
    compare_cpu(where .. " reference '" .. oname .. "' vs CPU", ref:to_host(1 << 24), want[oname] or want, atol, rtol)
  end
  check_impls(op, c, ctx, ins, refs, where)
  if TRITON_DEFAULT[name] then check_triton_default(op, c, ctx, ins, refs, where) end
  print(string.format("ok  %s", where))
end

-- argmax with planted ties across threads and vectors: the first index must win.
local function check_argmax_ties(op)
  for _, dtype in ipairs({ "fp16", "fp32" }) do
    local rows, cols = 4, 5003
    local vals, want = {}, {}
    local plants = { { 4000, 17, 2500 }, { 9, 10, 5002 }, { 5002, 4096, 4097 }, { 1, 0, 3333 } }
    for r = 0, rows - 1 do
      for j = 0, cols - 1 do vals[r * cols + j + 1] = ((r * 7919 + j * 104729) % 2001) / 1000 - 1 end
      local first = math.huge
      for _, j in ipairs(plants[r + 1]) do
        vals[r * cols + j + 1] = 3.5
        first = math.min(first, j)
      end
      want[r + 1] = first
    end
    local c = { params = { M = rows, N = cols }, dtype = dtype, index = 1, id = "ties" }
    local where = "argmax " .. dtype .. " planted ties"
    local ctx <close> = context.new(op, c)
    local ins = { x = ctx.from_table(vals, dtype, { rows, cols }) }
    local refs = op.module.outputs(c, ins, ctx)
    op.module.reference(c, ins, refs, ctx):run()
    compare_cpu(where .. " reference vs CPU", refs.out:to_host(), want, 0, 0)
    check_impls(op, c, ctx, ins, refs, where)
    print(string.format("ok  %s", where))
  end
end

-- issue 16's reduction/norm operators (docs/REDUCTIONS.md), checked after the others
for _, n in ipairs({ "l2_norm", "cross_entropy", "kl_divergence", "moe_topk_gating", "histogramming", "batch_normalization" }) do ORDER[#ORDER + 1] = n end
-- issue 16's attention operators (docs/ATTENTION.md)
ORDER[#ORDER + 1] = "flash_decode"
ORDER[#ORDER + 1] = "linear_self_attention"
ORDER[#ORDER + 1] = "flash_attention"
ORDER[#ORDER + 1] = "block_sparse_attention"
-- issue 18's stencils (docs/STENCILS.md)
ORDER[#ORDER + 1] = "jacobi_stencil_2d"
ORDER[#ORDER + 1] = "gaussian_blur"
ORDER[#ORDER + 1] = "2d_max_pooling"
-- issue 18's sorting operators (docs/SORTING.md)
for _, n in ipairs({ "radix_sort", "top_k_selection", "bitonic_sort" }) do ORDER[#ORDER + 1] = n end

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
ORDER[#ORDER + 1] = "matrix_copy"
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
ORDER[#ORDER + 1] = "matrix_transpose"
-- interleave: out[2i] = A[i], out[2i + 1] = B[i]; n = 1, tails of every vector width, a grid-like n.
function cpu.interleave(c, h)
  local out = {}
  for i = 1, #h.A do
    out[2 * i - 1], out[2 * i] = h.A[i], h.B[i]
  end
  return out
end
CASES.interleave = { dtypes = { "fp16", "bf16", "fp32", "int8" }, exact = true, params = POINTWISE_N }
ORDER[#ORDER + 1] = "interleave"
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
  checks = checks + 1
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
ORDER[#ORDER + 1] = "destindex"
-- reverse_array: out[i] = input[n - 1 - i]; n = 1, odd n (every element one by one in cuda),
-- multiples of every vector width (the vector path), partial last programs in triton.
function cpu.reverse_array(c, h)
  local n, out = #h.input, {}
  for i = 1, n do out[i] = h.input[n + 1 - i] end
  return out
end
CASES.reverse_array = { dtypes = { "fp16", "bf16", "fp32", "int8" }, exact = true,
                        params = { { n = 1 }, { n = 1000003 }, { n = 70001 }, { n = 1000000 }, { n = 4112 } } }
ORDER[#ORDER + 1] = "reverse_array"

-- The default implementations, plus triton where it imports (the checks of stated rules run it too).
local function with_triton(op, where)
  local impls = {}
  for _, i in ipairs(op.impls) do impls[#impls + 1] = i end
  if op.module.implementations.triton and require("tilebench.triton").available() then
    impls[#impls + 1] = "triton"
  else
    print(where .. ": triton does not import here; the default implementations only")
  end
  return impls
end

-- moe_topk_gating with planted ties (rows of equal values, ties at the top, ties straddling the
-- k-th place, across the threads and vectors of a row): the lower index must come first, in the
-- reference (against the CPU, exactly) and in every configuration of cuda and, where it imports,
-- triton (against the reference: indices exact). Background values repeat too (2001 levels,
-- fewer after rounding to fp16/bf16).
local function check_moe_ties(op)
  local impls
  for _, dtype in ipairs({ "fp16", "bf16", "fp32" }) do
    for _, shape in ipairs({ { E = 128, k = 2 }, { E = 128, k = 4 }, { E = 37, k = 3 } }) do
      local rows, E = 6, shape.E
      local plants = { -- {value, columns}: the planted value is above every background value
        { 2.5, { 1, 0, E - 1 } }, { 2.5, { E - 1, E // 2 } }, { 2.5, { E // 3 } }, { 2.5, { 9, 17, 25, 33 } },
        { 2.5, {} }, { 2.5, {} } }
      local vals = {}
      for r = 0, rows - 1 do
        for j = 0, E - 1 do vals[r * E + j + 1] = ((r * 7919 + j * 104729) % 2001) / 1000 - 1 end
        for _, j in ipairs(plants[r + 1][2]) do vals[r * E + j + 1] = plants[r + 1][1] end
      end
      for j = 0, E - 1 do vals[4 * E + j + 1] = 0.75 end -- a row of one value: indices 0 .. k-1
      for j = 0, E - 1, 3 do vals[5 * E + j + 1] = 1.5 end -- second place shared by every third column
      vals[5 * E + E // 2 + 1] = 2.5
      local params = { M = rows, E = E, k = shape.k }
      local c = { params = params, dtype = dtype, index = 1, id = "ties" }
      local where = string.format("moe_topk_gating %s E=%d k=%d planted ties", dtype, E, shape.k)
      impls = impls or with_triton(op, "moe_topk_gating planted ties")
      local ctx <close> = context.new(op, c)
      local ins = { logits = ctx.from_table(vals, dtype, { rows, E }) }
      local refs = op.module.outputs(c, ins, ctx)
      for _, t in pairs(refs) do verify.poison(t) end
      op.module.reference(c, ins, refs, ctx):run()
      local want = cpu.moe_topk_gating(c, host_all(ins))
      compare_cpu(where .. " reference indices vs CPU", refs.indices:to_host(), want.indices, 0, 0)
      local atol, rtol = config.tolerance(nil, dtype)
      compare_cpu(where .. " reference weights vs CPU", refs.weights:to_host(), want.weights, atol, rtol)
      check_impls(op, c, ctx, ins, refs, where, impls)
      print(string.format("ok  %s", where))
    end
  end
end

-- histogramming with values outside [0, num_bins) (never generated): none may be counted, by the
-- reference (against the CPU) and every configuration of cuda and triton; an odd length and
-- num_bins not a power of two.
local function check_hist_outliers(op)
  local n, bins = 10007, 100
  local vals = {}
  local odd = { -1, 100, 101, -2147483648, 2147483647, 4096, -100 }
  for i = 1, n do vals[i] = (i * 7919) % 137 end -- 0..136: 37 of the 137 values out of range
  for k, v in ipairs(odd) do vals[k * 1000] = v end
  local c = { params = { N = n, num_bins = bins }, dtype = "int32", index = 1, id = "outliers" }
  local where = "histogramming outliers"
  local ctx <close> = context.new(op, c)
  local ins = { input = ctx.from_table(vals, "int32", { n }) }
  local refs = op.module.outputs(c, ins, ctx)
  for _, t in pairs(refs) do verify.poison(t) end
  op.module.reference(c, ins, refs, ctx):run()
  compare_cpu(where .. " reference vs CPU", refs.hist:to_host(), cpu.histogramming(c, host_all(ins)), 0, 0)
  check_impls(op, c, ctx, ins, refs, where, with_triton(op, where))
  print(string.format("ok  %s", where))
end

-- The sorting operators' stated rules (docs/SORTING.md) on planted values: many duplicates (a value
-- repeated across tiles, chunks and the k-th place), NaN of both signs (0/0 is negative on x86),
-- +-inf, -0.0 beside +0.0, subnormals; int32 with negative keys and both extremes (the generator
-- makes neither). The reference against the CPU exactly, then every configuration of cuda and,
-- where it imports, triton against the reference: NaN last in a sort and first in a top-k, each
-- value as many times as it occurs.
local function planted_floats(len, dtype)
  local nan, pnan = 0 / 0, -(0 / 0)
  local tiny = dtype == "fp16" and 1e-7 or 1e-40
  local special = { nan, pnan, math.huge, -math.huge, -0.0, 0.0, tiny, -tiny, 2.5, 2.5, 2.5 }
  local vals = {}
  for i = 1, len do
    local r = (i * 7919) % 97
    if r < 11 then vals[i] = special[r + 1]
    elseif r < 40 then vals[i] = 2.5 -- the top finite value, repeated far beyond k
    else vals[i] = ((i * 104729) % 201) / 50 - 2 end -- 201 levels in [-2, 2]
  end
  return vals
end

local function check_sort_rules(op)
  local name = op.name
  local runs = {}
  if name == "radix_sort" then
    local vals = {}
    for i = 1, 10007 do vals[i] = ((i * 7919) % 2001 - 1000) * 1000003 end
    for k, v in ipairs({ -2147483648, 2147483647, 0, -1, -2147483648, 2147483647 }) do vals[k * 1500] = v end
    runs[1] = { dtype = "int32", params = { n = #vals }, ins = { input = vals } }
  elseif name == "bitonic_sort" then
    for _, dtype in ipairs({ "fp16", "fp32" }) do
      local vals = planted_floats(20011, dtype)
      runs[#runs + 1] = { dtype = dtype, params = { n = #vals }, ins = { data = vals } }
    end
  else -- top_k_selection: the k-th place inside the NaNs, inside the run of 2.5, below it
    local vals = planted_floats(5003, "fp32")
    for _, k in ipairs({ 1, 30, 64, 1000 }) do
      runs[#runs + 1] = { dtype = "fp32", params = { N = #vals, k = k }, ins = { input = vals } }
    end
  end
  local impls = {}
  for _, i in ipairs(with_triton(op, name .. " planted values")) do
    -- CUB orders floats by their bits: a NaN with the sign bit set sorts below -inf, where
    -- torch.topk counts every NaN as the largest (docs/SORTING.md); the int32 sort has no NaN
    if not (i == "lib" and name == "top_k_selection") then impls[#impls + 1] = i end
  end
  for _, r in ipairs(runs) do
    local c = { params = r.params, dtype = r.dtype, index = 1, id = "rules" }
    local where = string.format("%s %s %s planted values", name, r.dtype, case_id(r.params))
    local ok, err = xpcall(function()
      local ctx <close> = context.new(op, c)
      local ins = {}
      for k, v in pairs(r.ins) do ins[k] = ctx.from_table(v, r.dtype, { #v }) end
      local refs = op.module.outputs(c, ins, ctx)
      for _, t in pairs(refs) do verify.poison(t) end
      op.module.reference(c, ins, refs, ctx):run()
      compare_cpu(where .. " reference vs CPU", refs.out:to_host(1 << 24), cpu[name](c, host_all(ins)), 0, 0)
      check_impls(op, c, ctx, ins, refs, where, impls)
    end, debug.traceback)
    if not ok then fail("%s: %s", where, tostring(err)) end
    print(string.format("ok  %s", where))
  end
end

-- flash_decode with b_seqlen other than seq_len (the generator fills it with seq_len): 0 and a
-- negative length (no block: out = 0), one token, a length past the allocation (only the blocks
-- that exist), a partial block, and a middle length; each (b, h) row ends its blocks elsewhere,
-- so split CTAs past a row's end hold empty shares. head_dim 128 (16-byte loads) and 6 (scalars).
local function check_flash_decode_lengths(op)
  for _, hd in ipairs({ 128, 6 }) do
    local p = { batch = 6, heads = 3, head_dim = hd, block_seq = 64, seq_len = 3000 } -- 47 blocks
    local c = { params = p, dtype = "fp32", index = 1, id = "lengths" }
    local where = string.format("flash_decode head_dim=%d varied b_seqlen", hd)
    local ctx <close> = context.new(op, c)
    local ins = op.module.inputs(c, ctx)
    ins.b_seqlen = ctx.from_table({ 0, 1, 8000, 193, -7, 1500 }, "int32", { p.batch })
    local refs = op.module.outputs(c, ins, ctx)
    for _, t in pairs(refs) do verify.poison(t) end
    op.module.reference(c, ins, refs, ctx):run()
    local atol, rtol = config.tolerance(nil, "fp32")
    compare_cpu(where .. " reference vs CPU", refs.out:to_host(), cpu.flash_decode(c, host_all(ins)), atol, rtol)
    check_impls(op, c, ctx, ins, refs, where, with_triton(op, where))
    print(string.format("ok  %s", where))
  end
end

-- Plans that keep state on the device between runs: flash_decode's split CTAs count themselves
-- done on per-(b, h) counters the last CTA resets, linear_self_attention clears and re-adds its
-- S / Z workspace each run. Timed runs are not verified, so here one plan per configuration (the
-- spread of check_impls, and triton's default where it imports) runs three times, the outputs
-- poisoned before the third, which must still verify: a counter left non-zero or a workspace
-- not cleared shows as wrong values.
local function check_replay(op, params)
  local c = { params = params, dtype = "fp32", index = 1, id = case_id(params) }
  local where = string.format("%s %s replayed", op.name, c.id)
  local ctx <close> = context.new(op, c)
  local ins = op.module.inputs(c, ctx)
  local refs = op.module.outputs(c, ins, ctx)
  op.module.reference(c, ins, refs, ctx):run()
  local family = device.props().family
  local runs = {}
  for _, cfg in ipairs(configs_to_try(op.module.implementations.cuda, c)) do runs[#runs + 1] = { "cuda", cfg } end
  local tri = op.module.implementations.triton
  if tri and require("tilebench.triton").available() then runs[#runs + 1] = { "triton", tri.default } end
  for _, r in ipairs(runs) do
    local spec = op.module.implementations[r[1]]
    local tag = string.format("%s %s {%s}", where, r[1], runner.config_string(r[2]))
    local okrun, err = xpcall(function()
      local outs = op.module.outputs(c, ins, ctx)
      local plan = spec.plan(c, ins, outs, r[2], ctx)
      plan:run()
      plan:run()
      for _, t in pairs(outs) do verify.poison(t) end
      plan:run()
      for name, ref in pairs(refs) do
        checks = checks + 1
        local atol, rtol = config.tolerance(op.config, ref.dtype, family)
        local res = verify.compare(outs[name], ref, { atol = atol, rtol = rtol, max_report = 3 })
        if not res.ok then fail("%s: output '%s' after 3 runs: %d of %d mismatches (max abs %.3g)", tag, name,
                                res.mismatches, res.numel, res.max_abs or 0) end
      end
    end, debug.traceback)
    if not okrun then fail("%s: %s", tag, tostring(err)) end
  end
  print(string.format("ok  %s", where))
end

-- block_sparse_attention's triton space beyond its default (which the small cases run): a spread
-- of its candidates (HPC 1, 2 and 4 heads a program, BM 32 and 64) at one case with GQA groups of
-- 4 and a partial last row block, against the reference, where triton imports.
local BSA_SPREAD = { B = 1, H = 4, H_kv = 1, M = 200, D = 64, BLOCK_M = 64, BLOCK_N = 64 }
local function check_bsa_triton_spread(op)
  local where = "block_sparse_attention triton spread"
  if not require("tilebench.triton").available() then
    print(where .. ": triton does not import here; skipped")
    return
  end
  local c = { params = BSA_SPREAD, dtype = "fp16", index = 1, id = case_id(BSA_SPREAD) }
  where = where .. " " .. c.id
  local ctx <close> = context.new(op, c)
  local ins = op.module.inputs(c, ctx)
  local refs = op.module.outputs(c, ins, ctx)
  op.module.reference(c, ins, refs, ctx):run()
  check_impls(op, c, ctx, ins, refs, where, { "triton" })
  print(string.format("ok  %s", where))
end

-- 2d_max_pooling with NaN and -inf planted (never generated): a window holding a NaN gives NaN,
-- one of -inf only gives -inf, for the reference (against the CPU) and every configuration of
-- cuda and, where it imports, triton. Plants in the first and last columns and rows, at lane
-- and vector boundaries (W = 48: fp32 and fp16 vectors).
local function check_pool_nan(op)
  for _, dtype in ipairs({ "fp16", "bf16", "fp32" }) do
    local p = { N = 1, C = 2, H = 9, W = 48, kernel_size = 3, stride = 2, padding = 1 }
    local n = p.C * p.H * p.W
    local vals = {}
    for i = 1, n do vals[i] = ((i * 7919) % 2001) / 1000 - 1 end
    for _, i in ipairs({ 0, 47, 48 * 3 + 15, 48 * 3 + 16, 48 * 8 + 30, 432 + 48 * 4 + 8 }) do vals[i + 1] = 0 / 0 end
    for r = 5, 8 do for col = 40, 47 do vals[r * 48 + col + 1] = -math.huge end end -- a -inf block (plane 0)
    local c = { params = p, dtype = dtype, index = 1, id = "nan" }
    local where = "2d_max_pooling " .. dtype .. " planted NaN and -inf"
    local ctx <close> = context.new(op, c)
    local ins = { input = ctx.from_table(vals, dtype, { n }) }
    local refs = op.module.outputs(c, ins, ctx)
    for _, t in pairs(refs) do verify.poison(t) end
    op.module.reference(c, ins, refs, ctx):run()
    compare_cpu(where .. " reference vs CPU", refs.out:to_host(), cpu["2d_max_pooling"](c, host_all(ins)), 0, 0)
    check_impls(op, c, ctx, ins, refs, where, with_triton(op, where))
    print(string.format("ok  %s", where))
  end
end

local selected = {}
for i = 1, #arg do selected[#selected + 1] = arg[i] end
if #selected == 0 then selected = ORDER end
local selected_bsa = false
for _, n in ipairs(selected) do selected_bsa = selected_bsa or n == "block_sparse_attention" end

if compile_only then
  local precompile = require("tilebench.precompile")
  local n, bad = 0, 0
  local function compile(u)
    n = n + 1
    local okc, err = precompile.compile_unit(u)
    if not okc then
      bad = bad + 1
      io.stderr:write("FAILED: ", precompile.describe(u), ": ", tostring(err), "\n")
    end
  end
  for _, name in ipairs(selected) do
    local spec = CASES[name]
    if not spec then error("operators_cpu_check: no small cases for operator '" .. name .. "'") end
    local op = opmod.load(name)
    local all = {}
    for _, dtype in ipairs(spec.dtypes) do
      for _, params in ipairs(spec.params) do all[#all + 1] = { dtype = dtype, params = params } end
      if name == "argmax" then all[#all + 1] = { dtype = dtype, params = { M = 4, N = 5003 } } end
    end
    for _, w in ipairs(all) do
      local c = { params = w.params, dtype = w.dtype, index = 1, id = case_id(w.params) }
      compile({ op = op, case = c, dtype = w.dtype })
      for _, impl in ipairs(op.impls) do
        local ispec = op.module.implementations[impl]
        if ispec.source or ispec.sources then
          for _, cfg in ipairs(configs_to_try(ispec, c)) do
            compile({ op = op, case = c, dtype = w.dtype, impl = impl, cfg = cfg })
          end
        end
      end
      if TRITON_DEFAULT[name] and require("tilebench.triton").available() then
        compile({ op = op, case = c, dtype = w.dtype, impl = "triton", cfg = op.module.implementations.triton.default })
      end
    end
  end
  if selected_bsa and require("tilebench.triton").available() then -- check_bsa_triton_spread's kernels
    local op = opmod.load("block_sparse_attention")
    local c = { params = BSA_SPREAD, dtype = "fp16", index = 1, id = case_id(BSA_SPREAD) }
    for _, cfg in ipairs(configs_to_try(op.module.implementations.triton, c)) do
      compile({ op = op, case = c, dtype = "fp16", impl = "triton", cfg = cfg })
    end
  end
  print(string.format("compiled %d plans, %d failed", n, bad))
  os.exit(bad == 0 and 0 or 1)
end

for _, name in ipairs(selected) do
  local spec = CASES[name]
  if not spec then error("operators_cpu_check: no small cases for operator '" .. name .. "'") end
  local op = opmod.load(name)
  for _, dtype in ipairs(spec.dtypes) do
    for _, params in ipairs(spec.params) do
      local okc, err = xpcall(check_case, debug.traceback, op, name, dtype, params)
      if not okc then fail("%s %s %s: %s", name, dtype, case_id(params), tostring(err)) end
    end
  end
  if name == "argmax" then check_argmax_ties(op) end
  if name == "moe_topk_gating" then check_moe_ties(op) end
  if name == "histogramming" then check_hist_outliers(op) end
  if name == "radix_sort" or name == "top_k_selection" or name == "bitonic_sort" then check_sort_rules(op) end
  if name == "flash_decode" then
    check_flash_decode_lengths(op)
    check_replay(op, { batch = 2, heads = 8, head_dim = 128, block_seq = 128, seq_len = 40960 })
  end
  if name == "linear_self_attention" then check_replay(op, { M = 1000, D = 64, eps = 1e-6 }) end
  if name == "block_sparse_attention" then check_bsa_triton_spread(op) end
  if name == "2d_max_pooling" then check_pool_nan(op) end
end

print(string.format("%d checks, %d failures", checks, failures))
os.exit(failures == 0 and checks > 0 and 0 or 1)
