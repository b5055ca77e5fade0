"""radix_sort in Triton: an LSD radix sort of int32 keys, 8-bit digits, four passes, each pass four
kernels over programs of BLOCK keys:
  radix_hist_kernel      the program's 256-bin digit histogram (tl.histogram), stored digit-major
                         (counts[d, program]) and as the program's own exclusive digit starts
  radix_scan_rows_kernel one program a digit: exclusive prefix of counts[d, :] over the programs,
                         the digit's total
  radix_digit_base_kernel one program: exclusive prefix of the 256 totals (where each digit starts)
  radix_scatter_kernel   the program's keys ranked stably by digit -- a tl.sort of (digit * BLOCK +
                         index), so equal digits keep their index order -- and written to
                         base[d] + counts[d, program] + (sorted position - the program's start of d)
Why not onesweep as in radix_sort.cu: Triton has no shared memory a kernel can scatter into, no
per-warp ballots or match to rank keys, and no ordered spin on another program's flag that it
guarantees to terminate (programs are not promised to start in order), so the stable in-program
rank is a bitonic sort of the program's keys (O(BLOCK log^2 BLOCK) compares instead of a few per
key) and the cross-program prefix a separate scan: correct, several times the traffic of cuda's.
Digit of a key: ((x >> shift) & 255) ^ flip, flip = 128 in the last pass (signed order).
Config: BLOCK (a power of two), num_warps."""
import triton
import triton.language as tl


@triton.jit
def radix_hist_kernel(src, counts, starts, n, nblocks, shift, flip, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(src + i, mask=m, other=0)
    d = ((x >> shift) & 255) ^ flip
    h = tl.histogram(d, 256, mask=m)
    b = tl.arange(0, 256)
    tl.store(counts + b.to(tl.int64) * nblocks + pid, h)
    tl.store(starts + pid.to(tl.int64) * 256 + b, tl.cumsum(h, 0) - h)


@triton.jit
def radix_scan_rows_kernel(counts, totals, nblocks, CHUNK: tl.constexpr):
    d = tl.program_id(0)
    row = counts + d.to(tl.int64) * nblocks
    carry = tl.sum(tl.zeros([CHUNK], dtype=tl.int32), 0)
    for start in range(0, nblocks, CHUNK):
        j = start + tl.arange(0, CHUNK)
        m = j < nblocks
        c = tl.load(row + j, mask=m, other=0)
        tl.store(row + j, tl.cumsum(c, 0) - c + carry, mask=m)
        carry += tl.sum(c, 0)
    tl.store(totals + d, carry)


@triton.jit
def radix_digit_base_kernel(totals, base):
    b = tl.arange(0, 256)
    t = tl.load(totals + b)
    tl.store(base + b, tl.cumsum(t, 0) - t)


@triton.jit
def radix_scatter_kernel(src, dst, counts, starts, base, n, nblocks, shift, flip, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    i = pid.to(tl.int64) * BLOCK + r
    m = i < n
    x = tl.load(src + i, mask=m, other=0)
    d = tl.where(m, ((x >> shift) & 255) ^ flip, 256)  # keys past n after every digit
    v = tl.sort(d * BLOCK + r)
    sd = v // BLOCK
    sidx = v % BLOCK
    ok = sd < 256
    sdc = tl.where(ok, sd, 0)
    first = tl.load(starts + pid.to(tl.int64) * 256 + sdc, mask=ok, other=0)
    prior = tl.load(counts + sdc.to(tl.int64) * nblocks + pid, mask=ok, other=0)
    g = tl.load(base + sdc, mask=ok, other=0).to(tl.int64) + prior + (r - first)
    key = tl.load(src + pid.to(tl.int64) * BLOCK + sidx, mask=ok, other=0)
    tl.store(dst + g, key, mask=ok)
