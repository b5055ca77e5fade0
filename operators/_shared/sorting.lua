-- sorting.lua (operators/_shared; `require("sorting")`): what the sorting operators (radix_sort,
-- top_k_selection, bitonic_sort) share: their reference, a bitonic network in global memory
-- (sort_ref.cu, one launch a step), and the SORT_KIND define of tb_sort.cuh's key order.
local M = {}

M.KIND = { int32 = 1, fp32 = 2, fp16 = 3 }

function M.kind(dtype)
  local k = M.KIND[dtype]
  if not k then error("sorting: no key order for dtype " .. tostring(dtype), 2) end
  return k
end

local function pow2_at_least(n)
  local p = 1
  while p < n do p = p * 2 end
  return p
end
M.pow2_at_least = pow2_at_least

-- Grid for a grid-stride kernel over `count` items, 256 threads a block.
local function grid(count, ctx)
  return { math.max(1, math.min(ctx.cdiv(count, 256), 16384)) }
end

-- The reference plan: x (n values of dtype) sorted ascending into out (the first `count` of the
-- n: count = n for a sort), or, with desc = true, the `count` largest in descending order.
-- The keys' scratch (p uint32, p the power of two >= n) is allocated here, once per case.
function M.reference(ctx, x, out, n, count, dtype, desc)
  local defs = { SORT_KIND = M.kind(dtype) }
  local p = pow2_at_least(n)
  local keys = ctx.empty({ p }, "int32")
  local steps = { { fn = ctx:kernel("sort_ref.cu", "sort_ref_keys", defs), grid = grid(p, ctx), block = { 256 },
                    args = { x, keys, ctx.i64(n), ctx.i64(p) } } }
  local step = ctx:kernel("sort_ref.cu", "sort_ref_step", defs)
  local k = 2
  while k <= p do
    local j = k // 2
    while j >= 1 do
      steps[#steps + 1] = { fn = step, grid = grid(p // 2, ctx), block = { 256 },
                            args = { keys, ctx.i64(p), ctx.i64(j), ctx.i64(k) } }
      j = j // 2
    end
    k = k * 2
  end
  if desc then
    steps[#steps + 1] = { fn = ctx:kernel("sort_ref.cu", "sort_ref_store_desc", defs), grid = grid(count, ctx),
                          block = { 256 }, args = { keys, out, ctx.i64(n), ctx.i64(count) } }
  else
    steps[#steps + 1] = { fn = ctx:kernel("sort_ref.cu", "sort_ref_store", defs), grid = grid(count, ctx),
                          block = { 256 }, args = { keys, out, ctx.i64(count) } }
  end
  return ctx.plan(steps)
end

-- `lib` of radix_sort and top_k_selection: CUB (docs/SORTING.md) through libtb_cub.so, built with
-- nvcc where the build found it and opened with dlopen (tb.cub); unsupported, with every place
-- searched, where it is absent. The row's configuration records CUB's version, its note the call.
local function cub_version_string(v) return string.format("%d.%d.%d", v // 100000, v // 100 % 1000, v % 100) end

-- supports(case) for the lib table spec: the operator's own supports first, then the library
function M.cub_supports(spec, supports)
  return function(case)
    local ok_s, why_s = supports(case)
    if not ok_s then return false, why_s end
    local cub = require("tb.cub")
    local ok, why = cub.available()
    if not ok then return false, "CUB: " .. tostring(why) end
    spec.default = { cub = cub_version_string(cub.version().version) }
    return true
  end
end

-- the plan's note (the row's note_lib): CUB's version, what it is asked, its temporary storage
function M.cub_note(call)
  return string.format("CUB %s; %s", cub_version_string(require("tb.cub").version().version), call:describe())
end

return M
