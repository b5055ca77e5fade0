// interleave.cu: out[2i] = A[i], out[2i + 1] = B[i] for i < n, the `cuda` implementation on the
// point-wise schedule (tb_pointwise_ops's: block-contiguous chunks of BLOCK * UNROLL vectors, all
// UNROLL loads of a thread issued before its first store, leftovers spread over all threads).
//
// Every global store a warp issues covers 512 contiguous bytes of out. A thread's vector (v) is
// IB bytes of A and IB of B, which make 2 IB bytes of out; a warp's 32 consecutive vectors make a
// contiguous 64 IB bytes.
//   HALF = 0: IB = 16 (LDG.E.128 of each input). A thread's 32 out bytes are two 16-byte units;
//     stored as they are (two STG.E.128 at a 32-byte stride), each store instruction would
//     write half of 32 sectors (H200, session 10: 24-30 % slower than our Triton kernel, whose
//     layout conversion through shared memory writes whole lines). So the warp exchanges units
//     by shuffle first: store k (0, 1) of lane t writes unit 32 k + t, so every STG.E.128 fills 16
//     whole sectors (3 SHFL a 4-byte word: one swap of halves between lanes t and t ^ 16, then
//     one read each for the two stores; no shared memory, no barrier).
//   HALF = 1: IB = 8 (LDG.E.64 of each input, still whole sectors: 256 bytes a warp), and a
//     thread's 16 out bytes are unit t itself (one STG.E.128, no exchange).
// The interleave works on 32-bit words: 4-byte elements are renamed registers, 2-byte ones one
// PRMT per out word (a half of A's word and a half of B's), bytes one PRMT per out word too (two
// bytes of each). The chunk loop runs whole warps (a block's threads take the same chunks; BLOCK
// is a multiple of 32), so its stores may exchange; the leftover vectors (fewer than a chunk)
// are stored by each thread alone. Vectors need A, B and out 16-byte aligned; the n % VE last
// elements, or all of them otherwise, go one by one.
// Defines: DTYPE, BLOCK, UNROLL, HALF. Kernel: interleave_cuda.
#include "tb_pointwise.cuh"

#ifndef HALF
#define HALF 0
#endif

constexpr int IB = HALF ? 8 : 16;                     // bytes of each input a vector
constexpr int VE = IB / (int)sizeof(DTYPE);           // element pairs a vector
constexpr int OW = IB / 2;                            // out words (4 bytes) a vector
template <bool H> struct in_of { using t = uint4; };
template <> struct in_of<true> { using t = uint2; };
using in_t = in_of<HALF != 0>::t;      // one input's part of a vector

TB_DEVICE uint32_t word(const uint4 &w, int p) { return p == 0 ? w.x : p == 1 ? w.y : p == 2 ? w.z : w.w; }
TB_DEVICE uint32_t word(const uint2 &w, int p) { return p == 0 ? w.x : w.y; }

// Out word p (0 .. OW - 1) of the vector's 2 IB bytes, from the A and B words.
TB_DEVICE uint32_t out_word(const in_t &a, const in_t &b, int p) {
  if constexpr (sizeof(DTYPE) == 4) return word((p & 1) ? b : a, p >> 1);          // a_k, b_k, ...
  else if constexpr (sizeof(DTYPE) == 2)                                           // (a_k, b_k)
    return __byte_perm(word(a, p >> 1), word(b, p >> 1), (p & 1) ? 0x7632 : 0x5410);
  else                                                                             // (a_k, b_k, a_k+1, b_k+1)
    return __byte_perm(word(a, p >> 1), word(b, p >> 1), (p & 1) ? 0x7362 : 0x5140);
}

// 16 bytes of out at element offset e (16-byte aligned) by one STG.E.128.
TB_DEVICE void stg16(DTYPE *out, long long e, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(out + e), "r"(w0), "r"(w1), "r"(w2), "r"(w3)
               : "memory");
}

struct regs { in_t a, b; };

TB_DEVICE void load(regs &r, const DTYPE *a, const DTYPE *b, long long v) {
  r.a = __ldg(reinterpret_cast<const in_t *>(a + v * VE));
  r.b = __ldg(reinterpret_cast<const in_t *>(b + v * VE));
}

// Vector v stored by this thread alone (HALF = 0: two STG.E.128 at a 32-byte stride).
TB_DEVICE void store_own(const regs &r, DTYPE *out, long long v) {
  uint32_t o[OW];
#pragma unroll
  for (int p = 0; p < OW; ++p) o[p] = out_word(r.a, r.b, p);
#pragma unroll
  for (int k = 0; k < OW / 4; ++k) stg16(out, 2 * v * VE + k * (16 / (int)sizeof(DTYPE)), o[4 * k], o[4 * k + 1], o[4 * k + 2], o[4 * k + 3]);
}

// Vector v (lane's; the warp's 32 lanes hold consecutive vectors) stored with the warp's stores
// coalesced. HALF = 1: store_own already is. HALF = 0: 16-byte unit u of the warp's 64 is half
// u & 1 of lane u >> 1's 32 bytes. Lanes t < 16 and t + 16 first swap halves (t keeps its half 0
// and takes half 0 of t + 16; t + 16 keeps its half 1 and takes half 1 of t): then unit t (store
// 0) and unit 32 + t (store 1) both sit in lane (t >> 1) + 16 (t & 1), in register P and Q.
TB_DEVICE void store_warp(const regs &r, DTYPE *out, long long v) {
  if constexpr (HALF) {
    store_own(r, out, v);
  } else {
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const bool lo = lane < 16;
    const int src = (lane >> 1) + ((lane & 1) << 4);
    uint32_t s0[4], s1[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t h0 = out_word(r.a, r.b, q), h1 = out_word(r.a, r.b, 4 + q);
      const uint32_t got = __shfl_xor_sync(FULL, lo ? h1 : h0, 16);
      const uint32_t P = lo ? h0 : got, Q = lo ? got : h1;
      s0[q] = __shfl_sync(FULL, P, src);
      s1[q] = __shfl_sync(FULL, Q, src);
    }
    constexpr int U = 16 / (int)sizeof(DTYPE);          // elements a 16-byte unit
    const long long base = 2 * (v - lane) * VE;         // the warp's first out element
    stg16(out, base + (long long)lane * U, s0[0], s0[1], s0[2], s0[3]);
    stg16(out, base + (long long)(32 + lane) * U, s1[0], s1[1], s1[2], s1[3]);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
interleave_cuda(const DTYPE *a, const DTYPE *b, DTYPE *out, long long n) {
  static_assert(BLOCK % 32 == 0, "the chunk loop's exchange needs whole warps");
  constexpr long long CHUNK = (long long)BLOCK * UNROLL;
  const bool vec_ok = tb_aligned16(a) && tb_aligned16(b) && tb_aligned16(out);
  const long long nvec = vec_ok ? n / VE : 0;
  const long long nchunks = nvec / CHUNK;
  for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) { // the same trip count for a whole block
    const long long first = c * CHUNK + threadIdx.x;
    regs r[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) load(r[u], a, b, first + (long long)u * BLOCK);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) store_warp(r[u], out, first + (long long)u * BLOCK);
  }
  const long long tid = (long long)blockIdx.x * BLOCK + threadIdx.x;
  const long long nthreads = (long long)gridDim.x * BLOCK;
  for (long long v = nchunks * CHUNK + tid; v < nvec; v += nthreads) {
    regs r;
    load(r, a, b, v);
    store_own(r, out, v);
  }
  for (long long i = nvec * VE + tid; i < n; i += nthreads) {
    out[2 * i] = a[i];
    out[2 * i + 1] = b[i];
  }
}
