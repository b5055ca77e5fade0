"""conv_wgmma.cu's indexing emulated in numpy (no GPU): for each line of geometries on stdin
(conv_wgmma.lua's tiles for a case, printed by conv_wgmma_emulate.sh), the weights reordered as
conv_wgmma_wprep does, each tile's K chunks copied as load_chunk does (the 16-byte region pieces
from the vector at or before the region's start, zeros outside the input), transposed into Bs as
transpose_chunk does, and multiplied as wgmma reads its operands: A and B through PTX's canonical
no-swizzle K-major layout ((8,m),(T,2k)):((1T,SBO),(1,LBO)) at the kernel's descriptors (As:
LBO = BM x 16, SBO = 128; Bs: LBO = NPB x 16, SBO = 128, each tap dy RW + dx rows further), the
warpgroups' M / N split, the virtual positions, and the epilogue's masks. Bs rows the transpose
never writes hold NaN, as stale shared memory might: the kept outputs must not see them. Compared
with a float64 direct cross-correlation. This is a model of the .cu, kept in step with it by hand:
it checks the layout reasoning (wprep order, descriptors, shifts, masks), not the compiled code.
Exits 1 on a mismatch, 77 without numpy.
usage: python3 conv_wgmma_emulate.py < geometries"""
import itertools
import sys

try:
    import numpy as np
except Exception as e:  # noqa: BLE001
    print("no numpy here: %s" % e)
    sys.exit(77)


def conv_ref(x, w, pad, groups):
    B, Cin, D, H, W = x.shape
    Cout, cin_g, KD, KH, KW = w.shape
    cout_g = Cout // groups
    OD, OH, OW = D + 2 * pad[0] - KD + 1, H + 2 * pad[1] - KH + 1, W + 2 * pad[2] - KW + 1
    xp = np.zeros((B, Cin, D + 2 * pad[0], H + 2 * pad[1], W + 2 * pad[2]))
    xp[:, :, pad[0]:pad[0] + D, pad[1]:pad[1] + H, pad[2]:pad[2] + W] = x
    out = np.zeros((B, Cout, OD, OH, OW))
    for g in range(groups):
        for a, b, c in itertools.product(range(KD), range(KH), range(KW)):
            xs = xp[:, g * cin_g:(g + 1) * cin_g, a:a + OD, b:b + OH, c:c + OW]
            out[:, g * cout_g:(g + 1) * cout_g] += np.einsum("bidhw,oi->bodhw", xs, w[g * cout_g:(g + 1) * cout_g, :, a, b, c])
    return out


def emulate(x, w, pad, groups, es, BM, TH, TW, BCB, NV):
    B, Cin, D, H, W = x.shape
    Cout, cin_g, KD, KH, KW = w.shape
    cout_g = Cout // groups
    OD, OH, OW = D + 2 * pad[0] - KD + 1, H + 2 * pad[1] - KH + 1, W + 2 * pad[2] - KW + 1
    PD, PH, PW = pad
    VE, BC, KB, NT2 = 16 // es, BCB // es, BCB // 16, KH * KW
    RH, RW = TH + KH - 1, TW + KW - 1
    RV = (VE - 1 + RW + VE - 1) // VE
    WGM = BM // 64
    WGN = 2 // WGM
    CWN = NV // WGN
    NPB = NV + (KH - 1) * RW + KW - 1
    RAWC0 = RH * RV * VE
    RAWC = RAWC0 + ((40 - RAWC0 % 32) % 32)
    VECLOAD = W % VE == 0
    AS = NT2 * BM * BCB
    STAGE = AS + (BC * RAWC * es if VECLOAD else 0)
    ocp, icp = -(-cout_g // BM) * BM, -(-cin_g // BC) * BC
    mblocks, nch = ocp // BM, icp // BC
    NIT = nch * KD
    # conv_wgmma_wprep: Wr[G][mblocks][nch][KD][NT2][KB][BM][VE]
    wr = np.zeros((groups, mblocks, nch, KD, NT2, KB, BM, VE))
    wv = w.reshape(Cout, cin_g, KD, NT2)
    for g, mb, c, a, tap, kb, m, e in itertools.product(range(groups), range(mblocks), range(nch), range(KD), range(NT2),
                                                        range(KB), range(BM), range(VE)):
        oc, ic = mb * BM + m, c * BC + kb * VE + e
        if oc < cout_g and ic < cin_g:
            wr[g, mb, c, a, tap, kb, m, e] = wv[g * cout_g + oc, ic, a, tap]
    wr = wr.reshape(-1)
    xin = x.reshape(-1)
    out = np.full(B * Cout * OD * OH * OW, np.nan)
    ntx, nty = -(-OW // TW), -(-OH // TH)
    ntiles_xy = B * OD * nty * ntx
    ntiles = groups * mblocks * ntiles_xy
    T, K = 16 // es, 32 // es
    mn = np.arange(256)[:, None]
    kk = np.arange(K)[None, :]

    def offs(n, lbo, sbo):  # canonical K-major no-swizzle, in elements
        return ((mn[:n] % 8) * 16 + (mn[:n] // 8) * sbo + (kk % T) * es + (kk // T) * lbo) // es
    offA, offB = offs(64, BM * 16, 128), offs(CWN, NPB * 16, 128)
    P, NWD = 4 // es, BC // (4 // es)
    for tile in range(ntiles):
        xy, mb = tile % ntiles_xy, tile // ntiles_xy
        r = xy
        tx = r % ntx
        r //= ntx
        ty = r % nty
        r //= nty
        oz, b = r % OD, r // OD
        oy0, ox0, g, m0 = ty * TH, tx * TW, mb // mblocks, (mb % mblocks) * BM
        ix0 = ox0 - PW
        xa = ix0 // VE * VE if ix0 >= 0 else -((-ix0 + VE - 1) // VE) * VE
        lead = ix0 - xa
        acc = np.zeros((BM, NV))
        st = np.full(STAGE // es, np.nan)
        bs = np.full(KB * NPB * 16 // es, np.nan)
        for it in range(NIT):
            src = ((g * mblocks + m0 // BM) * NIT + it) * (NT2 * BM * BC)
            st[:AS // es] = wr[src:src + NT2 * BM * BC]
            c0, a = (it // KD) * BC, it % KD
            z, y0 = oz + a - PD, oy0 - PH
            if VECLOAD:
                chans = cin_g - c0 if 0 <= z < D else 0
                base = ((b * Cin + g * cin_g + c0) * D + z) * (H * W)
                raw0 = AS // es
                for i in range(BC * RH * RV):
                    v, rr, ch = i % RV, (i // RV) % RH, i // (RV * RH)
                    y, xx = y0 + rr, xa + v * VE
                    d = raw0 + ch * RAWC + rr * RV * VE + v * VE
                    ok = ch < chans and 0 <= y < H and 0 <= xx < W
                    st[d:d + VE] = xin[base + ch * D * H * W + y * W + xx:][:VE] if ok else 0
            for p in range(RH * RW):
                rr, xx = p // RW, p % RW
                for wd in range(NWD):
                    for j in range(P):
                        if VECLOAD:
                            v = st[AS // es + (wd * P + j) * RAWC + lead + rr * RV * VE + xx]
                        else:
                            y, xg, cg = oy0 - PH + rr, xa + lead + xx, c0 + wd * P + j
                            ok = 0 <= z < D and 0 <= y < H and 0 <= xg < W and cg < cin_g
                            v = xin[((b * Cin + g * cin_g + cg) * D + z) * H * W + y * W + xg] if ok else 0
                        bs[(((wd >> 2) * NPB + p) * 16 + (wd & 3) * 4 + j * es) // es] = v
            for wg in range(2):
                wgm, wgn = wg % WGM, wg // WGM
                for tap, ks in itertools.product(range(NT2), range(KB // 2)):
                    off = (tap // KW) * RW + tap % KW
                    da = wgm * 64 * 16 + (tap * KB + 2 * ks) * BM * 16
                    db = wgn * CWN * 16 + (2 * ks * NPB + off) * 16
                    acc[wgm * 64:wgm * 64 + 64, wgn * CWN:(wgn + 1) * CWN] += st[da // es + offA] @ bs[db // es + offB].T
        mstride = OD * OH * OW
        obase = (b * Cout + g * cout_g + m0) * mstride + oz * OH * OW
        for m in range(BM):
            if m0 + m >= cout_g:
                continue
            for n in range(NV):
                yy, xx = n // RW, n % RW
                if yy < TH and xx < TW and oy0 + yy < OH and ox0 + xx < OW:
                    out[obase + m * mstride + (oy0 + yy) * OW + ox0 + xx] = acc[m, n]
    return out.reshape(B, Cout, OD, OH, OW)


bad = 0
for line in sys.stdin:
    f = line.split()
    if not f or f[0] != "geometry":
        continue
    (B, Cin, Cout, D, H, W, KD, KH, KW, PD, PH, PW, G, es, BM, TH, TW, BCB, NV) = map(int, f[1:20])
    rng = np.random.default_rng(B * 7 + Cin * 13 + W)
    x = rng.standard_normal((B, Cin, D, H, W))
    w = rng.standard_normal((Cout, Cin // G, KD, KH, KW))
    got = emulate(x, w, (PD, PH, PW), G, es, BM, TH, TW, BCB, NV)
    ref = conv_ref(x, w, (PD, PH, PW), G)
    err = float(np.nanmax(np.abs(got - ref)))
    unset = int(np.isnan(got).sum())
    ok = err < 1e-9 and unset == 0
    bad += not ok
    print("%s %s: max error %.2e, outputs not written %d" % ("ok  " if ok else "FAIL", " ".join(f[1:]), err, unset))
sys.exit(1 if bad else 0)
