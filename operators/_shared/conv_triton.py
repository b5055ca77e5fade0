"""The convolutions' Triton kernels (1d_conv, 2d_conv, 3d_conv; operators/_shared/conv_triton.lua):
a grouped cross-correlation, no bias, no flip, as one implicit GEMM per (batch, group):
out[b, g Cout_g + n, m] = sum_k A[m, k] B[k, n], m the output position (od, oh, ow) flattened,
k = (tap, ic) with the tap (kd, kh, kw) outer, A[m, (tap, ic)] = x[b, g Cin_g + ic, od s + kd - p,
oh s + kh - p, ow s + kw - p] (0 outside the input), B[(tap, ic), n] = w[g Cout_g + n, ic, tap].
1-D and 2-D are the 3-D kernel with D = H = 1 (and KD = KH = 1): RANK only drops the tests.

conv_kernel: a program per BM x BN output tile of one (batch, group), BK-deep tl.dot steps (wgmma
on sm_90, fp32 accumulators) in ONE loop over the taps x cdiv(Cin_g, BK) channel blocks (the
pipeliner sees a single loop; a step adds the tap's offset, a scalar, to each row's offset and
tests one bit of the row's padding mask word, built before the loop where the taps fit in 32;
the channel masks are a BK vector; nothing is per element). fp32 multiplies in TF32, as the cuDNN
reference does under PyTorch's default allow_tf32 (OPERATORS.md, TF32 side effects): the
tolerances (atol 1e-1 / 5e-1, rtol 1e-2) hold TF32's 2^-11 relative rounding over K <= 1728 terms.
  wt: the weight as (taps, Cout, Cin_g) (conv_transpose_kernel of w viewed (Cout Cin_g, taps)):
      each step's B tile is Cin_g-contiguous, K-major as TF32 wgmma reads it, 16-byte loads.
  CL = False: x as given, (B, Cin, D, H, W): a step's A tile is BM positions of BK channels,
      contiguous along m for stride 1 but shifted by the tap (no alignment known: 4-byte
      cp.async for fp32, 2-byte loads through registers for fp16, where PF = True has the next
      step's tile loaded (_a_tile) before this step's tl.dot: triton does not pipeline them).
  CL = True: x transposed first to channels-last (B, D H W, Cin) by conv_transpose_kernel: the A
      tile is BK contiguous channels per row, 16-byte cp.async (Cin a multiple of 16 bytes),
      K-major; costs one read and write of x (the 1-D case's balance of bytes and flops).
  SPLIT > 1: program_id(2) takes its share of the K steps and stores fp32 partials into ws at
      split x n_out (n_out = B Cout OD OH OW); conv_splitk_reduce_kernel adds them in split order.
Grid: (cdiv(M, BM) * cdiv(Cout_g, BN), B * groups, SPLIT), the channel tiles of one position
tile adjacent (their A tiles come from L2). Offsets inside one (batch, group) slab are int32 (the
Lua side checks Cin D H W, Cout OD OH OW and taps Cout Cin_g < 2^31), slab bases int64.

conv_transpose_kernel: dst[b, c, r] = src[b, r, c] for (R, C) matrices, TR x TC tiles
(program_id(1) the batch), triton's shared-memory layout conversion between the two.
conv_prep_kernel: the weight's and the input's transposes of a CL plan in one launch."""
import triton
import triton.language as tl


@triton.jit
def _transpose_tile(src, dst, R, C, tile, TR: tl.constexpr, TC: tl.constexpr):
    """dst (C, R) = src (R, C)^T, tile `tile` of TR x TC (row-major over the tiles)."""
    nc = tl.cdiv(C, TC)
    r = (tile // nc) * TR + tl.arange(0, TR)
    c = (tile % nc) * TC + tl.arange(0, TC)
    m = (r[:, None] < R) & (c[None, :] < C)
    v = tl.load(src + r[:, None] * C + c[None, :], mask=m)
    tl.store(dst + c[None, :] * R + r[:, None], v, mask=m)


@triton.jit
def conv_transpose_kernel(src, dst, R, C, TR: tl.constexpr, TC: tl.constexpr):
    base = tl.program_id(1).to(tl.int64) * R * C
    _transpose_tile(src + base, dst + base, R, C, tl.program_id(0), TR, TC)


@triton.jit
def conv_prep_kernel(w, wt, RW, CW, x, xt, RX, CX, n_w, n_x, TR: tl.constexpr, TC: tl.constexpr):
    """Both transposes of a channels-last plan in one launch: programs [0, n_w) the weight's
    (RW, CW) tiles, then n_x programs per batch entry of x's (RX, CX)."""
    pid = tl.program_id(0)
    if pid < n_w:
        _transpose_tile(w, wt, RW, CW, pid, TR, TC)
    else:
        p = pid - n_w
        base = (p // n_x).to(tl.int64) * RX * CX
        _transpose_tile(x + base, xt + base, RX, CX, p % n_x, TR, TC)


@triton.jit
def _a_tile(xb, tap, c0, bits, row0, m_ok, iw0, ih0, id0, offs_k, Cin, cin_g, S, D, H, W, RANK: tl.constexpr,
            KH: tl.constexpr, KW: tl.constexpr, NT: tl.constexpr, CL: tl.constexpr, EVEN_C: tl.constexpr, live,
            LIVE: tl.constexpr):
    """The A tile of tap `tap`, channels c0 + [0, BK): BM positions x BK channels, zero where the
    tap falls in the padding, past Cin_g, or (LIVE) where `live` is false: a prefetch past the
    last step."""
    tw = tap % KW
    th = (tap // KW) % KH
    td = tap // (KW * KH)
    if NT <= 32:
        ok = ((bits >> tap) & 1) != 0
    else:
        iw = iw0 + tw
        ok = m_ok & (iw >= 0) & (iw < W)
        if RANK >= 2:
            ih = ih0 + th
            ok = ok & (ih >= 0) & (ih < H)
            if RANK == 3:
                idd = id0 + td
                ok = ok & (idd >= 0) & (idd < D)
    if LIVE:
        ok = ok & live
    toff = (td * H + th) * W + tw
    ic = c0 + offs_k
    if CL:
        a_ptrs = xb + (row0 + toff * Cin)[:, None] + ic[None, :]
    else:
        a_ptrs = xb + ic[None, :] * S + (row0 + toff)[:, None]
    if EVEN_C:
        a = tl.load(a_ptrs, mask=ok[:, None], other=0.0)
    else:
        a = tl.load(a_ptrs, mask=ok[:, None] & (ic < cin_g)[None, :], other=0.0)
    return a


@triton.jit
def conv_kernel(x, wt, out, ws, Cin, Cout, cin_g, cout_g, groups, D, H, W, OD, OH, OW, stride, pad, n_out,
                RANK: tl.constexpr, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, CL: tl.constexpr,
                EVEN_C: tl.constexpr, SPLIT: tl.constexpr, PF: tl.constexpr):
    pid = tl.program_id(0)
    bg = tl.program_id(1)
    b = bg // groups
    g = bg % groups
    num_n = tl.cdiv(cout_g, BN)
    pid_n = pid % num_n
    pid_m = pid // num_n
    S = D * H * W
    M = OD * OH * OW

    offs_m = pid_m * BM + tl.arange(0, BM)
    m_ok = offs_m < M
    ow = offs_m % OW
    iw0 = ow * stride - pad
    ih0 = iw0  # (unused below rank 2 / 3: placeholders for _a_tile)
    id0 = iw0
    if RANK >= 2:
        t = offs_m // OW
        ih0 = (t % OH) * stride - pad
        if RANK == 3:
            id0 = (t // OH) * stride - pad
    # weight rows wrapped into range (never stored), so the B tile needs only the channel mask
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_nw = offs_n % cout_g
    offs_k = tl.arange(0, BK)

    if CL:
        xb = x + (b.to(tl.int64) * S) * Cin + g * cin_g
    else:
        xb = x + (b.to(tl.int64) * Cin + g * cin_g) * S
    wb = wt + g * cout_g * cin_g + offs_nw[None, :] * cin_g + offs_k[:, None]
    tap_stride = Cout * cin_g

    # The padding masks of every tap for each row, as bits (tap t at bit t) when the taps fit in
    # 32: the loop then tests one bit and adds the tap's offset (a scalar) to the row's offset,
    # where per-axis tests cost 10-20 instructions a row and step (3-D: 204 SASS instructions a
    # 128 x 64 x 64 fp16 step against 256 cycles of wgmma).
    NT: tl.constexpr = KD * KH * KW
    if RANK == 3:
        row0 = (id0 * H + ih0) * W + iw0
    elif RANK == 2:
        row0 = ih0 * W + iw0
    else:
        row0 = iw0
    if NT <= 32:
        bits = tl.zeros((BM,), dtype=tl.int32)
        for kw in tl.static_range(KW):
            okw = (iw0 + kw >= 0) & (iw0 + kw < W) & m_ok
            for kh in tl.static_range(KH):
                okh = okw
                if RANK >= 2:
                    okh = okw & (ih0 + kh >= 0) & (ih0 + kh < H)
                for kd in tl.static_range(KD):
                    ok = okh
                    if RANK == 3:
                        ok = okh & (id0 + kd >= 0) & (id0 + kd < D)
                    bits = bits | (ok.to(tl.int32) << ((kd * KH + kh) * KW + kw))
    else:
        bits = m_ok.to(tl.int32)  # (unused past 32 taps: _a_tile tests each axis)
    if CL:
        row0 = row0 * Cin

    ncb = tl.cdiv(cin_g, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    steps = NT * ncb
    if SPLIT > 1:
        split = tl.program_id(2)
        lo = split * steps // SPLIT
        hi = (split + 1) * steps // SPLIT
    else:
        lo = 0
        hi = steps
    if PF:
        # the A tile through registers (2-byte elements as given): the next step's loads issue
        # before this step's wgmma, so their latency hides behind it; (tap, c0) carried from
        # step to step (c0 steps by BK and wraps to the next tap)
        tap = lo // ncb
        c0 = (lo - tap * ncb) * BK
        a_cur = _a_tile(xb, tap, c0, bits, row0, m_ok, iw0, ih0, id0, offs_k, Cin, cin_g, S, D, H, W,
                        RANK, KH, KW, NT, CL, EVEN_C, lo < hi, True)
    for it in range(lo, hi):
        if PF:
            b_ptrs = wb + tap * tap_stride + c0
            if EVEN_C:
                bt = tl.load(b_ptrs)
            else:
                bt = tl.load(b_ptrs, mask=((c0 + offs_k) < cin_g)[:, None], other=0.0)
            c0_n = c0 + BK
            wrap = c0_n >= ncb * BK
            tap_n = tap + wrap.to(tl.int32)
            c0_n = tl.where(wrap, 0, c0_n)
            a = a_cur
            a_cur = _a_tile(xb, tap_n, c0_n, bits, row0, m_ok, iw0, ih0, id0, offs_k, Cin, cin_g, S, D, H, W,
                            RANK, KH, KW, NT, CL, EVEN_C, it + 1 < hi, True)
        else:
            # (written out, not through _a_tile, and from the step number rather than carried:
            # either costs fp32's cp.async path about 30 SASS instructions a step, or 12 more
            # registers, past the 128 that let two programs of 8 warps share an SM)
            tap = it // ncb
            c0 = (it - tap * ncb) * BK
            tw = tap % KW
            th = (tap // KW) % KH
            td = tap // (KW * KH)
            if NT <= 32:
                ok = ((bits >> tap) & 1) != 0
            else:
                iw = iw0 + tw
                ok = m_ok & (iw >= 0) & (iw < W)
                if RANK >= 2:
                    ih = ih0 + th
                    ok = ok & (ih >= 0) & (ih < H)
                    if RANK == 3:
                        idd = id0 + td
                        ok = ok & (idd >= 0) & (idd < D)
            toff = (td * H + th) * W + tw
            ic = c0 + offs_k
            if CL:
                a_ptrs = xb + (row0 + toff * Cin)[:, None] + ic[None, :]
            else:
                a_ptrs = xb + ic[None, :] * S + (row0 + toff)[:, None]
            b_ptrs = wb + tap * tap_stride + c0
            if EVEN_C:
                a = tl.load(a_ptrs, mask=ok[:, None], other=0.0)
                bt = tl.load(b_ptrs)
            else:
                kok = ic < cin_g
                a = tl.load(a_ptrs, mask=ok[:, None] & kok[None, :], other=0.0)
                bt = tl.load(b_ptrs, mask=kok[:, None], other=0.0)
        acc = tl.dot(a, bt, acc, input_precision="tf32")
        if PF:
            tap = tap_n
            c0 = c0_n

    o_off = (b.to(tl.int64) * Cout + g * cout_g) * M + offs_n[None, :] * M + offs_m[:, None]
    o_mask = m_ok[:, None] & (offs_n[None, :] < cout_g)
    if SPLIT > 1:
        tl.store(ws + split.to(tl.int64) * n_out + o_off, acc, mask=o_mask)
    else:
        tl.store(out + o_off, acc.to(out.dtype.element_ty), mask=o_mask)


@triton.jit
def conv_splitk_reduce_kernel(ws, out, n_out, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n_out
    acc = tl.load(ws + i, mask=m, other=0.0)
    for s in tl.static_range(1, SPLIT):
        acc += tl.load(ws + s * n_out + i, mask=m, other=0.0)
    tl.store(out + i, acc.to(out.dtype.element_ty), mask=m)
