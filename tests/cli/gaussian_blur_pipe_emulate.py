"""gaussian_blur_pipe's indexing (operators/gaussian_blur/gaussian_blur_mma.cu, PIPE = 1) emulated
in numpy (no GPU): for each line "geometry rows cols kr kc es BX NB STAGES segb" on stdin (the
plan's geometries, printed by gaussian_blur_pipe_emulate.sh), every block of the grid runs its band
loop as the kernel does: the cp.async groups (rows lo .. hi - 1 of group m, slot (lo % RING) + r
wrapped once, zero outside the image) land in a ring of RING = STAGES TR + KR - 1 rows whose
slots start as NaN (stale shared memory), a group counted complete only at the iteration that
waits for it (wait_group STAGES - 2), issued after that iteration's barrier; each warp's ldmatrix
row addresses (slot = sb + 16 warp + lrow + i, wrapped once; fp16 x2 lanes 0-15 give rows 0-15,
fp32 x4 lanes 8q .. 8q + 7 rows (q & 1) 8 .. + 7 at column 4 (q >> 1)) assemble A from the
ring, D += A . T_i (T_i[k][n] = w[i][k - n - 4 + HL]) over the NB + 1 column blocks, and the
staging halves and stores keep what lies inside the tile and the image. Every slot a band reads
must hold the row it expects (a tag per slot, checked at each read: a write-after-read race on
the ring shows as a wrong tag), every output is written exactly once, and the result equals a
float64 direct correlation. A model of the .cu kept in step by hand: it checks the index
reasoning, not the compiled code. Exits 1 on a mismatch, 77 without numpy.
usage: python3 gaussian_blur_pipe_emulate.py < geometries"""
import sys

try:
    import numpy as np
except Exception as e:  # noqa: BLE001
    print("no numpy here: %s" % e)
    sys.exit(77)


def direct(x, w):
    rows, cols = x.shape
    kr, kc = w.shape
    vl, hl = kr // 2, kc // 2
    xp = np.zeros((rows + kr - 1, cols + kc - 1))
    xp[vl:vl + rows, hl:hl + cols] = x
    y = np.zeros((rows, cols))
    for i in range(kr):
        for j in range(kc):
            y += w[i, j] * xp[i:i + rows, j:j + cols]
    return y


def run(rows, cols, kr, kc, es, BX, NB, STAGES, segb):
    rng = np.random.default_rng(rows * 1000 + cols + kr * 7 + kc)
    x = rng.standard_normal((rows, cols))
    w = rng.random((kr, kc))
    epc = 16 // es
    assert cols % epc == 0
    VL, HL = kr // 2, kc // 2
    W, TR = 8 * NB, 16 * (BX // 32)
    IC = W + 16
    RING = STAGES * TR + kr - 1
    # T_i (16 x 8): T[i][k][n] = w[i][k - n - 4 + HL] inside the band
    T = np.zeros((kr, 16, 8))
    for i in range(kr):
        for k in range(16):
            for n in range(8):
                j = k - n - 4 + HL
                if 0 <= j < kc:
                    T[i, k, n] = w[i, j]
    y = np.full((rows, cols), np.nan)
    written = np.zeros((rows, cols), dtype=int)
    bands_total = (rows + TR - 1) // TR
    gx, gy = (cols + W - 1) // W, (bands_total + segb - 1) // segb
    # the lanes' rows and column offsets of one ldmatrix (elements)
    if es == 2:
        lane_rows = [(lane & 15, 0) for lane in range(16)]
    else:
        lane_rows = [((lane & 7) + 8 * ((lane >> 3) & 1), 4 * (lane >> 4)) for lane in range(32)]
    for by in range(gy):
        for bx in range(gx):
            C0, S0 = bx * W, by * segb * TR
            nb = min(segb, (rows - S0 + TR - 1) // TR)
            ring = np.full((RING, IC), np.nan)
            tag = np.full(RING, -1)
            pending = []  # groups issued, not yet waited for: (m, [(slot, j, data)])

            def issue(m):
                writes = []
                if m < nb:
                    lo = 0 if m == 0 else m * TR + kr - 1
                    nrows = TR + kr - 1 if m == 0 else TR
                    slot0 = lo % RING
                    for r in range(nrows):
                        slot = slot0 + r
                        if slot >= RING:
                            slot -= RING
                        assert slot < RING
                        gr = S0 - VL + lo + r
                        data = np.zeros(IC)
                        for ch in range(IC // epc):
                            gc = C0 - 8 + ch * epc
                            if 0 <= gr < rows and 0 <= gc < cols:
                                data[ch * epc:(ch + 1) * epc] = x[gr, gc:gc + epc]
                        writes.append((slot, lo + r, data))
                pending.append((m, writes))
                # the copies may land any time before the wait: a slot a group in flight writes
                # must not be one the band being computed reads (checked by tags at the read)
                for slot, j, data in writes:
                    tag[slot] = -2  # in flight: content undefined until waited for

            for m in range(STAGES - 1):
                issue(m)
            sb = 0
            for k in range(nb):
                # wait_group STAGES - 2: all but the newest STAGES - 2 groups complete
                while len(pending) > STAGES - 2:
                    m, writes = pending.pop(0)
                    for slot, j, data in writes:
                        ring[slot] = data
                        tag[slot] = j
                issue(k + STAGES - 1)
                for warp in range(BX // 32):
                    acc = np.zeros((NB + 1, 16, 8))
                    for i in range(kr):
                        A_rows = {}
                        for lrow, lcol in lane_rows:
                            slot = sb + 16 * warp + lrow + i
                            assert 16 * warp + lrow + i < RING
                            if slot >= RING:
                                slot -= RING
                            want = k * TR + 16 * warp + lrow + i
                            if tag[slot] != want:
                                raise AssertionError("band %d warp %d row %d: slot %d holds %d, not %d"
                                                     % (k, warp, lrow + i, slot, tag[slot], want))
                            A_rows.setdefault(lrow, slot)
                            assert A_rows[lrow] == slot
                        for b in range(NB + 1):
                            A = np.array([ring[A_rows[r], 8 * b:8 * b + 16] for r in range(16)])
                            acc[b] += A @ T[i]
                    rw = S0 + k * TR + 16 * warp
                    for h in range(2):
                        stage = np.full((8, W + 8), np.nan)
                        for b in range(NB + 1):
                            for t in range(4):
                                c = 8 * b - 4 + 2 * t
                                if 0 <= c < W:
                                    for g in range(8):
                                        stage[g, c:c + 2] = acc[b, g + 8 * h, 2 * t:2 * t + 2]
                        for idx in range(8 * (W // epc)):
                            r, ch = divmod(idx, W // epc)
                            gr, gc = rw + 8 * h + r, C0 + ch * epc
                            if gr < rows and gc < cols:
                                y[gr, gc:gc + epc] = stage[r, ch * epc:(ch + 1) * epc]
                                written[gr, gc:gc + epc] += 1
                sb += TR
                if sb >= RING:
                    sb -= RING
    if (written != 1).any():
        raise AssertionError("outputs written %d to %d times" % (written.min(), written.max()))
    ref = direct(x, w)
    err = np.abs(y - ref).max()
    if not err < 1e-9:
        raise AssertionError("max error %g" % err)


def main():
    n = 0
    for line in sys.stdin:
        f = line.split()
        if not f or f[0] != "geometry":
            continue
        g = [int(v) for v in f[1:]]
        try:
            run(*g)
        except AssertionError as e:
            print("FAIL geometry %s: %s" % (" ".join(f[1:]), e))
            sys.exit(1)
        n += 1
    print("ok: %d geometries" % n)
    sys.exit(0 if n > 0 else 1)


if __name__ == "__main__":
    main()
