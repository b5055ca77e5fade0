// matrix_transpose.cu: out[j, i] = x[i, j] for x (m, n), out (n, m) (OPERATORS.md 39's
// x.T.contiguous()), the `cuda` implementation: a block per tile of TM = TILE_R * VE rows by
// TN = TILE_C * VE columns of x (VE = the elements of 16 bytes), through shared memory, 16-byte
// accesses on both sides of global memory.
//
//   1. load: the tile's rows as 16-byte chunks, consecutive threads along a row (a warp reads
//      TILE_C * 16 >= 128 contiguous bytes of each of its rows: whole sectors), every chunk of
//      a thread issued before the first is stored (LDG.E.128 x TM * TILE_C / BLOCK in flight),
//      then stored to shared memory as 16-byte words (STS.128);
//   2. store: a thread takes a VE x VE micro-tile (VE rows of x, one 16-byte chunk of each):
//      VE LDS.128, a transpose in registers, VE 16-byte vectors of out (STG.E.128). Consecutive
//      threads take consecutive micro-tiles down the tile's rows, so a warp writes TILE_R * 16
//      >= 128 contiguous bytes of each out row it touches.
//
// Bank conflicts: a 16-byte access is served a quarter-warp (8 threads) at a time, and 8 chunks
// are conflict-free when their 16-byte positions differ mod 8 (a row of the tile is TILE_C * 16
// bytes, a multiple of 128). Chunk ch of row r is stored at position ch ^ ((r / VE) & 7) (an XOR
// swizzle, no padding): in step 1 eight threads write eight consecutive chunks of one row (their
// positions a permutation of an aligned 8); in step 2 eight threads read the same chunk j of
// micro-rows i .. i + 7, at positions j ^ (i & 7): eight distinct values mod 8.
//
// The transpose in registers works on 32-bit words: for 4-byte elements it only renames
// registers, for 2-byte ones each out word is one PRMT of two words (8 x 8: 32 PRMT a micro-tile),
// for bytes three PRMT (16 x 16: 192 a micro-tile, 256 bytes); the stores are st.global.v4
// (tb_stg_vec: NVVM splits a vector assembled from parts into narrower stores otherwise).
//
// Edges and alignment: with x 16-byte aligned and n a multiple of VE (the grid's every case), a
// chunk lies wholly inside or wholly outside the matrix: the ones outside are zeros on load and
// skipped on store. Otherwise step 1 goes element by element (a loop, not unrolled: it only has to
// be right), straight into the tile; likewise step 2 unless out is aligned and m a multiple of VE.
// So any m, n is handled, and the vector paths carry no per-element code.
// Defines: DTYPE, BLOCK, TILE_R, TILE_C (micro-tiles per tile side: 8 or 16, powers of two).
// Kernel: matrix_transpose_cuda; grid (cdiv(n, TN), cdiv(m, TM)).
#include "tb_pointwise.cuh"

constexpr int tb_VE = tb_vec<DTYPE>::N;
constexpr int tb_TM = TILE_R * tb_VE;                     // rows of x in a tile
constexpr int tb_TN = TILE_C * tb_VE;                     // columns of x in a tile
constexpr int tb_LOADS = tb_TM * TILE_C / BLOCK;          // 16-byte chunks a thread loads
constexpr int tb_MICRO = TILE_R * TILE_C / BLOCK;         // micro-tiles a thread stores
static_assert(TILE_C % 8 == 0 && (TILE_C & (TILE_C - 1)) == 0, "TILE_C: 8, 16, ... (the swizzle spans 8 chunks)");
static_assert(TILE_R % 8 == 0 && (TILE_R & (TILE_R - 1)) == 0, "TILE_R: 8, 16, ... (a quarter-warp spans 8 micro-rows)");
static_assert(tb_MICRO >= 1 && tb_MICRO * BLOCK == TILE_R * TILE_C, "BLOCK must divide TILE_R * TILE_C");

// Word q of column k of a micro-tile held as VE rows of 4 words: out row k's elements 4q/size ..
TB_DEVICE uint32_t tb_col_word(const uint4 (&a)[tb_VE], int k, int q) {
  auto word = [&](int l, int p) -> uint32_t {
    const uint4 &r = a[l];
    return p == 0 ? r.x : p == 1 ? r.y : p == 2 ? r.z : r.w;
  };
  if constexpr (sizeof(DTYPE) == 4) {
    return word(q, k);
  } else if constexpr (sizeof(DTYPE) == 2) {
    return __byte_perm(word(2 * q, k >> 1), word(2 * q + 1, k >> 1), (k & 1) ? 0x7632 : 0x5410);
  } else {
    const int b = k & 3, s = ((4 + b) << 4) | b; // bytes b of both words into bytes 0, 1
    const uint32_t lo = __byte_perm(word(4 * q, k >> 2), word(4 * q + 1, k >> 2), s);
    const uint32_t hi = __byte_perm(word(4 * q + 2, k >> 2), word(4 * q + 3, k >> 2), s);
    return __byte_perm(lo, hi, 0x5410);
  }
}

// One element of the tile (row r, column c of x's tile), at its swizzled place.
TB_DEVICE DTYPE &tb_tile_elem(uint4 (&tile)[tb_TM][TILE_C], int r, int c) {
  return reinterpret_cast<DTYPE *>(&tile[r][(c / tb_VE) ^ ((r / tb_VE) & 7)])[c % tb_VE];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
matrix_transpose_cuda(const DTYPE *__restrict__ x, DTYPE *__restrict__ out, long long m, long long n) {
  __shared__ uint4 tile[tb_TM][TILE_C];
  const long long r0 = (long long)blockIdx.y * tb_TM, c0 = (long long)blockIdx.x * tb_TN;
  const bool vx = tb_aligned16(x) && n % tb_VE == 0, vo = tb_aligned16(out) && m % tb_VE == 0;

  if (vx) {
    uint4 v[tb_LOADS];
#pragma unroll
    for (int l = 0; l < tb_LOADS; ++l) {
      const int q = l * BLOCK + threadIdx.x, row = q / TILE_C, ch = q % TILE_C;
      const long long col = c0 + ch * tb_VE;
      v[l] = r0 + row < m && col < n ? __ldg(reinterpret_cast<const uint4 *>(x + (r0 + row) * n + col))
                                     : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int l = 0; l < tb_LOADS; ++l) {
      const int q = l * BLOCK + threadIdx.x, row = q / TILE_C, ch = q % TILE_C;
      tile[row][ch ^ ((row / tb_VE) & 7)] = v[l];
    }
  } else {
#pragma unroll 1
    for (int q = threadIdx.x; q < tb_TM * tb_TN; q += BLOCK) {
      const int row = q / tb_TN, col = q % tb_TN;
      const bool in = r0 + row < m && c0 + col < n;
      tb_tile_elem(tile, row, col) = in ? x[(r0 + row) * n + c0 + col] : tb_from_float<DTYPE>(0.0f);
    }
  }
  __syncthreads();

  if (vo) {
#pragma unroll
    for (int u = 0; u < tb_MICRO; ++u) {
      const int mt = u * BLOCK + threadIdx.x, i = mt % TILE_R, j = mt / TILE_R;
      if (r0 + i * tb_VE >= m) continue;
      uint4 a[tb_VE];
#pragma unroll
      for (int l = 0; l < tb_VE; ++l) a[l] = tile[i * tb_VE + l][j ^ (i & 7)];
#pragma unroll
      for (int k = 0; k < tb_VE; ++k) {
        const long long oc = c0 + j * tb_VE + k;
        if (oc >= n) break;
        tb_vec<DTYPE> o;
        const uint4 w = make_uint4(tb_col_word(a, k, 0), tb_col_word(a, k, 1), tb_col_word(a, k, 2), tb_col_word(a, k, 3));
        memcpy(&o, &w, sizeof w);
        tb_stg_vec(out + oc * m + r0 + i * tb_VE, o);
      }
    }
  } else {
#pragma unroll 1
    for (int q = threadIdx.x; q < tb_TM * tb_TN; q += BLOCK) {
      const int k = q / tb_TM, r = q % tb_TM; // out row c0 + k, column r0 + r
      if (c0 + k < n && r0 + r < m) out[(c0 + k) * m + r0 + r] = tb_tile_elem(tile, r, k);
    }
  }
}
