-- dnn_batchnorm.lua (GPU): cuDNN's batch norm through tb.dnn on a device. Odd-sized x (N, C) in
-- fp32, fp16 and bf16 with fp32 scale/bias against a CPU computation in double (y, the saved mean
-- and 1 / sqrt(var + eps)), replayed from a launch plan (C = 19 may instead get "offers no
-- engine", printed; C = 1024, the operator's, must run); the engine is recorded (index, knobs,
-- choice, workspace) and the probe finds the same one; misuse fails with clear messages.
-- Prints op:describe() for every case. Exit 77 without a GPU or without cuDNN.
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

-- x[i][j] = a small deterministic spread per channel, gamma and beta per channel
local function case(n, c, dt, eps)
  local xv, gv, bv = {}, {}, {}
  for i = 0, n - 1 do
    for j = 0, c - 1 do xv[#xv + 1] = ((i * 37 + j * 11) % 23) / 8 - 1.25 + j * 0.01 end
  end
  for j = 0, c - 1 do gv[#gv + 1] = 0.5 + (j % 5) * 0.25; bv[#bv + 1] = (j % 3) - 1 end
  local x = tensor.from_table(xv, dt, { n, c })
  local xr = x:to_host() -- the values as rounded to dt
  local mean, inv, yv = {}, {}, {}
  for j = 1, c do
    local s = 0
    for i = 0, n - 1 do s = s + xr[i * c + j] end
    local m = s / n
    local q = 0
    for i = 0, n - 1 do q = q + (xr[i * c + j] - m) ^ 2 end
    mean[j], inv[j] = m, 1 / math.sqrt(q / n + eps)
  end
  for i = 0, n - 1 do
    for j = 1, c do yv[i * c + j] = (xr[i * c + j] - mean[j]) * inv[j] * gv[j] + bv[j] end
  end
  return x, tensor.from_table(gv, "fp32", { c }), tensor.from_table(bv, "fp32", { c }),
         tensor.from_table(yv, "fp32", { n * c }), tensor.from_table(mean, "fp32", { c }),
         tensor.from_table(inv, "fp32", { c })
end

local tol = { fp32 = 1e-4, fp16 = 1e-2, bf16 = 5e-2 }
for _, dt in ipairs({ "fp32", "fp16", "bf16" }) do
  for _, shape in ipairs({ { 37, 19 }, { 1000, 1024 }, { 3, 1024 } }) do
    local n, c, eps = shape[1], shape[2], 1e-5
    local label = string.format("%s x (%d, %d)", dt, n, c)
    local x, g, b, yref, mref, iref = case(n, c, dt, eps)
    local y, m, iv = tensor.empty({ n, c }, dt), tensor.empty({ c }, "fp32"), tensor.empty({ c }, "fp32")
    verify.poison(y)
    local ok, op = pcall(dnn.batchnorm, { x = x, scale = g, bias = b, y = y, mean = m, inv_var = iv, eps = eps })
    if not ok and c % 8 ~= 0 and tostring(op):find("offers no engine", 1, true) then
      -- channels not a multiple of 8: cuDNN may have no engine; then the message must say so
      print("info " .. label .. ": " .. tostring(op))
    elseif not ok then
      expect(false, label .. ": " .. tostring(op))
    else
      print("     " .. op:describe())
      local e = op:engine()
      expect(math.type(e.global_index) == "integer" and e.choice >= 1 and e.choice <= e.candidates and
             e.workspace_bytes >= 0 and type(e.knobs_text) == "string",
             string.format("%s: engine %d (knobs %s), choice %d of %d, workspace %d B", label, e.global_index,
               e.knobs_text, e.choice, e.candidates, e.workspace_bytes))
      local probe = dnn.batchnorm { n = n, c = c, dtype = dt, param_dtype = "fp32", eps = eps }
      local pe = probe:engine()
      expect(pe.global_index == e.global_index and pe.knobs_text == e.knobs_text,
             label .. ": the probe finds the same engine")
      local okr, err = pcall(probe.run, probe)
      expect(not okr and tostring(err):find("a probe", 1, true), label .. ": a probe does not run")
      probe:close()
      launch.plan { { call = op } }:run()
      local t = tol[dt]
      expect(verify.compare(y, yref, { atol = t, rtol = t }).ok, label .. ": y matches the CPU batch norm")
      expect(verify.compare(m, mref, { atol = 1e-4, rtol = 1e-4 }).ok, label .. ": saved mean")
      expect(verify.compare(iv, iref, { atol = 1e-3, rtol = 1e-3 }).ok, label .. ": saved 1/sqrt(var + eps)")
      op:close()
      local okc, errc = pcall(op.run, op)
      expect(not okc and tostring(errc):find("closed", 1, true), label .. ": use after close raises")
    end
  end
end

local x = tensor.empty({ 4, 8 }, "fp16")
local f32 = tensor.empty({ 8 }, "fp32")
local function raises(text, spec, what)
  local ok, err = pcall(dnn.batchnorm, spec)
  expect(not ok and tostring(err):find(text, 1, true), what .. ": " .. tostring(err))
end
raises("y (fp32) must have x's dtype", { x = x, scale = f32, bias = f32, y = tensor.empty({ 4, 8 }, "fp32"),
  mean = f32, inv_var = f32, eps = 1e-5 }, "y's dtype")
raises("'mean' has 4 elements", { x = x, scale = f32, bias = f32, y = tensor.empty({ 4, 8 }, "fp16"),
  mean = tensor.empty({ 4 }, "fp32"), inv_var = f32, eps = 1e-5 }, "mean's size")
raises("batch norm takes fp32, fp16 or bf16", { n = 4, c = 8, dtype = "int8", param_dtype = "fp32", eps = 1e-5 },
  "an int8 probe")

if failed > 0 then print(failed .. " failed") os.exit(1) end
print("all ok")
