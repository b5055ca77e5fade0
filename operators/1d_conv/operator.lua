-- 1d_conv: grouped 1-D cross-correlation, no bias, no kernel flip (OPERATORS.md 32):
-- out[b, oc, l] = sum_{ic, t} in[b, g * Cin_g + ic, l * stride + t - padding] * w[oc, ic, t],
-- positions outside the input counting 0, the output in the input dtype. Shapes, inputs, the
-- reference and the cuda kernel are shared with the other convolutions (operators/_shared/conv.lua).
-- Reference: one thread per output, fp32 sums, any stride / padding / groups (conv_ref.cu).
-- `cuda`: an implicit GEMM on tensor cores (conv_igemm.cu, VARIANT mma, the default; its space has
-- VARIANT wgmma too, conv_wgmma.cu on sm_90; docs/CONV.md): fp16 by mma.sync
-- m16n8k16, fp32 by TF32 m16n8k8 (fp32 accumulators both): TF32 because the fp32 reference
-- TileBench compares with (cuDNN under PyTorch's default allow_tf32) may itself run in TF32, and
-- the tolerance (atol 1e-1, rtol 1e-2) holds its rounding. Any stride / padding / groups.
local conv = require("conv")
local op = conv.operator(1)

op.implementations = {
  cuda = conv.cuda(1),
  -- operators/_shared/conv_triton.py: Triton, compiled ahead of time (selected with --impl triton):
  -- an implicit GEMM on wgmma (fp32 in TF32, as cuDNN), weights and (fp16) the input transposed first
  triton = require("conv_triton").implementation(1),
}

-- `lib`: cuDNN's convolution forward through its backend (graph) API (operators/_shared/dnnlib.lua,
-- host/gpu/cuda_dnn_conv.c); the engine cuDNN chose and its workspace are the row's note.
op.implementations.lib = require("dnnlib").conv_lib(1)

return op
