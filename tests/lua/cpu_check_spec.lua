-- tests/gpu/cpu_check/ (the families of tests/gpu/operators_cpu_check.lua, which only a GPU
-- runs): here, without a GPU, every family loads and describes what the driver expects, no
-- operator checked before the split into families is lost, and the shared rounding and a few CPU
-- implementations give the values worked out by hand.
package.path = "tests/gpu/?.lua;" .. package.path
local opmod = require("tilebench.operator")

local FAMILIES = { "pointwise", "reduction", "matmul", "attention", "stencil", "sort", "layout" }

-- The 40 operators operators_cpu_check.lua checked when it was one file (commit b01c899).
local CHECKED = { "vector_add", "mul2", "relu", "sigmoid", "swiglu", "softmax", "layernorm", "rmsnorm",
  "mean_reduction", "argmax", "leaky_relu", "dropout", "fused_activation", "quantize_global",
  "dequantize_rowwise", "weight_dequant", "rope", "matmul_int8", "streamk_matmul", "l2_norm",
  "cross_entropy", "kl_divergence", "moe_topk_gating", "histogramming", "batch_normalization",
  "flash_decode", "linear_self_attention", "flash_attention", "block_sparse_attention",
  "jacobi_stencil_2d", "gaussian_blur", "2d_max_pooling", "radix_sort", "top_k_selection",
  "bitonic_sort", "matrix_copy", "matrix_transpose", "interleave", "destindex", "reverse_array" }

local function families()
  local t = {}
  for _, f in ipairs(FAMILIES) do t[f] = require("cpu_check." .. f) end
  return t
end

describe("cpu_check families", function()
  it("each lists operators that exist, with cases and a CPU implementation, in one family only", function()
    local seen = {}
    for fname, fam in pairs(families()) do
      assert.is_true(#fam.order > 0, fname)
      for _, n in ipairs(fam.order) do
        assert.is_nil(seen[n], n .. " in " .. fname .. " and " .. tostring(seen[n]))
        seen[n] = fname
        local spec = fam.cases[n]
        assert.is_table(spec, n .. ": no cases")
        assert.is_function(fam.cpu[n], n .. ": no CPU implementation")
        assert.is_true(#spec.dtypes > 0 and #spec.params > 0, n .. ": empty cases")
        local op = opmod.load(n)
        assert.is_true(#op.impls > 0, n)
        if fam.triton_default and fam.triton_default[n] then
          assert.is_table(op.module.implementations.triton, n .. ": triton_default without a triton implementation")
        end
      end
      -- every per-operator table names operators of this family only
      for _, k in ipairs({ "triton_default", "rerun", "extra", "compile_extra" }) do
        for n in pairs(fam[k] or {}) do assert.equals(fname, seen[n], k .. "." .. n) end
      end
    end
    for _, n in ipairs(CHECKED) do assert.is_string(seen[n], n .. " is no longer checked") end
  end)

  it("keeps the stated-rule checks and their kernels", function()
    local f = families()
    for _, k in ipairs({ { "reduction", "argmax" }, { "reduction", "moe_topk_gating" },
                         { "reduction", "histogramming" }, { "attention", "flash_decode" },
                         { "attention", "linear_self_attention" }, { "attention", "block_sparse_attention" },
                         { "stencil", "2d_max_pooling" }, { "sort", "radix_sort" }, { "sort", "top_k_selection" },
                         { "sort", "bitonic_sort" } }) do
      assert.is_function(f[k[1]].extra[k[2]], k[2])
    end
    assert.is_function(f.attention.compile_extra.block_sparse_attention)
    -- the convolutions: triton's default on every case, a spread of its space at two (helper convtri)
    for _, n in ipairs({ "1d_conv", "2d_conv", "3d_conv" }) do
      assert.is_true(f.stencil.triton_default[n], n)
      assert.is_function(f.stencil.extra[n], n)
      assert.is_function(f.stencil.compile_extra[n], n)
    end
    assert.same({ { M = 4, N = 5003 } }, f.reduction.cases.argmax.compile_params)
    assert.equals(3, f.matmul.rerun.streamk_matmul)
  end)

  it("rounds like the device and computes the CPU expectations", function()
    local C = require("cpu_check.common")
    assert.equals(2048, C.round_to("fp16", 2049))         -- a tie: to the even neighbour
    assert.equals(2052, C.round_to("fp16", 2051))         -- a tie the other way
    assert.equals(math.huge, C.round_to("fp16", 65520))   -- past the largest finite fp16
    assert.equals(65504, C.round_to("fp16", 65519))
    assert.equals(2 ^ -24, C.round_to("fp16", 2 ^ -24))   -- the smallest subnormal stays
    assert.equals(0, C.round_to("fp16", 2 ^ -26))
    assert.equals(1, C.round_to("bf16", 1 + 2 ^ -8))             -- a tie (spacing 2^-7): to 1
    assert.equals(1 + 2 ^ -6, C.round_to("bf16", 1 + 3 * 2 ^ -8)) -- a tie: to the even 1 + 2^-6
    assert.equals(-128, C.wrap_int8(128))
    local f = families()
    assert.same({ 4, -128 }, f.pointwise.cpu.vector_add({ dtype = "int8" }, { x = { 1, 127 }, y = { 3, 1 } }))
    assert.same({ 1, 2, 3 }, f.sort.cpu.radix_sort({}, { input = { 2, 3, 1 } }))
    local t = f.sort.cpu.top_k_selection({ params = { k = 2 } }, { input = { 1, 0 / 0, 5 } })
    assert.is_true(t[1] ~= t[1] and t[2] == 5)             -- NaN is the largest: first in a top-k
    assert.same({ 1, 3, 2, 4 }, f.layout.cpu.matrix_transpose({ params = { m = 2, n = 2 } }, { x = { 1, 2, 3, 4 } }))
  end)

  it("refuses an operator no family checks", function()
    local C = require("cpu_check.common")
    assert.error_matches(function() C.main({ "--compile-only", "no_such_operator" }) end,
                         "no small cases for operator 'no_such_operator'", nil, true)
  end)
end)
