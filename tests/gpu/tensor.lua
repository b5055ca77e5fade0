-- tensor.lua (GPU): tb.tensor on a device: Philox known answers, determinism and the prefix property,
-- distributions (randn moments, rand range and uniformity, randint bounds), device rounding equal to
-- the host's for fp16/bf16/fp8, from_table/to_host round trips, views, close, OOM. Exit 77 without a GPU.
local device = require('tb.device')
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write('skipped: ', tostring(why), '\n') os.exit(77) end
local tensor, verify = require('tb.tensor'), require('tb.verify')

local failures = 0
local function check(cond, what, ...)
  local msg = select('#', ...) > 0 and string.format(what, ...) or what
  print((cond and 'ok   ' or 'FAIL ') .. msg)
  if not cond then failures = failures + 1 end
end
local function raises(text, f, what)
  local ok, err = pcall(f)
  check(not ok and tostring(err):find(text, 1, true) ~= nil, '%s: %s', what, tostring(err))
end
local function exact(a, b) -- identical values (NaN equal to NaN), on the device
  return verify.compare(a, b, { atol = 0, rtol = 0 })
end

local FLOATS = { 'fp32', 'fp16', 'bf16', 'fp8_e4m3' }
local ALL = { 'fp32', 'fp16', 'bf16', 'fp8_e4m3', 'int8', 'uint8', 'int32', 'int64' }
local N = 1000003 -- not a multiple of any chunk: the per-element tail runs too

-- Philox4x32-10 known answers (Random123 tests/kat_vectors: counter 0, key 0 gives
-- 6627e8d5 e169c58d bc57ac4c 9b00dbd8). randint over [0, 2^32) returns the raw words.
do
  local t = tensor.randint(12, 'int64', 0, 0, 1 << 32)
  local h = t:to_host()
  local want = { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8, 0xf8e4cca4, 0x5cb200db, 0xb1a574eb, 0x097eff67 }
  local same = true
  for i = 1, #want do same = same and h[i] == want[i] end
  check(same, 'Philox4x32-10 known answers (seed 0, counters 0 and 1): %08x %08x %08x %08x', h[1], h[2], h[3], h[4])
  local s = tensor.randint(4, 'int64', -1, 0, 1 << 32):to_host()
  check(s[1] == 0x72a47709 and s[4] == 0x22799a5a, 'seed -1 is key ffffffff:ffffffff (%08x .. %08x)', s[1], s[4])
end

-- Determinism, prefix property, seeds differ.
for _, dt in ipairs(FLOATS) do
  for _, gen in ipairs({ 'rand', 'randn' }) do
    local a = tensor[gen](N, dt, 1234)
    local b = tensor[gen]({ N }, dt, 1234)
    check(exact(a, b).ok, '%s %s: same seed, same values', gen, dt)
    local small = tensor[gen](37, dt, 1234):to_host()
    local big = a:to_host()
    local prefix = true
    for i = 1, 37 do prefix = prefix and small[i] == big[i] end
    check(prefix, '%s %s: a 37-element tensor equals the first 37 of %d', gen, dt, N)
    local other = exact(tensor[gen](N, dt, 1235), a)
    check(other.mismatches > N // 2, '%s %s: another seed differs (%d of %d)', gen, dt, other.mismatches, N)
  end
end
do
  local a = tensor.randint(N, 'int32', 99, -1000, 1000)
  check(exact(a, tensor.randint(N, 'int32', 99, -1000, 1000)).ok, 'randint int32: same seed, same values')
  local p = tensor.randint(5, 'int32', 99, -1000, 1000):to_host()
  local h = a:to_host()
  check(p[1] == h[1] and p[5] == h[5], 'randint prefix property')
end

-- randn moments on 1e6 elements (standard error of the mean 1e-3; tolerances are ~10 sigma).
local function moments(h)
  local s, s2, tail = 0.0, 0.0, 0
  for i = 1, #h do
    local v = h[i]
    s, s2 = s + v, s2 + v * v
  end
  local mean = s / #h
  local std = math.sqrt(s2 / #h - mean * mean)
  for i = 1, #h do if math.abs(h[i] - mean) > 3 * std then tail = tail + 1 end end
  return mean, std, tail / #h
end
for _, c in ipairs({ { 'fp32', 0, 1 }, { 'fp32', 3, 2 }, { 'fp16', 0, 1 }, { 'bf16', -1, 0.5 } }) do
  local h = tensor.randn(1000000, c[1], 7, c[2], c[3]):to_host()
  local mean, std, tail = moments(h)
  check(math.abs(mean - c[2]) < 0.01 * c[3] and math.abs(std - c[3]) < 0.01 * c[3] and tail > 0.0022 and tail < 0.0032,
        'randn %s mean %g std %g: got mean %.5f std %.5f, P(|z|>3) %.5f (normal: 0.0027)', c[1], c[2], c[3], mean, std, tail)
end

-- rand stays in [lo, hi), reaches near hi, and is uniform (chi-square over 100 bins).
for _, c in ipairs({ { 'fp32', 0, 1 }, { 'fp32', -2, 3 }, { 'fp16', 0, 1 }, { 'bf16', 0, 1 }, { 'bf16', -1, 1 },
                     { 'fp8_e4m3', 0, 1 }, { 'fp8_e4m3', -4, 4 }, { 'fp16', 0.1, 0.2 } }) do
  local dt, lo, hi = c[1], c[2], c[3]
  local h = tensor.rand(1000000, dt, 11, lo, hi):to_host()
  local mn, mx, bins = math.huge, -math.huge, {}
  for i = 1, 100 do bins[i] = 0 end
  for i = 1, #h do
    local v = h[i]
    if v < mn then mn = v end
    if v > mx then mx = v end
    local b = math.floor((v - lo) / (hi - lo) * 100) + 1
    if b >= 1 and b <= 100 then bins[b] = bins[b] + 1 end
  end
  -- fp16 with lo = 0.1 not representable: rounding may sit just under lo; the kernel steps it up.
  check(mn >= lo and mx < hi, 'rand %s in [%g, %g): min %.9g max %.9g', dt, lo, hi, mn, mx)
  if dt == 'fp32' then
    local chi2, e = 0.0, #h / 100
    for i = 1, 100 do chi2 = chi2 + (bins[i] - e) ^ 2 / e end
    check(chi2 < 200, 'rand fp32 [%g, %g) uniform: chi-square %.1f over 99 degrees of freedom', lo, hi, chi2)
    check(mx > hi - (hi - lo) * 1e-4, 'rand fp32 reaches near hi (max %.9g)', mx)
  end
end

-- randint: inclusive-exclusive bounds, every value hit, never exceeded.
for _, c in ipairs({ { 'int8', -32, 33 }, { 'int8', -128, 128 }, { 'uint8', 0, 256 }, { 'int32', -64, 65 },
                     { 'int64', 0, 10 }, { 'fp16', -5, 5 }, { 'fp32', 0, 1000 } }) do
  local dt, lo, hi = c[1], c[2], c[3]
  local h = tensor.randint(1000000, dt, 5, lo, hi):to_host()
  local seen, count, bad = {}, 0, 0
  for i = 1, #h do
    local v = h[i]
    if v < lo or v >= hi or v ~= math.floor(v) then bad = bad + 1
    elseif not seen[v] then seen[v] = true count = count + 1 end
  end
  check(bad == 0 and count == hi - lo, 'randint %s [%d, %d): %d distinct values, %d out of range', dt, lo, hi, count, bad)
end
for _, c in ipairs({ { 'int32', -(1 << 31), 1 << 31 }, { 'int64', -(1 << 62), 1 << 62 },
                     { 'int64', math.mininteger, math.maxinteger } }) do
  local dt, lo, hi = c[1], c[2], c[3]
  local h = tensor.randint(100000, dt, 6, lo, hi):to_host()
  local bad, neg, pos, big = 0, 0, 0, 0
  for i = 1, #h do
    local v = h[i]
    if v < lo or v >= hi then bad = bad + 1 end
    if v < 0 then neg = neg + 1 else pos = pos + 1 end
    if math.abs(v) > (hi >> 2) then big = big + 1 end
  end
  check(bad == 0 and neg > 45000 and pos > 45000 and big > 60000,
        'randint %s [%d, %d): %d out of range, %d negative, %d positive, %d beyond a quarter', dt, lo, hi, bad, neg, pos, big)
end

-- The device rounds the fp32 value to each dtype exactly as the host does (f16.c, RNE): randn at
-- scales that reach subnormals, ordinary values, and overflow (fp16 -> Inf, fp8 -> saturation).
for _, c in ipairs({ { 'fp16', 1 }, { 'fp16', 1e-5 }, { 'fp16', 30000 }, { 'bf16', 1 }, { 'bf16', 1e-37 },
                     { 'bf16', 1e38 }, { 'fp8_e4m3', 1 }, { 'fp8_e4m3', 3e-3 }, { 'fp8_e4m3', 300 } }) do
  local dt, std = c[1], c[2]
  local n = 200003
  local f32 = tensor.randn(n, 'fp32', 21, 0, std)
  local narrow = tensor.randn(n, dt, 21, 0, std)
  local host = tensor.from_table(f32:to_host(), dt)
  local r = exact(narrow, host)
  local f = r.first[1]
  check(r.ok, 'randn %s (std %g) equals the host rounding of randn fp32: %d mismatches%s', dt, std, r.mismatches,
        f and string.format(' (first at %d: device %.9g host %.9g)', f.index, f.got, f.expected) or '')
end
do -- rand: the host rounding, except where it lands on hi: then the value just below hi
  local below = { fp16 = 1 - 2 ^ -11, bf16 = 1 - 2 ^ -8, fp8_e4m3 = 1 - 2 ^ -4 }
  for _, dt in ipairs({ 'fp16', 'bf16', 'fp8_e4m3' }) do
    local f32 = tensor.rand(100000, 'fp32', 3):to_host()
    local host = tensor.from_table(f32, dt):to_host()
    local dev = tensor.rand(100000, dt, 3):to_host()
    local bad, stepped = 0, 0
    for i = 1, #dev do
      local want = host[i]
      if want >= 1 then want, stepped = below[dt], stepped + 1 end
      if dev[i] ~= want then bad = bad + 1 end
    end
    check(bad == 0 and stepped > 0, 'rand %s equals host rounding (%d stepped back from 1), %d differ', dt, stepped, bad)
  end
end

-- from_table / to_host round trips, for every dtype, with the dtype's special values.
local specials = {
  fp32 = { 0.0, -0.0, 1.5, -2.25, (2 - 2 ^ -23) * 2 ^ 127, 2 ^ -149, math.huge, -math.huge, 0 / 0 },
  fp16 = { 0.0, -0.0, 1.5, -2.25, 65504.0, 2 ^ -24, math.huge, -math.huge, 0 / 0 },
  bf16 = { 0.0, -0.0, 1.5, -2.25, (2 - 2 ^ -7) * 2 ^ 127, 2 ^ -133, math.huge, -math.huge, 0 / 0 },
  fp8_e4m3 = { 0.0, -0.0, 1.5, -2.25, 448.0, -448.0, 2 ^ -9, 0 / 0 },
  int8 = { -128, 127, 0, -1, 7 }, uint8 = { 0, 255, 1, 128 }, int32 = { -(1 << 31), (1 << 31) - 1, 0, -1 },
  int64 = { math.mininteger, math.maxinteger, 0, -1, (1 << 53) + 1 },
}
local is_float = {}
for _, dt in ipairs(FLOATS) do is_float[dt] = true end
for _, dt in ipairs(ALL) do
  local v = specials[dt]
  local t = tensor.from_table(v, dt)
  local h = t:to_host()
  -- what to_host gives back: floats for every float dtype (bf16 included), integers otherwise
  local kind = is_float[dt] and 'float' or 'integer'
  local bad = {}
  if #h ~= #v then bad[#bad + 1] = string.format('%d values came back for %d', #h, #v) end
  for i = 1, #v do
    local a, b = v[i], h[i]
    local same
    if a ~= a then same = b ~= b
    elseif a == 0 then same = b == 0 and 1 / a == 1 / b -- the sign of zero survives
    else same = a == b and math.type(b) == kind end
    if not same then
      bad[#bad + 1] = string.format('value %d: %s (%s) came back as %s (%s)', i,
        math.type(a) == 'float' and string.format('%a', a) or tostring(a), math.type(a),
        math.type(b) == 'float' and string.format('%a', b) or tostring(b), math.type(b) or type(b))
    end
  end
  if t.dtype ~= dt then bad[#bad + 1] = 'dtype came back as ' .. tostring(t.dtype) end
  check(#bad == 0, 'from_table/to_host round trip %s%s', dt, #bad == 0 and '' or (': ' .. table.concat(bad, '; ')))
end
check(tensor.from_table({ 0.1 }, 'fp16'):to_host()[1] == 0.0999755859375, 'from_table rounds 0.1 to fp16 (RNE)')
check(tensor.from_table({ 1000 }, 'fp8_e4m3'):to_host()[1] == 448, 'from_table saturates fp8 e4m3 at 448')
check(tensor.from_table({ 1e6 }, 'fp16'):to_host()[1] == math.huge, 'from_table overflows fp16 to Inf')
check(math.type(tensor.from_table({ 3 }, 'int32'):to_host()[1]) == 'integer', 'integer dtypes come back as integers')
check(#tensor.from_table({}, 'fp32'):to_host() == 0, 'empty from_table')
do
  local t = tensor.from_table({ 1, 2, 3, 4, 5, 6 }, 'int32', { 2, -1 })
  check(t.shape[1] == 2 and t.shape[2] == 3, 'from_table with an inferred shape')
end

-- full / fill / copy / copy_from.
for _, c in ipairs({ { 'fp32', 0.1 }, { 'fp16', -3.5 }, { 'bf16', 7 }, { 'fp8_e4m3', 0.75 }, { 'int8', -128 },
                     { 'uint8', 200 }, { 'int32', -5 }, { 'int64', math.mininteger + 3 } }) do
  local dt, value = c[1], c[2]
  local t = tensor.full({ 3, 11 }, dt, value) -- 33 elements: vector stores and a byte tail
  local want = tensor.from_table({ value }, dt):to_host()[1]
  local h, same = t:to_host(), true
  for i = 1, 33 do same = same and h[i] == want end
  t:fill(dt:sub(1, 1) == 'f' and 2 or 3)
  local g = t:to_host()
  check(same and #h == 33 and (g[1] == 2 or g[1] == 3) and g[33] == g[1], 'full and fill %s', dt)
end
do
  local a = tensor.randn({ 64, 33 }, 'bf16', 8)
  local b = a:copy()
  check(exact(a, b).ok and b.dtype == 'bf16' and b.shape[2] == 33, 'copy is equal and shaped alike')
  local c = tensor.empty(64 * 33, 'bf16')
  c:copy_from(a)
  check(exact(c, a).ok, 'copy_from')
  raises('dtype fp16, expected bf16', function() c:copy_from(tensor.empty(64 * 33, 'fp16')) end, 'copy_from dtype')
  raises('2 elements, expected 2112', function() c:copy_from(tensor.empty(2, 'bf16')) end, 'copy_from size')
end

-- Shape, fields, views.
do
  local t = tensor.empty({ 4, 8 }, 'fp16')
  check(tostring(t) == 'tb.tensor(fp16, {4, 8})', 'tostring: %s', tostring(t))
  check(#t == 32 and t:numel() == 32 and t:nbytes() == 64 and t:ndim() == 2, '#t, numel, nbytes, ndim')
  local s = t:strides()
  check(s[1] == 8 and s[2] == 1, 'strides {8, 1}')
  local shape = t.shape
  shape[1] = 99
  check(t.shape[1] == 4, 'shape is a fresh table')
  local z = tensor.empty({}, 'fp32')
  check(z:numel() == 1 and z:ndim() == 0 and tostring(z) == 'tb.tensor(fp32, {})', '0-d tensor')
  check(tensor.empty(0, 'fp32'):numel() == 0, 'empty tensor of 0 elements')

  local base = tensor.full({ 4, 6 }, 'fp32', 1)
  local view = base:reshape({ 3, -1 })
  check(view.shape[1] == 3 and view.shape[2] == 8 and view:strides()[1] == 8, 'reshape infers -1')
  view:fill(2)
  local h = base:to_host()
  check(h[1] == 2 and h[24] == 2, 'a view shares memory with its base')
  raises('cannot reshape {4, 6} (24 elements) to {5, 5} (25 elements)', function() base:reshape({ 5, 5 }) end, 'reshape count')
  base:close()
  check(view:to_host()[24] == 2, 'a view outlives its closed base')
  view:close()
end

-- Close, use after close, <close>.
do
  local t = tensor.empty(16, 'int8')
  t:close()
  check(t:is_closed(), 'is_closed')
  t:close() -- twice is fine
  raises('tensor is closed', function() return t:numel() end, 'numel after close')
  raises('tensor is closed', function() return t.dtype end, 'dtype after close')
  raises('tensor is closed', function() return t:to_host() end, 'to_host after close')
  raises('tensor is closed', function() return verify.poison(t) end, 'poison after close')
  check(tostring(t) == 'tb.tensor(closed)', 'tostring after close')
  local kept
  do
    local s <close> = tensor.empty(16, 'fp32')
    kept = s
  end
  check(kept:is_closed(), '<close> releases at the end of the scope')
end

-- Limits: to_host refuses past its limit; an allocation the device cannot satisfy is data, not an error.
do
  local t = tensor.empty(100, 'fp32')
  raises('to_host: tensor has 100 elements, over the limit of 10 (pass a larger limit)', function() t:to_host(10) end, 'to_host limit')
  check(#t:to_host(100) == 100, 'to_host within a given limit')
  local x, msg, code = tensor.empty(1000000000000000, 'uint8')
  check(x == nil and code == 'oom' and msg:match('^out of memory: 1000000000000000 bytes requested for a tensor of shape ' ..
        '{1000000000000000} uint8 %(free %d+ of %d+ bytes%)$') ~= nil, 'OOM: %s', tostring(msg))
  local y, msg2, code2 = tensor.randn({ 1000000, 1000000 }, 'fp32', 1)
  check(y == nil and code2 == 'oom' and msg2:find('4000000000000 bytes', 1, true), 'randn OOM: %s', tostring(msg2))
  -- Not more than the device holds, but more than is free: the driver's own out-of-memory.
  local free, total = device.mem_info()
  local z, msg3, code3 = tensor.empty(total, 'uint8')
  check(z == nil and code3 == 'oom' and msg3:find('out of memory: ' .. total .. ' bytes', 1, true),
        'OOM from cuMemAlloc (free %d of %d): %s', free, total, tostring(msg3))
  check(tensor.full(8, 'fp32', 1):to_host()[8] == 1, 'the device still works after an OOM')
end

print(failures == 0 and 'all passed' or (failures .. ' FAILED'))
os.exit(failures == 0 and 0 or 1)
