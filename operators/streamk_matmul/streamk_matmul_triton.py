"""streamk_matmul in Triton: C (M, N) = A (M, K) @ B (K, N), row-major, fp32 accumulation (TF32
for fp32 inputs, tl.dot's default, as allow_tf32), under a Stream-K schedule over a persistent
grid of G programs (the plan's choice, gemm.lua's streamk_split):
  - the first SK tiles' K-loops form one run of SK * KT BK-deep steps, program p taking the steps
    [p * SK * KT / G, (p + 1) * SK * KT / G), which may begin and end inside tiles;
  - the remaining tiles go data-parallel, program p taking tiles SK + p, SK + p + G, ...
A tile a program covers whole is stored directly. A shared tile is fixed up without waiting:
each program adds its fp32 partial into the tile's slot of W (atomics), and after a barrier one
thread adds its step count to the tile's counter (acq_rel); the program whose count completes
KT reads the sum back (.cg), stores it in C's dtype and zeroes the slot and counter for the next
run (the plan allocates W and the counters zeroed). Tiles in GROUP_M-grouped order; edge rows and
columns read wrapped (% M, % N) and masked at the store; K masked only where BK does not divide
it (EVEN_K). Config: BM, BN, BK, GROUP_M, SK, num_warps, num_stages."""
import triton
import triton.language as tl


@triton.jit
def _tile_mn(t, M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    in_group = GROUP_M * num_pid_n
    first_m = (t // in_group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    return first_m + ((t % in_group) % group_m), (t % in_group) // group_m


@triton.jit
def _partial(a, b, M, N, K, pid_m, pid_n, kb, ke, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             EVEN_K: tl.constexpr):
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = kb * BK + tl.arange(0, BK)
    a_ptrs = a + offs_am[:, None].to(tl.int64) * K + offs_k[None, :]
    b_ptrs = b + offs_k[:, None].to(tl.int64) * N + offs_bn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(kb, ke):
        if EVEN_K:
            av = tl.load(a_ptrs)
            bv = tl.load(b_ptrs)
        else:
            kmask = kt * BK + tl.arange(0, BK) < K
            av = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)
            bv = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)
        acc = tl.dot(av, bv, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    return acc


@triton.jit
def streamk_kernel(a, b, c, W, counters, M, N, K, sk_tiles, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    G = tl.num_programs(0)
    KT = tl.cdiv(K, BK)
    total = tl.cdiv(M, BM) * tl.cdiv(N, BN)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    # stream-K share: steps [it, end) of sk_tiles * KT
    sk_total = sk_tiles.to(tl.int64) * KT
    it = ((sk_total * pid) // G).to(tl.int32)
    end = ((sk_total * (pid + 1)) // G).to(tl.int32)
    while it < end:
        t = it // KT
        kb = it - t * KT
        ke = min(KT, kb + (end - it))
        pid_m, pid_n = _tile_mn(t, M, N, BM, BN, GROUP_M)
        acc = _partial(a, b, M, N, K, pid_m, pid_n, kb, ke, BM, BN, BK, EVEN_K)
        offs_cm = pid_m * BM + rm
        offs_cn = pid_n * BN + rn
        c_ptrs = c + offs_cm[:, None].to(tl.int64) * N + offs_cn[None, :]
        cmask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        if (kb == 0) & (ke == KT):
            tl.store(c_ptrs, acc.to(c.dtype.element_ty), mask=cmask)
        else:
            w_ptrs = W + t.to(tl.int64) * (BM * BN) + rm[:, None] * BN + rn[None, :]
            tl.atomic_add(w_ptrs, acc, sem="relaxed")
            tl.debug_barrier()  # every thread's partial is in before the count says so
            before = tl.atomic_add(counters + t, ke - kb, sem="acq_rel")
            if before + (ke - kb) == KT:  # the last share: the sum is complete
                tl.debug_barrier()
                total_acc = tl.load(w_ptrs, cache_modifier=".cg")
                tl.store(c_ptrs, total_acc.to(c.dtype.element_ty), mask=cmask)
                tl.store(w_ptrs, tl.zeros((BM, BN), dtype=tl.float32))
                tl.store(counters + t, 0)
        it += ke - kb
    # data-parallel tiles
    for t in range(sk_tiles + pid, total, G):
        pid_m, pid_n = _tile_mn(t, M, N, BM, BN, GROUP_M)
        acc = _partial(a, b, M, N, K, pid_m, pid_n, 0, KT, BM, BN, BK, EVEN_K)
        offs_cm = pid_m * BM + rm
        offs_cn = pid_n * BN + rn
        c_ptrs = c + offs_cm[:, None].to(tl.int64) * N + offs_cn[None, :]
        tl.store(c_ptrs, acc.to(c.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
