-- cpu_check/matmul.lua (GPU, part of tests/gpu/operators_cpu_check.lua): issue 16's matmuls
-- matmul_int8 and streamk_matmul (docs/MATMUL.md; the other matmuls are
-- tests/gpu/matmul_check.lua's): partial tiles of every kind, Stream-K grids smaller than the
-- tiles.
-- The table it returns is described in cpu_check/common.lua.
local C = require("cpu_check.common")
local round_to, fail = C.round_to, C.fail

local cpu = {}

-- matmul_int8: A int8 (M, K) @ Bu (K, N), Bu[i * K4 + k, n] = ((B[k, n] >> 2i) & 3) - 1, exact
-- int32 sums. On generated inputs it also checks the generator's ranges (A in [-64, 64], B any byte).
function cpu.matmul_int8(c, h)
  local M, N, K = c.params.M, c.params.N, c.params.K
  local k4 = K // 4
  local a, b = h.a, h.b
  C.count()
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

local CASES = {
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
}

return {
  order = { "matmul_int8", "streamk_matmul" },
  cpu = cpu,
  cases = CASES,
  triton_default = { matmul_int8 = true, streamk_matmul = true },
  rerun = { streamk_matmul = 3 },
}
