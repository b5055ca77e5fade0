"""matmul_int8 in Triton: C (M, N) int32 = A (M, K) int8 @ Bu (K, N), Bu[i * K4 + k, n] =
((B[k, n] >> 2i) & 3) - 1 unpacked on the fly from B (K4, N) uint8 (K4 = K / 4, OPERATORS.md 28).
Tiles of BM x BN, BK-deep steps: the BK rows of Bu come from rows (k % K4) of B shifted by
2 * (k // K4), decoded in registers to int8 and fed with A's tile to tl.dot (int8 wgmma, int32
accumulation); GROUP_M-grouped tile order for L2 reuse. Edge rows/columns are read wrapped
(% M, % N: in bounds, never stored) and masked at the store; K is masked only where BK does not
divide it (EVEN_K). Config: BM, BN, BK, GROUP_M, num_warps, num_stages."""
import triton
import triton.language as tl


@triton.jit
def matmul_int8_kernel(a, b, c, M, N, K, K4, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                       GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % group_m)
    pid_n = (pid % in_group) // group_m
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a + offs_am[:, None].to(tl.int64) * K + offs_k[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for kt in range(0, tl.cdiv(K, BK)):
        kk = kt * BK + offs_k  # rows of Bu
        sl = kk // K4
        row = kk - sl * K4
        if EVEN_K:
            av = tl.load(a_ptrs)
            bp = tl.load(b + row[:, None].to(tl.int64) * N + offs_bn[None, :])
        else:
            kmask = kk < K
            av = tl.load(a_ptrs, mask=kmask[None, :], other=0)
            bp = tl.load(b + row[:, None].to(tl.int64) * N + offs_bn[None, :], mask=kmask[:, None], other=0)
        # past K: packed 0 decodes to -1, but A's masked zeros cancel it
        bv = (((bp.to(tl.int32) >> (2 * sl)[:, None]) & 3) - 1).to(tl.int8)
        acc = tl.dot(av, bv, acc, out_dtype=tl.int32)
        a_ptrs += BK
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c + offs_cm[:, None].to(tl.int64) * N + offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
