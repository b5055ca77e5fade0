-- dnnlib.lua: what the cuDNN `lib` implementations share (batch_normalization, flash_attention,
-- the convolutions: conv_lib, 2d_max_pooling;
-- tb.dnn, host/gpu/cuda_dnn*.c): supports() over a probe of the case's graph, and the plan whose
-- note names the engine cuDNN chose (plan.note: the row's note in the raw results, CSV column
-- note_lib).
local M = {}

-- true, or false and cuDNN's reason where it cannot be opened (every place searched), cannot be
-- used (no_library: a sub-library that does not load) or offers no engine for the case.
-- make_probe(dnn) builds the case's graph without buffers; any other failure is the row's.
function M.supports(make_probe)
  local dnn = require("tb.dnn")
  local ok, why = dnn.available()
  if not ok then return false, "cuDNN: " .. tostring(why) end
  local okp, probe = pcall(make_probe, dnn)
  if not okp then
    local msg = tostring(probe)
    if msg:find("offers no engine", 1, true) or msg:find("CUDNN_STATUS_NOT_SUPPORTED", 1, true)
       or require("tb.error").class(probe) == "no_library" then
      return false, msg
    end
    error(probe, 0)
  end
  probe:close()
  return true
end

-- "cuDNN 9.19.0 engine 8 (knobs 3=1 5=2), heuristic choice 1 of 4, workspace 0 B": the library's
-- version (engine numbers are a version's), cuDNN's global engine index, its knob choices (cuDNN's
-- knob type = value), its place in the heuristic's list.
-- A legacy call (max pooling) has no engine: "cuDNN 9.19.0 cudnnPoolingForward (legacy API, no engine
-- choice), workspace 0 B".
function M.note(graph)
  local e = graph:engine()
  local v = require("tb.dnn").version().version -- cuDNN 9: major * 10000 + minor * 100 + patch
  if e.legacy_api then
    return string.format("cuDNN %d.%d.%d %s (legacy API, no engine choice), workspace %d B", v // 10000,
      v // 100 % 100, v % 100, e.legacy_api, e.workspace_bytes)
  end
  return string.format("cuDNN %d.%d.%d engine %d (knobs %s), heuristic choice %d of %d, workspace %d B", v // 10000,
    v // 100 % 100, v % 100, e.global_index, e.knobs_text ~= "" and e.knobs_text or "none", e.choice, e.candidates,
    e.workspace_bytes)
end

-- The plan that runs graph (a tb.dnn op bound to the case's buffers), noting its engine.
function M.plan(ctx, graph)
  local plan = ctx.plan { { call = graph } }
  plan.note = M.note(graph)
  return plan
end

-- The convolutions' `lib` (1d_conv, 2d_conv, 3d_conv: rank 1, 2, 3): cuDNN's convolution forward
-- (tb.dnn.conv, host/gpu/cuda_dnn_conv.c) over the case's contiguous input, weight and output, the
-- shapes from conv.lua's dims (operators/_shared/conv.lua).
local function conv_spec(case, rank)
  local t = require("conv").dims(case, rank)
  local input, window = {}, {}
  for d = 4 - rank, 3 do input[#input + 1], window[#window + 1] = t.sp[d], t.k[d] end
  return { n = t.b, c = t.cin, k = t.cout, groups = t.groups, input = input, window = window, stride = t.stride,
           padding = case.params.padding }
end

function M.conv_lib(rank)
  return {
    description = "cuDNN 9's backend API: one CONVOLUTION_FORWARD operation (cross-correlation, fp32 compute; for fp32 data TF32 engines allowed, as PyTorch's cudnn.allow_tf32 default) over the contiguous NC[D]HW tensors" ..
      (rank == 1 and " (1-d as 2-d with H = 1)" or "") ..
      "; the heuristic's (mode A) first engine that finalises, its workspace allocated; the engine and workspace in the note",
    supports = function(case)
      local spec = conv_spec(case, rank)
      spec.dtype = case.dtype
      return M.supports(function(dnn) return dnn.conv(spec) end)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local spec = conv_spec(case, rank)
      spec.x, spec.w, spec.y = ins.input, ins.weight, outs.out
      return M.plan(ctx, require("tb.dnn").conv(spec))
    end,
  }
end

return M
