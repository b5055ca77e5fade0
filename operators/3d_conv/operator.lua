-- 3d_conv: grouped 3-D cross-correlation, no bias, no kernel flip (OPERATORS.md 34):
-- F.conv3d: the same stride and padding on D, H and W, W = H (a case may give W),
-- positions outside the input counting 0, the output in the input dtype. Shapes, inputs, the
-- reference and the cuda kernel are shared with the other convolutions (operators/_shared/conv.lua).
-- Reference: one thread per output, fp32 sums, any stride / padding / groups (conv_ref.cu).
-- `cuda`: an implicit GEMM on tensor cores (docs/CONV.md), on sm_90 by wgmma (conv_wgmma.cu,
-- VARIANT wgmma: stride 1; the default there), elsewhere by mma.sync (conv_igemm.cu, VARIANT mma):
-- fp16 in, fp32 accumulators; fp32 by TF32, because the fp32 reference TileBench compares with
-- (cuDNN under PyTorch's default allow_tf32) may itself run in TF32, and the tolerance (atol 5e-1,
-- rtol 1e-2) holds its rounding. Any stride / padding / groups.
local conv = require("conv")
local op = conv.operator(3)

op.implementations = {
  cuda = conv.cuda(3),
  -- operators/_shared/conv_triton.py: Triton, compiled ahead of time (selected with --impl triton):
  -- an implicit GEMM on wgmma (fp32 in TF32, as cuDNN), weights and (fp16) the input transposed first
  triton = require("conv_triton").implementation(3),
}

-- `lib`: cuDNN's convolution forward through its backend (graph) API (operators/_shared/dnnlib.lua,
-- host/gpu/cuda_dnn_conv.c); the engine cuDNN chose and its workspace are the row's note.
op.implementations.lib = require("dnnlib").conv_lib(3)

return op
