// bitonic_sort.cu: bitonic_sort's `cuda` implementation (OPERATORS.md 42): the bitonic network of
// the reference (n keys padded with TB_SORT_PAD to the power of two p, partner i ^ j, ascending
// where (i & k) == 0, swapped only when strictly out of order), run with the steps whose partner
// lies inside a chunk of S = 2^LOG_S keys in shared memory and only the long strides in global:
//   bitonic_sort_chunks  every stage k <= S of a chunk in shared memory (values to keys, padding)
//   bitonic_global3      three steps (j, j / 2, j / 4 >= S) of a stage k in one pass over the
//                        keys: a thread loads the eight keys the three steps connect, exchanges
//                        in registers
//   bitonic_global2      two steps (j, j / 2 >= S) the same way (four keys), where two remain
//   bitonic_global1      one step j >= S, where one remains
//   bitonic_merge        the steps j = S / 2 .. 1 of a stage k > S in shared memory; in the last
//                        stage (k = p) the keys come back as values straight into out (i < n)
// p <= S: one chunk sorts everything and writes out. Keys (tb_sort.cuh's order: NaN last, -0.0
// just before +0.0) are KEY_T wide: 32 bits for fp32, 16 for fp16 (half the traffic); the network
// is the reference's, so the result is torch.sort(x).values exactly.
// Defines: SORT_KIND (2 fp32, 3 fp16), KEY_T (unsigned int / unsigned short), BLOCK, LOG_S.
#include "tb_sort.cuh"

#ifndef KEY_T
#define KEY_T unsigned int
#endif
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef LOG_S
#define LOG_S 12
#endif
#define S (1 << LOG_S)

static __device__ __forceinline__ void cmpx(KEY_T &a, KEY_T &b, bool asc) {
  if (asc ? a > b : a < b) {
    const KEY_T t = a;
    a = b;
    b = t;
  }
}

// Steps j = jstart, jstart / 2, ..., 1 of stage k on the chunk at global index base, in s.
static __device__ __forceinline__ void chunk_steps(KEY_T *s, int64_t base, int64_t k, int jstart) {
  for (int j = jstart; j > 0; j >>= 1) {
    for (int q = threadIdx.x; q < S / 2; q += BLOCK) {
      const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1)), l = i | j;
      KEY_T a = s[i], b = s[l];
      cmpx(a, b, ((base + i) & k) == 0);
      s[i] = a;
      s[l] = b;
    }
    __syncthreads();
  }
}

// A chunk's keys out: values into out (the last stage) or keys back into the scratch.
static __device__ __forceinline__ void chunk_store(const KEY_T *s, KEY_T *__restrict__ keys, tb_sort_t *__restrict__ out,
                                                   int64_t base, int64_t n, bool last) {
  if (last) {
    for (int i = threadIdx.x; i < S; i += BLOCK)
      if (base + i < n) out[base + i] = tb_sort_value((uint32_t)s[i]);
  } else {
    for (int i = threadIdx.x; i < S; i += BLOCK) keys[base + i] = s[i];
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK) bitonic_sort_chunks(const tb_sort_t *__restrict__ x,
                                                                       KEY_T *__restrict__ keys,
                                                                       tb_sort_t *__restrict__ out, int64_t n,
                                                                       int64_t p) {
  extern __shared__ __align__(16) unsigned char s_raw[];
  KEY_T *s = reinterpret_cast<KEY_T *>(s_raw);
  const int64_t base = (int64_t)blockIdx.x * S;
  for (int i = threadIdx.x; i < S; i += BLOCK) {
    const int64_t g = base + i;
    s[i] = g < n ? (KEY_T)tb_sort_key(x[g]) : (KEY_T)TB_SORT_PAD;
  }
  __syncthreads();
  for (int k = 2; k <= S; k <<= 1) chunk_steps(s, base, k, k >> 1);
  chunk_store(s, keys, out, base, n, p <= S);
}

extern "C" __global__ void __launch_bounds__(BLOCK) bitonic_merge(KEY_T *__restrict__ keys, tb_sort_t *__restrict__ out,
                                                                 int64_t n, int64_t k, int last) {
  extern __shared__ __align__(16) unsigned char s_raw[];
  KEY_T *s = reinterpret_cast<KEY_T *>(s_raw);
  const int64_t base = (int64_t)blockIdx.x * S;
  for (int i = threadIdx.x; i < S; i += BLOCK) s[i] = keys[base + i];
  __syncthreads();
  chunk_steps(s, base, k, S / 2);
  chunk_store(s, keys, out, base, n, last != 0);
}

// t with a zero bit inserted at the position of the power of two m
static __device__ __forceinline__ int64_t insert0(int64_t t, int64_t m) { return ((t & ~(m - 1)) << 1) | (t & (m - 1)); }

extern "C" __global__ void __launch_bounds__(256) bitonic_global2(KEY_T *__restrict__ keys, int64_t p, int64_t j,
                                                                 int64_t k) {
  const int64_t h = j >> 1;
  for (int64_t t = blockIdx.x * (int64_t)256 + threadIdx.x; t < p / 4; t += (int64_t)gridDim.x * 256) {
    const int64_t i = insert0(insert0(t, h), j);
    const bool asc = (i & k) == 0;
    KEY_T v0 = keys[i], v1 = keys[i + h], v2 = keys[i + j], v3 = keys[i + j + h];
    cmpx(v0, v2, asc); // step j
    cmpx(v1, v3, asc);
    cmpx(v0, v1, asc); // step j / 2
    cmpx(v2, v3, asc);
    keys[i] = v0;
    keys[i + h] = v1;
    keys[i + j] = v2;
    keys[i + j + h] = v3;
  }
}

// Three steps (j, j / 2, j / 4 >= S) in one pass: the eight keys the three steps connect.
extern "C" __global__ void __launch_bounds__(256) bitonic_global3(KEY_T *__restrict__ keys, int64_t p, int64_t j,
                                                                 int64_t k) {
  const int64_t h = j >> 1, q = j >> 2;
  for (int64_t t = blockIdx.x * (int64_t)256 + threadIdx.x; t < p / 8; t += (int64_t)gridDim.x * 256) {
    const int64_t i = insert0(insert0(insert0(t, q), h), j);
    const bool asc = (i & k) == 0;
    KEY_T v[8]; // v[a] at i + (a & 4 ? j : 0) + (a & 2 ? h : 0) + (a & 1 ? q : 0)
#pragma unroll
    for (int a = 0; a < 8; a++) v[a] = keys[i + ((a & 4) ? j : 0) + ((a & 2) ? h : 0) + ((a & 1) ? q : 0)];
#pragma unroll
    for (int a = 0; a < 4; a++) cmpx(v[a], v[a | 4], asc); // step j
#pragma unroll
    for (int a = 0; a < 8; a++)
      if (!(a & 2)) cmpx(v[a], v[a | 2], asc); // step j / 2
#pragma unroll
    for (int a = 0; a < 8; a += 2) cmpx(v[a], v[a | 1], asc); // step j / 4
#pragma unroll
    for (int a = 0; a < 8; a++) keys[i + ((a & 4) ? j : 0) + ((a & 2) ? h : 0) + ((a & 1) ? q : 0)] = v[a];
  }
}

extern "C" __global__ void __launch_bounds__(256) bitonic_global1(KEY_T *__restrict__ keys, int64_t p, int64_t j,
                                                                 int64_t k) {
  for (int64_t t = blockIdx.x * (int64_t)256 + threadIdx.x; t < p / 2; t += (int64_t)gridDim.x * 256) {
    const int64_t i = insert0(t, j);
    KEY_T a = keys[i], b = keys[i + j];
    cmpx(a, b, (i & k) == 0);
    keys[i] = a;
    keys[i + j] = b;
  }
}
