-- cpu_check/attention.lua (GPU, part of tests/gpu/operators_cpu_check.lua): issue 16's attention
-- operators (docs/ATTENTION.md): flash_decode, linear_self_attention, flash_attention,
-- block_sparse_attention, each also in its triton default; flash_decode with b_seqlen values the
-- generator never makes; the plans that keep device state replayed.
-- The table it returns is described in cpu_check/common.lua.
local C = require("cpu_check.common")
local context = require("tilebench.context")
local verify = require("tb.verify")
local config = require("tilebench.config")
local device = require("tb.device")
local runner = require("tilebench.runner")
local round_to = C.round_to
local fail = C.fail
local compare_cpu = C.compare_cpu
local check_impls = C.check_impls
local host_all = C.host_all
local with_triton = C.with_triton
local case_id = C.case_id
local configs_to_try = C.configs_to_try

local cpu = {}

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

local CASES = {
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
}

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
        C.count()
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
  C.check_small(op, c, where .. " " .. c.id, { "triton" })
end

-- check_bsa_triton_spread's kernels, for --compile-only (where triton imports).
local function compile_bsa_triton_spread(op, compile)
  if not require("tilebench.triton").available() then return end
  local c = { params = BSA_SPREAD, dtype = "fp16", index = 1, id = case_id(BSA_SPREAD) }
  for _, cfg in ipairs(configs_to_try(op.module.implementations.triton, c)) do
    compile({ op = op, case = c, dtype = "fp16", impl = "triton", cfg = cfg })
  end
end

local function check_flash_decode(op)
  check_flash_decode_lengths(op)
  check_replay(op, { batch = 2, heads = 8, head_dim = 128, block_seq = 128, seq_len = 40960 })
end

local function check_lsa_replay(op) check_replay(op, { M = 1000, D = 64, eps = 1e-6 }) end

return {
  order = { "flash_decode", "linear_self_attention", "flash_attention", "block_sparse_attention" },
  cpu = cpu,
  cases = CASES,
  triton_default = {
    flash_decode = true, linear_self_attention = true, flash_attention = true,
    block_sparse_attention = true,
  },
  extra = {
    flash_decode = check_flash_decode, linear_self_attention = check_lsa_replay,
    block_sparse_attention = check_bsa_triton_spread,
  },
  compile_extra = { block_sparse_attention = compile_bsa_triton_spread },
}
