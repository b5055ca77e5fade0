-- stats.lua: the few statistics the reports need: geometric mean, quantiles, relative noise,
-- and the Mann-Whitney U test (normal approximation with tie and continuity correction).
local M = {}

-- Geometric mean of the positive numbers in xs; nil when there are none. Non-positive or
-- non-finite entries are an error: a time or a ratio of 0 means a bug upstream, not data.
function M.geomean(xs)
  local sum, n = 0.0, 0
  for i = 1, #xs do
    local x = xs[i]
    if type(x) ~= "number" or x ~= x or x <= 0 or x == math.huge then
      error(("geomean: entry %d is %s (needs a positive finite number)"):format(i, tostring(x)), 2)
    end
    sum, n = sum + math.log(x), n + 1
  end
  if n == 0 then return nil end
  return math.exp(sum / n)
end

function M.mean(xs)
  if #xs == 0 then return nil end
  local s = 0.0
  for i = 1, #xs do s = s + xs[i] end
  return s / #xs
end

-- Sample standard deviation (n - 1); nil below two values.
function M.stdev(xs)
  local n = #xs
  if n < 2 then return nil end
  local m = M.mean(xs)
  local s = 0.0
  for i = 1, n do s = s + (xs[i] - m) ^ 2 end
  return math.sqrt(s / (n - 1))
end

local function sorted_copy(xs)
  local s = {}
  for i = 1, #xs do s[i] = xs[i] end
  table.sort(s)
  return s
end

-- Quantile with linear interpolation between order statistics (numpy's default, type 7).
function M.quantile(xs, q)
  local n = #xs
  if n == 0 then return nil end
  local s = sorted_copy(xs)
  local h = (n - 1) * q + 1
  local lo = math.floor(h)
  if lo >= n then return s[n] end
  return s[lo] + (h - lo) * (s[lo + 1] - s[lo])
end

function M.median(xs) return M.quantile(xs, 0.5) end

-- Relative noise of a sample: stdev / mean (0 for a single sample, nil for none).
function M.relative_noise(xs)
  if #xs == 0 then return nil end
  if #xs == 1 then return 0 end
  return M.stdev(xs) / M.mean(xs)
end

-- erfc(x): W. J. Cody's rational Chebyshev approximations as in Numerical Recipes' erfcc
-- (fractional error < 1.2e-7 everywhere), enough for p-values compared with 0.05.
function M.erfc(x)
  local z = math.abs(x)
  local t = 1 / (1 + 0.5 * z)
  local r = t * math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
    t * (-0.82215223 + t * 0.17087277)))))))))
  if x >= 0 then return r end
  return 2 - r
end

-- Standard normal upper tail P(Z > z).
function M.normal_sf(z) return 0.5 * M.erfc(z / math.sqrt(2)) end

-- Mann-Whitney U test of two independent samples, two-sided.
-- Returns {u = U of a, u_a, u_b, z, p, n_a, n_b}. Ranks are mid-ranks over ties; the variance
-- is corrected for ties, and z carries a continuity correction of 0.5. When every value is
-- tied the variance is 0: z = 0, p = 1 (no evidence of a difference).
function M.mann_whitney(a, b)
  local na, nb = #a, #b
  if na == 0 or nb == 0 then
    error(("mann_whitney: both samples need values (got %d and %d)"):format(na, nb), 2)
  end
  local all = {}
  for i = 1, na do all[#all + 1] = {v = a[i], g = 1} end
  for i = 1, nb do all[#all + 1] = {v = b[i], g = 2} end
  table.sort(all, function(x, y) return x.v < y.v end)
  local n = na + nb
  local rank_sum_a, tie_term = 0.0, 0.0
  local i = 1
  while i <= n do
    local j = i
    while j < n and all[j + 1].v == all[i].v do j = j + 1 end
    local mid = (i + j) / 2            -- mid-rank of the tie group i..j
    local t = j - i + 1
    tie_term = tie_term + (t * t * t - t)
    for k = i, j do
      if all[k].g == 1 then rank_sum_a = rank_sum_a + mid end
    end
    i = j + 1
  end
  local u_a = rank_sum_a - na * (na + 1) / 2
  local u_b = na * nb - u_a
  local mu = na * nb / 2
  local var = na * nb / 12 * ((n + 1) - tie_term / (n * (n - 1)))
  local z, p
  if var <= 0 then
    z, p = 0, 1
  else
    local d = u_a - mu
    local cc = 0.5
    if math.abs(d) < cc then d = 0 elseif d > 0 then d = d - cc else d = d + cc end
    z = d / math.sqrt(var)
    p = math.min(1, 2 * M.normal_sf(math.abs(z)))
  end
  return {u = u_a, u_a = u_a, u_b = u_b, z = z, p = p, n_a = na, n_b = nb}
end

return M
