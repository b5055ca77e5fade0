"""linear_self_attention in Triton: out = phi(Q) S / ((phi(Q) Z)[:, None] + eps), S = phi(K)^T V,
Z = sum over rows of phi(K), phi(x) = x + 1 (x > 0) else exp(x); fp32 data, tl.dot in TF32 (as the
reference's matmuls), phi, Z and the denominators in fp32. Three kernels:
- lsa_kv_kernel: program (bi, bj, z) computes the [BT, BT] block (bi, bj) of phi(K)^T V over rows
  [z * chunk, (z + 1) * chunk), BK rows at a time, and stores it in split z's partial [S | Z]
  (part, nsplit x (D * D + D) floats); bj = 0 programs also store their columns' phi(K) sums
  (Z). Rows past M are masked to 0 (phi(0) would be 1);
- lsa_reduce_kernel: kv = the sum of the nsplit partials, BZ splits x BLOCK entries a step, in
  the same order on every run. Until session 9 the splits added into kv with float atomics after
  a clearing kernel: the order of those adds varies from run to run, and so did the last bits of
  S, Z and out (the GPU test that launches each kernel twice, tests/gpu/triton_launch.lua, found
  7693 of 32768 outputs differing at D = 32, M = 1024);
- lsa_out_kernel: program (bm, bn) computes the [BM, BN] tile of phi(Q) S over D in BK steps and
  the row denominators phi(Q) . Z, then divides.
Config: BT (S block), SPLIT (row splits), BM, BN, num_warps (operator.lua)."""
import triton
import triton.language as tl


@triton.jit
def _phi(x):
    return tl.where(x > 0, x + 1.0, tl.exp(x))


@triton.jit
def lsa_kv_kernel(K, V, part, M, D, chunk, BT: tl.constexpr, BK: tl.constexpr):
    i = tl.program_id(0) * BT + tl.arange(0, BT)
    j = tl.program_id(1) * BT + tl.arange(0, BT)
    mb = tl.program_id(2) * chunk
    acc = tl.zeros([BT, BT], dtype=tl.float32)
    zs = tl.zeros([BT], dtype=tl.float32)
    for start in range(0, chunk, BK):
        m = (mb + start + tl.arange(0, BK)).to(tl.int64)
        mm = (m < M) & (start + tl.arange(0, BK) < chunk)
        k = tl.load(K + m[:, None] * D + i[None, :], mask=mm[:, None], other=0.0)
        pk = tl.where(mm[:, None], _phi(k), 0.0)
        v = tl.load(V + m[:, None] * D + j[None, :], mask=mm[:, None], other=0.0)
        acc = tl.dot(tl.trans(pk), v, acc, input_precision="tf32")
        zs += tl.sum(pk, 0)
    base = part + tl.program_id(2).to(tl.int64) * (D * D + D)
    tl.store(base + i[:, None] * D + j[None, :], acc)
    if tl.program_id(1) == 0:
        tl.store(base + D * D + i, zs)


@triton.jit
def lsa_reduce_kernel(part, kv, n, nsplit, BZ: tl.constexpr, BLOCK: tl.constexpr):
    e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    em = e < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for z0 in range(0, nsplit, BZ):
        z = (z0 + tl.arange(0, BZ)).to(tl.int64)
        acc += tl.sum(tl.load(part + z[:, None] * n + e[None, :], mask=(z < nsplit)[:, None] & em[None, :], other=0.0), 0)
    tl.store(kv + e, acc, mask=em)


@triton.jit
def lsa_out_kernel(Q, kv, out, M, D, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = (tl.program_id(0) * BM + tl.arange(0, BM)).to(tl.int64)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    mm = m < M
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    den = tl.zeros([BM], dtype=tl.float32)
    for k0 in range(0, D, BK):
        kk = k0 + tl.arange(0, BK)
        q = tl.load(Q + m[:, None] * D + kk[None, :], mask=mm[:, None], other=0.0)
        pq = tl.where(mm[:, None], _phi(q), 0.0)
        s = tl.load(kv + kk[:, None] * D + n[None, :])
        z = tl.load(kv + D * D + kk)
        acc = tl.dot(pq, s, acc, input_precision="tf32")
        den += tl.sum(pq * z[None, :], 1)
    tl.store(out + m[:, None] * D + n[None, :], acc / (den[:, None] + eps), mask=mm[:, None])
