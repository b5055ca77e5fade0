"""bitonic_sort in Triton: the reference's bitonic network over p (the power of two >= n) int32
keys that order like the values (fp16 widened to fp32 exactly; key = bits ^ ((bits >> 31) &
0x7FFFFFFF), every NaN and the padding past n the largest key 0x7FFFFFFF), in three kernels:
  bitonic_chunk_kernel   sorts each BLOCK-key chunk with tl.sort, ascending where (start & k) == 0
                         and descending (stored reversed) elsewhere: the state the network reaches
                         after every stage <= BLOCK (stage k = BLOCK) or, on a bitonic chunk, after
                         the steps j < BLOCK of stage k (sorting a bitonic sequence is its merge);
                         in the last stage it writes values (i < n) instead of keys
  bitonic_step_kernel    one long step j >= BLOCK of stage k in global memory: min to i, max to i+j
                         where ascending (the reverse elsewhere)
Values only, so the result is torch.sort(x).values whichever equal keys move.
Config: BLOCK (a power of two), num_warps."""
import triton
import triton.language as tl


@triton.jit
def bitonic_chunk_kernel(src, dst, n, k, FROM_VALUES: tl.constexpr, TO_VALUES: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    start = pid.to(tl.int64) * BLOCK
    i = start + r
    if FROM_VALUES:
        m = i < n
        x = tl.load(src + i, mask=m, other=0.0).to(tl.float32)
        bits = x.to(tl.int32, bitcast=True)
        key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
        key = tl.where((x != x) | (i >= n), 0x7FFFFFFF, key)
    else:
        key = tl.load(src + i)
    s = tl.sort(key)
    desc = (start & k) != 0
    o = start + tl.where(desc, BLOCK - 1 - r, r)
    if TO_VALUES:
        v = (s ^ ((s >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)
        tl.store(dst + o, v.to(dst.dtype.element_ty), mask=o < n)
    else:
        tl.store(dst + o, s)


@triton.jit
def bitonic_step_kernel(keys, j, k, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    i = ((t & ~(j - 1)) << 1) | (t & (j - 1))
    a = tl.load(keys + i)
    b = tl.load(keys + i + j)
    asc = (i & k) == 0
    lo = tl.minimum(a, b)
    hi = tl.maximum(a, b)
    tl.store(keys + i, tl.where(asc, lo, hi))
    tl.store(keys + i + j, tl.where(asc, hi, lo))
