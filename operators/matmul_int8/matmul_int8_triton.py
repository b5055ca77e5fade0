"""matmul_int8 in Triton: C (M, N) int32 = A (M, K) int8 @ Bu (K, N), Bu[i * K4 + k, n] =
((B[k, n] >> 2i) & 3) - 1 unpacked from B (K4, N) uint8 (K4 = K / 4, OPERATORS.md 28). Two kernels,
as the cuda implementation does:
- matmul_int8_unpack_kernel: B decoded once into Bt (N, K) int8, K-major (Bt[n, k] = Bu[k, n]); a
  program reads BR packed rows x BN columns and writes the four fields' (BN, BR) tiles, transposed
  through shared memory by triton's layout conversion (BR bytes contiguous per row of Bt);
- matmul_int8_kernel: C = A @ Bt^T, BM x BN tiles, BK-deep int8 tl.dot steps (wgmma
  m64nNk32 s8.s8 with int32 accumulation; both operands K-major in shared memory, 16-byte cp.async,
  num_stages pipelined), GROUP_M-grouped tile order for L2 reuse. Edge rows/columns are read
  wrapped (% M, % N: in bounds, never stored) and masked at the store; K is masked only where BK
  does not divide it (EVEN_K).
Until session 9 the product decoded B inside its main loop: int8 wgmma reads B only K-major, and
B's bytes are N-contiguous, so every k-step transposed the decoded tile into shared memory one
byte per st.shared (128 STS.U8 a thread a step, 960 instructions a step against 8 IGMMA: rho
0.066). Config: BM, BN, BK, GROUP_M, num_warps, num_stages (the product; the unpack's tile is
fixed)."""
import triton
import triton.language as tl


@triton.jit
def matmul_int8_unpack_kernel(b, bt, N, K, K4, BR: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (r < K4)[:, None] & (n < N)[None, :]
    bp = tl.load(b + r[:, None].to(tl.int64) * N + n[None, :], mask=m, other=0)
    mt = (n < N)[:, None] & (r < K4)[None, :]
    row = n[:, None].to(tl.int64) * K
    for i in tl.static_range(4):
        v = ((bp >> (2 * i)) & 3).to(tl.int8) - 1
        tl.store(bt + row + (i * K4 + r)[None, :], tl.trans(v), mask=mt)


@triton.jit
def matmul_int8_kernel(a, bt, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
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
    b_ptrs = bt + offs_bn[None, :].to(tl.int64) * K + offs_k[:, None]  # (BK, BN), K-major
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for kt in range(0, tl.cdiv(K, BK)):
        if EVEN_K:
            av = tl.load(a_ptrs)
            bv = tl.load(b_ptrs)
        else:
            kmask = offs_k < K - kt * BK
            av = tl.load(a_ptrs, mask=kmask[None, :], other=0)
            bv = tl.load(b_ptrs, mask=kmask[:, None], other=0)
        acc = tl.dot(av, bv, acc, out_dtype=tl.int32)
        a_ptrs += BK
        b_ptrs += BK
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c + offs_cm[:, None].to(tl.int64) * N + offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
