-- tb.blas on a GPU: a cuBLASLt matmul computes a known product (row-major, batched, fp8 TN with
-- bf16 output with and without fast accumulation, int8 TN with int32 output), replays from a
-- launch plan, reports its algorithms, and fails with clear messages (fp8 without B transposed,
-- algo_index past the list, use after close). fp8/int8 cases print op:describe(), the
-- descriptors cuBLASLt was given, pass or fail. Exit 77 without a GPU.
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local blas = require("tb.blas")
local ok_lib, why_lib = blas.available()
if not ok_lib then io.stderr:write("skip: ", tostring(why_lib), "\n") os.exit(77) end
local tensor, verify, launch = require("tb.tensor"), require("tb.verify"), require("tb.launch")

local failed = 0
local function expect(cond, msg)
  if cond then print("ok   " .. msg) else failed = failed + 1; print("FAIL " .. msg) end
end
local function expect_error(pattern, f, msg)
  local ok, err = pcall(f)
  expect(not ok and tostring(err):find(pattern, 1, true) ~= nil,
         msg .. (ok and " (no error)" or (" -- " .. tostring(err):match("[^\n]*"))))
end

-- A (m, k) and B (k, n) with small integers; C = A @ B computed here, exact in every dtype used.
local m, n, k, batch = 48, 32, 64, 2
local function mat(rows, cols, z, f)
  local t = {}
  for b = 0, z - 1 do for i = 0, rows - 1 do for j = 0, cols - 1 do t[#t + 1] = f(b, i, j) end end end
  return t
end
local av = mat(m, k, batch, function(b, i, j) return ((i * 7 + j * 3 + b) % 5) - 2 end)
local bv = mat(k, n, batch, function(b, i, j) return ((i * 5 + j * 11 + 2 * b) % 7) - 3 end)
local btv = mat(n, k, batch, function(b, j, i) return bv[b * k * n + i * n + j + 1] end) -- B^T (n, k)
local cv = mat(m, n, batch, function(b, i, j)
  local s = 0
  for x = 0, k - 1 do s = s + av[b * m * k + i * k + x + 1] * bv[b * k * n + x * n + j + 1] end
  return s
end)
local expected = tensor.from_table(cv, "fp32", { batch * m * n })

for _, dt in ipairs({ "fp32", "fp16", "bf16" }) do
  local a = tensor.from_table(av, dt, { batch * m * k })
  local b = tensor.from_table(bv, dt, { batch * k * n })
  local c = tensor.empty({ batch * m * n }, "fp32")
  verify.poison(c)
  local op = blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, batch = batch,
                          compute = dt == "fp32" and "tf32" or nil }
  expect(op:algo_count() >= 1, dt .. ": heuristic offers " .. op:algo_count() .. " algorithms")
  local plan = launch.plan{ { call = op } }
  plan:run()
  local r = verify.compare(c, expected, { atol = 0, rtol = 0 })
  expect(r.ok, dt .. " inputs, fp32 output, batch 2, replayed from a plan: exact")
end

-- Creates and runs one TN matmul; on any failure prints the descriptors cuBLASLt was given
-- (the error text carries them too, with cuBLASLt's own log line when it gave one).
local function run_tn(label, spec, ref)
  local ok_make, op = pcall(blas.matmul, spec)
  if not ok_make then
    expect(false, label .. ": " .. tostring(op):match("[^\n]*"))
    return
  end
  local ok_run, err = pcall(op.run, op)
  if ok_run then ok_run, err = pcall(device.synchronize) end
  if not ok_run then
    expect(false, label .. ": " .. tostring(err):match("[^\n]*"))
  else
    local r = verify.compare(spec.c, ref, { atol = 0, rtol = 0 })
    expect(r.ok, label .. ": exact" .. (r.ok and "" or string.format(" (%d mismatches)", r.mismatches or -1)))
  end
  print("     descriptors: " .. op:describe())
  op:close()
end

do -- fp8 e4m3, B given transposed (TN), bf16 output, unit scales; and fast accumulation
  local a = tensor.from_table(av, "fp8_e4m3", { batch * m * k })
  local bt = tensor.from_table(btv, "fp8_e4m3", { batch * n * k })
  local b = tensor.from_table(bv, "fp8_e4m3", { batch * k * n })
  local ref = tensor.from_table(cv, "bf16", { batch * m * n })
  for _, fast in ipairs({ false, true }) do
    local c = tensor.empty({ batch * m * n }, "bf16")
    verify.poison(c)
    run_tn("fp8 TN -> bf16, batch 2, fast_accum=" .. tostring(fast),
           { a = a, b = bt, c = c, m = m, n = n, k = k, batch = batch, b_transposed = true,
             fp8 = { fast_accum = fast, out_dtype = "bf16" } }, ref)
  end
  local c = tensor.empty({ batch * m * n }, "bf16")
  expect_error("b_transposed=true", function()
    blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, batch = batch }
  end, "fp8 without b_transposed is refused with the TN explanation")
end

do -- int8, B given transposed (TN), int32 output and accumulation
  local a = tensor.from_table(av, "int8", { batch * m * k })
  local bt = tensor.from_table(btv, "int8", { batch * n * k })
  local c = tensor.empty({ batch * m * n }, "int32")
  verify.poison(c)
  run_tn("int8 TN -> int32, batch 2",
         { a = a, b = bt, c = c, m = m, n = n, k = k, batch = batch, b_transposed = true },
         tensor.from_table(cv, "int32", { batch * m * n }))
end

do -- misuse
  local a = tensor.from_table(av, "fp16", { batch * m * k })
  local b = tensor.from_table(bv, "fp16", { batch * k * n })
  local c = tensor.empty({ batch * m * n }, "fp16")
  local op = blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, batch = batch }
  local count = op:algo_count()
  expect_error("past the", function()
    blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, batch = batch, algo_index = count + 1 }
  end, "algo_index past the heuristic's list")
  expect_error("elements, the problem needs", function()
    blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, batch = batch + 1 }
  end, "tensors too small for the batch")
  expect_error("compute tf32 needs fp32", function()
    blas.matmul{ a = a, b = b, c = c, m = m, n = n, k = k, compute = "tf32" }
  end, "tf32 compute on fp16 data")
  op:close()
  op:close() -- idempotent
  expect_error("blas matmul is closed", function() op:run() end, "use after close")
  local v = blas.version()
  expect(type(v.version) == "number" and v.version > 0 and v.path:find("cublasLt", 1, true) ~= nil,
         "version " .. tostring(v.version) .. " from " .. tostring(v.path))
end

print(failed == 0 and "blas: all ok" or ("blas: " .. failed .. " failed"))
os.exit(failed == 0 and 0 or 1)
