-- verify.lua (GPU): tb.verify.compare and poison on a device: identical tensors, planted mismatches
-- found at their index with both values, NaN and Inf rules, exact int64, the tolerance boundary,
-- lowest-index reporting across blocks, mixed float dtypes, and poison catching an element a kernel
-- never wrote. Exit 77 without a GPU.
local device = require('tb.device')
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write('skipped: ', tostring(why), '\n') os.exit(77) end
local tensor, verify = require('tb.tensor'), require('tb.verify')
local kernel, launch = require('tb.kernel'), require('tb.launch')
local config = require('tilebench.config')

-- tb.verify holds no tolerances: a run takes them from config.tolerance (defaults by output
-- dtype, config.yaml, arch_overrides). This test gives the defaults where it gives none.
local function compare(out, ref, opts)
  local o, atol, rtol = {}, config.tolerance(nil, out.dtype)
  for k, v in pairs(opts or {}) do o[k] = v end
  if o.atol == nil then o.atol = atol end
  if o.rtol == nil then o.rtol = rtol end
  return verify.compare(out, ref, o)
end

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
local nan, inf = 0 / 0, math.huge

-- Identical tensors, every dtype, sizes with tails.
for _, dt in ipairs({ 'fp32', 'fp16', 'bf16', 'fp8_e4m3', 'int8', 'uint8', 'int32', 'int64' }) do
  for _, n in ipairs({ 1, 17, 1000003 }) do
    local a = dt:sub(1, 1) == 'f' and tensor.randn(n, dt, 5) or tensor.randint(n, dt, 5, 0, 100)
    local r = compare(a, a:copy())
    check(r.ok and r.mismatches == 0 and r.numel == n and r.max_abs == 0 and #r.first == 0,
          'identical %s x %d: ok=%s mismatches=%d max_abs=%g', dt, n, tostring(r.ok), r.mismatches, r.max_abs)
  end
end
do
  local r = compare(tensor.empty(0, 'fp32'), tensor.empty(0, 'fp16'))
  check(r.ok and r.numel == 0, 'zero elements compare ok')
  local atol, rtol = config.tolerance(nil, 'bf16')
  r = compare(tensor.full(4, 'bf16', 1), tensor.full(4, 'bf16', 1))
  check(r.atol == atol and r.rtol == rtol, 'compare reports the tolerances it was given (bf16 %g/%g)', r.atol, r.rtol)
end

-- One planted mismatch, found at its index with both values.
do
  local n = 3000017
  local ref = tensor.randn(n, 'fp32', 9)
  local h = ref:to_host(n)
  local at = 2222221 -- 0-based
  local expected = h[at + 1]
  h[at + 1] = expected + 0.5
  local out = tensor.from_table(h, 'fp32')
  local got = tensor.from_table({ h[at + 1] }, 'fp32'):to_host()[1] -- as fp32 stores it
  local r = compare(out, ref)
  local f = r.first[1]
  check(not r.ok and r.mismatches == 1 and #r.first == 1 and f.index == at and f.expected == expected and
        f.got == got and math.type(f.index) == 'integer',
        'planted mismatch: %d at %s got %s expected %s', r.mismatches, tostring(f and f.index), tostring(f and f.got),
        tostring(f and f.expected))
  check(math.abs(r.max_abs - 0.5) < 1e-6, 'max_abs of the planted mismatch %.9g', r.max_abs)
end

-- NaN, Inf, the tolerance boundary, maxima.
local function cmp(a, b, dt, opts)
  return compare(tensor.from_table(a, dt), tensor.from_table(b, dt), opts)
end
do
  check(cmp({ nan, 1 }, { nan, 1 }, 'fp32').ok, 'NaN matches NaN')
  local r = cmp({ 1, nan, 2 }, { 1, 2, nan }, 'fp32')
  check(r.mismatches == 2 and r.first[1].index == 1 and r.first[1].got ~= r.first[1].got and r.first[1].expected == 2
        and r.first[2].index == 2, 'NaN against a number and a number against NaN are mismatches')
  check(cmp({ inf, -inf }, { inf, -inf }, 'fp16').ok, 'Inf matches the same Inf')
  r = cmp({ inf, -inf, inf, 65504 }, { -inf, inf, 65504, inf }, 'fp16', { atol = 1e30, rtol = 1 })
  check(r.mismatches == 4, 'Inf matches only the same Inf, whatever the tolerance (%d)', r.mismatches)
  check(cmp({ nan, 4 }, { 1, 3 }, 'fp32', { atol = 0, rtol = 0 }).max_abs == 1, 'max_abs leaves out NaN pairs')
  -- |out - ref| <= atol + rtol*|ref|, inclusive; all values exact in binary.
  check(cmp({ 1.5 }, { 1.0 }, 'fp32', { atol = 0.25, rtol = 0.25 }).ok, 'on the boundary passes')
  check(not cmp({ 1.5000001 }, { 1.0 }, 'fp32', { atol = 0.25, rtol = 0.25 }).ok, 'just past it fails')
  check(cmp({ -1.0 }, { -2.0 }, 'fp32', { atol = 0, rtol = 0.5 }).ok and
        not cmp({ -1.0 }, { -2.0 }, 'fp32', { atol = 0, rtol = 0.375 }).ok, 'rtol scales |ref|, not |out|')
  r = cmp({ 1, 2, 4, 0.5 }, { 1, 2.5, 3, 0 }, 'fp32', { atol = 0, rtol = 0 })
  check(r.mismatches == 3 and r.max_abs == 1 and math.abs(r.max_rel - 1 / 3) < 1e-15,
        'max_abs %g and max_rel %g (ref = 0 left out of max_rel)', r.max_abs, r.max_rel)
end

-- Integers: exact as int64 (doubles would call these equal), or by the formula when given a tolerance.
do
  local big = 1 << 62
  local r = cmp({ big + 1, 5 }, { big, 5 }, 'int64')
  check(r.mismatches == 1 and r.first[1].got == big + 1 and r.first[1].expected == big and
        math.type(r.first[1].got) == 'integer', 'int64 compared exactly: 2^62+1 ~= 2^62')
  check(cmp({ math.mininteger }, { math.mininteger }, 'int64').ok, 'int64 minimum equals itself')
  check(cmp({ 100, -7 }, { 101, -7 }, 'int32', { atol = 1, rtol = 0 }).ok, 'int32 within atol 1')
  check(not cmp({ 100 }, { 101 }, 'int32', { atol = 0.5, rtol = 0 }).ok, 'int32 outside atol 0.5')
  check(not cmp({ 200 }, { 201 }, 'uint8').ok and cmp({ 255 }, { 255 }, 'uint8').ok, 'uint8 exact')
end

-- Lowest-index reporting: mismatches spread over many blocks, the report keeps the lowest, in order.
do
  local n = 5000011
  local ref = tensor.randn(n, 'fp16', 4)
  local h, pristine = ref:to_host(n), ref:to_host(n)
  local planted, seen = {}, {}
  local function plant(i)
    if not seen[i] then seen[i], planted[#planted + 1] = true, i end
  end
  plant(0)
  plant(n - 1) -- the very last element, in the last block's tail
  local state = 12345
  while #planted < 102 do
    state = (state * 1103515245 + 12345) % 2147483648
    plant(state % n)
  end
  for _, i in ipairs(planted) do h[i + 1] = h[i + 1] + 100 end
  table.sort(planted)
  local out = tensor.from_table(h, 'fp16')
  for _, k in ipairs({ 8, 50, 0 }) do
    local r = compare(out, ref, { max_report = k })
    local good = r.mismatches == #planted and #r.first == k
    for j = 1, k do good = good and r.first[j] and r.first[j].index == planted[j] end
    check(good, 'max_report %d: %d mismatches, reported the %d lowest indices in order', k, r.mismatches, k)
  end
  local r = compare(out, ref, { max_report = 1024 })
  check(#r.first == #planted and r.first[#planted].index == n - 1, 'a report larger than the mismatches holds all of them')
  -- Nearly everything mismatches: the report is the first indices, computed here on the host.
  local other = tensor.randn(n, 'fp16', 5)
  local oh = other:to_host(n)
  r = compare(other, ref)
  local want = {}
  for i = 1, n do
    local a, b = oh[i], pristine[i]
    if math.abs(a - b) > 1e-3 + 1e-3 * math.abs(b) then want[#want + 1] = i - 1 end
    if #want == 8 then break end
  end
  local good = #r.first == 8
  for j = 1, 8 do good = good and r.first[j].index == want[j] end
  check(good, 'dense mismatches: report = the first 8 by index (%s ...)', table.concat(want, ' ', 1, 3))
end

-- Mixed float dtypes compare in double: fp16 randn against fp32 randn of the same seed is within
-- fp16's default tolerance (one rounding, 2^-11 relative), and exact compare finds the rounding.
do
  local n = 1000003
  local r = compare(tensor.randn(n, 'fp16', 3), tensor.randn(n, 'fp32', 3))
  -- one fp16 rounding of |z| < 8 is at most half of 2^-8
  check(r.ok and r.max_abs <= 2 ^ -9 and r.max_abs > 0, 'fp16 vs fp32 within 1e-3/1e-3: max_abs %.3g', r.max_abs)
  r = compare(tensor.randn(n, 'bf16', 3), tensor.randn(n, 'fp8_e4m3', 3), { atol = 0, rtol = 0 })
  check(r.mismatches > 0 and r.mismatches < n, 'bf16 vs fp8 exact compare sees rounding (%d)', r.mismatches)
  raises('out is int32 and ref is fp32 (dtypes may differ only when both are float)',
         function() compare(tensor.empty(4, 'int32'), tensor.empty(4, 'fp32')) end, 'int vs float refused')
  raises('out is int32 and ref is int64', function() compare(tensor.empty(4, 'int32'), tensor.empty(4, 'int64')) end,
         'int32 vs int64 refused')
  raises('compare: out has 4 elements, ref has 5', function() compare(tensor.empty(4, 'fp32'), tensor.empty(5, 'fp32')) end,
         'numel differs')
  raises('max_report must be an integer in [0, 1024]',
         function() compare(tensor.empty(4, 'fp32'), tensor.empty(4, 'fp32'), { max_report = 5000 }) end, 'max_report')
  raises('atol is required (tolerances come from config.tolerance)',
         function() verify.compare(tensor.empty(4, 'fp32'), tensor.empty(4, 'fp32'), { rtol = 0 }) end, 'no atol')
  raises('rtol is required', function() verify.compare(tensor.empty(4, 'fp32'), tensor.empty(4, 'fp32'), { atol = 0 }) end,
         'no rtol')
  raises('atol must be a finite number >= 0',
         function() compare(tensor.empty(4, 'fp32'), tensor.empty(4, 'fp32'), { atol = -1 }) end, 'atol < 0')
end

-- Poison: every element NaN (floats) or the type's minimum (integers).
local minimum = { int8 = -128, uint8 = 255, int32 = -(1 << 31), int64 = math.mininteger }
for _, dt in ipairs({ 'fp32', 'fp16', 'bf16', 'fp8_e4m3', 'int8', 'uint8', 'int32', 'int64' }) do
  local t = tensor.full(1001, dt, 1)
  check(verify.poison(t) == t, 'poison returns its tensor')
  local h, good = t:to_host(), true
  for i = 1, #h do
    if minimum[dt] then good = good and h[i] == minimum[dt] else good = good and h[i] ~= h[i] end
  end
  check(good, 'poison %s: every element %s', dt, minimum[dt] and tostring(minimum[dt]) or 'NaN')
end

-- A kernel that forgets its last element fails verification because the output was poisoned.
do
  local mod = assert(kernel.compile([[
extern "C" __global__ void copy_but_last_f32(float *out, const float *in, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n - 1) out[i] = in[i];
}
extern "C" __global__ void copy_but_last_i32(int *out, const int *in, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n - 1) out[i] = in[i];
}
]], { name = 'verify_poison_test.cu' }))
  for _, c in ipairs({ { 'fp32', 'copy_but_last_f32' }, { 'int32', 'copy_but_last_i32' } }) do
    local dt, name = c[1], c[2]
    local n = 4099
    local ref = dt == 'fp32' and tensor.randn(n, dt, 1) or tensor.randint(n, dt, 1, -1000, 1000)
    local out = tensor.empty(n, dt)
    verify.poison(out)
    local fn = mod:get(name, { 'ptr', 'ptr', 'i64' })
    launch.plan({ { fn = fn, grid = { (n + 255) // 256 }, block = { 256 }, args = { out, ref, n } } }):run()
    local r = compare(out, ref)
    local f = r.first[1]
    check(r.mismatches == 1 and f.index == n - 1 and (dt == 'fp32' and f.got ~= f.got or f.got == -(1 << 31)),
          'poison %s: the unwritten element %d fails (got %s)', dt, f and f.index or -1, tostring(f and f.got))
  end
end

print(failures == 0 and 'all passed' or (failures .. ' FAILED'))
os.exit(failures == 0 and 0 or 1)
