"""The matmul family's Triton kernel (matmul_fp32_fp16_fp8, batched_matmul): C[b] = A[b] @ B[b],
row-major A (M, K), B (K, N), C (M, N), program_id(1) the batch. Tiles of BM x BN with BK-deep
steps through tl.dot (wgmma on sm_90: TF32 for fp32, fp16, fp8 e4m3 with fp32 accumulation),
num_stages pipelined loads, GROUP_M-grouped tile order for L2 reuse (triton's matmul tutorial).
Edge rows and columns are read wrapped (% M, % N: in bounds, never stored) and masked at the
store; K is masked only where BK does not divide it (EVEN_K). OUT_VIA_BF16 rounds the fp32
accumulator to bf16 before the output type (the fp8 operator's e4m3 output, as the reference).
B_KMAJOR: b is B^T, (N, K) row-major (gemm.lua's plan transposes B first for fp32 and fp8, as the
cuda implementation does): wgmma reads TF32 and e4m3 B tiles only K-major, and with B (K, N)
triton 3.6 moves them through registers into shared memory (fp8: one byte per st.shared; fp32:
4-byte cp.async), where K-major tiles go by 16-byte cp.async (PTX compared, docs/MATMUL.md).
Config: BM, BN, BK, GROUP_M, num_warps, num_stages (gemm.lua's triton implementation)."""
import triton
import triton.language as tl


@triton.jit
def gemm_kernel(a, b, c, M, N, K, stride_a, stride_b, stride_c,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                EVEN_K: tl.constexpr, OUT_VIA_BF16: tl.constexpr, B_KMAJOR: tl.constexpr = False):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
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
    a_ptrs = a + batch * stride_a + offs_am[:, None] * K + offs_k[None, :]
    if B_KMAJOR:
        b_ptrs = b + batch * stride_b + offs_bn[None, :] * K + offs_k[:, None]
    else:
        b_ptrs = b + batch * stride_b + offs_k[:, None] * N + offs_bn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        if EVEN_K:
            av = tl.load(a_ptrs)
            bv = tl.load(b_ptrs)
        else:
            kmask = offs_k < K - k * BK
            av = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)
            bv = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)
        acc = tl.dot(av, bv, acc)
        a_ptrs += BK
        if B_KMAJOR:
            b_ptrs += BK
        else:
            b_ptrs += BK * N
    if OUT_VIA_BF16:
        out = acc.to(tl.bfloat16).to(c.dtype.element_ty)
    else:
        out = acc.to(c.dtype.element_ty)
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c + batch * stride_c + offs_cm[:, None] * N + offs_cn[None, :]
    tl.store(c_ptrs, out, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
