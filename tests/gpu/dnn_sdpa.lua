-- dnn_sdpa.lua (GPU): cuDNN's fused attention (tb.dnn.sdpa, flash_attention's `lib`) on a device
-- against a CPU computation in double precision: o = softmax(q k^T / sqrt(D) [causal]) v per
-- (b, h) over the fp16-rounded inputs, on small cases, causal and not, lengths a multiple of 64 and
-- odd ones, D 64 and 128, fp16 and bf16; replayed from a launch plan whose note names the engine;
-- the probe finds the engine the bound graph runs. The operator's shape family (fp16, causal,
-- D 128, S a multiple of 64) must run; any other case may instead get cuDNN's no-engine answer
-- (printed, with its reason). Prints op:describe() for every case. Exit 77 without a GPU or cuDNN.
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local dnn = require("tb.dnn")
local ok_lib, why_lib = dnn.available()
if not ok_lib then io.stderr:write("skip: ", tostring(why_lib), "\n") os.exit(77) end
local tensor, verify, launch = require("tb.tensor"), require("tb.verify"), require("tb.launch")
print("cuDNN " .. dnn.version().version .. " from " .. dnn.version().path)

local failed = 0
local function expect(cond, msg)
  if cond then print("ok   " .. msg) else failed = failed + 1; print("FAIL " .. msg) end
end

-- deterministic values in [-2, 2): a different sequence per tensor
local function values(n, seed)
  local v, x = {}, seed
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    v[i] = (x / 2147483648) * 4 - 2
  end
  return v
end

-- o[b][h][i] = sum_j p_ij v_j, p = softmax over admissible j of (q_i . k_j) * scale, in double
local function reference(q, k, v, B, H, S, D, causal)
  local o = {}
  local scale = 1 / math.sqrt(D)
  for bh = 0, B * H - 1 do
    local base = bh * S * D
    for i = 0, S - 1 do
      local last = causal and i or S - 1
      local sc, mx = {}, -math.huge
      for j = 0, last do
        local dot = 0
        for t = 1, D do dot = dot + q[base + i * D + t] * k[base + j * D + t] end
        sc[j] = dot * scale
        if sc[j] > mx then mx = sc[j] end
      end
      local sum = 0
      for j = 0, last do sc[j] = math.exp(sc[j] - mx); sum = sum + sc[j] end
      for t = 1, D do
        local acc = 0
        for j = 0, last do acc = acc + sc[j] * v[base + j * D + t] end
        o[base + i * D + t] = acc / sum
      end
    end
  end
  return o
end

local cases = {
  -- B, H, S, D, dtype, causal, must run
  { 1, 2, 128, 128, "fp16", true, true },
  { 2, 2, 64, 128, "fp16", true, true },
  { 1, 3, 256, 64, "fp16", true, false },
  { 1, 2, 128, 64, "fp16", false, false },
  { 1, 2, 100, 128, "fp16", true, false },
  { 1, 1, 37, 64, "fp16", true, false },
  { 1, 2, 128, 128, "bf16", true, false },
}
local tol = { fp16 = 5e-3, bf16 = 2e-2 }
for n, c in ipairs(cases) do
  local B, H, S, D, dt, causal, must = table.unpack(c)
  local label = string.format("%s (%d, %d, %d, %d)%s", dt, B, H, S, D, causal and " causal" or "")
  local shape = { B, H, S, D }
  local q = tensor.from_table(values(B * H * S * D, 3 * n), dt, shape)
  local k = tensor.from_table(values(B * H * S * D, 3 * n + 1), dt, shape)
  local v = tensor.from_table(values(B * H * S * D, 3 * n + 2), dt, shape)
  local o = tensor.empty(shape, dt)
  verify.poison(o)
  local scale = 1 / math.sqrt(D)
  local ok, op = pcall(dnn.sdpa, { q = q, k = k, v = v, o = o, scale = scale, causal = causal })
  if not ok and not must and tostring(op):find("offers no engine", 1, true) then
    print("info " .. label .. ": " .. tostring(op))
  elseif not ok then
    expect(false, label .. ": " .. tostring(op))
  else
    print("     " .. op:describe())
    local e = op:engine()
    expect(math.type(e.global_index) == "integer" and e.choice >= 1 and e.choice <= e.candidates,
      string.format("%s: engine %d (knobs %s), choice %d of %d, workspace %d B", label, e.global_index, e.knobs_text,
        e.choice, e.candidates, e.workspace_bytes))
    local probe = dnn.sdpa { b = B, h = H, s = S, d = D, dtype = dt, scale = scale, causal = causal }
    expect(probe:engine().global_index == e.global_index and probe:engine().knobs_text == e.knobs_text,
      label .. ": the probe finds the same engine")
    probe:close()
    local plan = launch.plan { { call = op } }
    plan.note = "engine " .. e.global_index
    plan:run()
    local ref = reference(q:to_host(), k:to_host(), v:to_host(), B, H, S, D, causal)
    local r = verify.compare(o, tensor.from_table(ref, "fp32", { B * H * S * D }), { atol = tol[dt], rtol = tol[dt] })
    expect(r.ok, string.format("%s: o matches the CPU attention (max abs err %.3g)", label, r.max_abs or -1))
    op:close()
  end
end

local x = tensor.empty({ 1, 2, 64, 64 }, "fp16")
local function raises(text, spec, what)
  local ok, err = pcall(dnn.sdpa, spec)
  expect(not ok and tostring(err):find(text, 1, true), what .. ": " .. tostring(err))
end
raises("v must have q's shape", { q = x, k = x, v = tensor.empty({ 1, 2, 64, 32 }, "fp16"), o = x, scale = 0.125,
  causal = true }, "v's shape")
raises("attention takes fp16 or bf16", { q = tensor.empty({ 1, 1, 8, 8 }, "fp32"), k = tensor.empty({ 1, 1, 8, 8 }, "fp32"),
  v = tensor.empty({ 1, 1, 8, 8 }, "fp32"), o = tensor.empty({ 1, 1, 8, 8 }, "fp32"), scale = 0.125, causal = true },
  "fp32")

if failed > 0 then print(failed .. " failed") os.exit(1) end
print("all ok")
