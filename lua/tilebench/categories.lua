-- categories.lua: TileBench's five operator categories and which operator belongs to which
-- (OPERATORS.md's summary table), for results whose operator folder is absent (anchors).
local M = {}

-- Display order: the order of OPERATORS.md.
M.ORDER = {"Point-wise", "Reduction/Norm", "MatMul/Attn", "Stencil/Conv", "Data Layout"}

M.BY_OPERATOR = {
  vector_add               = "Point-wise",
  mul2                     = "Point-wise",
  relu                     = "Point-wise",
  leaky_relu               = "Point-wise",
  sigmoid                  = "Point-wise",
  dropout                  = "Point-wise",
  swiglu                   = "Point-wise",
  fused_activation         = "Point-wise",
  rope                     = "Point-wise",
  quantize_global          = "Point-wise",
  dequantize_rowwise       = "Point-wise",
  weight_dequant           = "Point-wise",
  softmax                  = "Reduction/Norm",
  layernorm                = "Reduction/Norm",
  rmsnorm                  = "Reduction/Norm",
  l2_norm                  = "Reduction/Norm",
  cross_entropy            = "Reduction/Norm",
  kl_divergence            = "Reduction/Norm",
  mean_reduction           = "Reduction/Norm",
  argmax                   = "Reduction/Norm",
  histogramming            = "Reduction/Norm",
  moe_topk_gating          = "Reduction/Norm",
  batch_normalization      = "Reduction/Norm",
  flash_attention          = "MatMul/Attn",
  flash_decode             = "MatMul/Attn",
  block_sparse_attention   = "MatMul/Attn",
  matmul_fp32_fp16_fp8     = "MatMul/Attn",
  matmul_int8              = "MatMul/Attn",
  streamk_matmul           = "MatMul/Attn",
  batched_matmul           = "MatMul/Attn",
  linear_self_attention    = "MatMul/Attn",
  ["1d_conv"]              = "Stencil/Conv",
  ["2d_conv"]              = "Stencil/Conv",
  ["3d_conv"]              = "Stencil/Conv",
  ["2d_max_pooling"]       = "Stencil/Conv",
  jacobi_stencil_2d        = "Stencil/Conv",
  gaussian_blur            = "Stencil/Conv",
  matrix_copy              = "Data Layout",
  matrix_transpose         = "Data Layout",
  interleave               = "Data Layout",
  destindex                = "Data Layout",
  bitonic_sort             = "Data Layout",
  radix_sort               = "Data Layout",
  top_k_selection          = "Data Layout",
  reverse_array            = "Data Layout",
}

local known = {}
for _, c in ipairs(M.ORDER) do known[c] = true end

-- The category an operator folder declares (operator.lua's `category`), read through the one
-- operator loader (operator.lua: the search path, config.yaml and operator.lua validated); nil
-- when no folder of that name loads. Loading an operator runs no GPU code.
local function declared(name)
  local ok, op = pcall(require("tilebench.operator").load, name)
  if ok and type(op.category) == "string" then return op.category end
  return nil
end

-- M.of(name): the operator's category, or "Other" for an operator nobody has classified.
function M.of(name)
  return declared(name) or M.BY_OPERATOR[name] or "Other"
end

function M.is_known(category) return known[category] == true end

return M
