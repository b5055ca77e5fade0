/* tensor.cu: tb.tensor's device code: the seeded generator behind rand / randn / randint, and a
 * pattern fill behind full / fill and tb.verify.poison's int64 minimum (tb_fill_pattern, the
 * host's one fill kernel). Dtypes from tb_host.cuh.
 *
 * Generator: Philox4x32-10 (Salmon et al., SC'11; Random123's constants and round order, checked
 * against its known-answer vectors in tests/gpu/tensor.lua). key = the 64-bit seed, counter =
 * (group index lo, group index hi, stream, 0). Element i takes word i%4 of group i/4, so element i
 * depends only on (seed, i): the first k values of any tensor equal a k-element tensor's.
 *   rand:    u = word * 2^-32; v = float(lo + (hi-lo)*u) (double math, one rounding to fp32);
 *            then rounded to the dtype, and stepped one ulp back inside [lo, hi) if rounding
 *            landed on hi (or below lo).
 *   randn:   Box-Muller on words (0,1) and (2,3) of a group, in fp32: z = sqrt(-2 ln u1) *
 *            (cos, sin)(2 pi u2), u1 in (0, 1]; v = mean + std*z; rounded to the dtype (RNE).
 *   randint: r = lo + floor(word * range / 2^32) when range <= 2^32 (exact, always < range);
 *            wider ranges take 64 bits from stream 1: r = lo + mulhi64(word64, range).
 * Every float dtype rounds its fp32 value with the device's own conversion (RNE; fp8 e4m3
 * saturating like __nv_fp8_e4m3), so an fp16 tensor equals the fp32 one of the same seed,
 * converted. Stores are 16-byte vectors over a grid-stride loop; a tail is stored per element.
 *
 * Kernels: tb_rand_<f>, tb_randn_<f> for f in fp32 fp16 bf16 fp8_e4m3;
 *          tb_randint_<d> for every dtype; tb_fill_pattern. */
#include "tb_host.cuh" // u64, i64, u32 and the dtype traits dt_*

__device__ __forceinline__ uint4 philox4x32_10(u64 counter, u32 stream, u64 seed) {
  u32 c0 = (u32)counter, c1 = (u32)(counter >> 32), c2 = stream, c3 = 0u;
  u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; round++) {
    const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return make_uint4(c0, c1, c2, c3);
}

/* ---- generators: value(i) for one element, chunk(first, out) for 4 aligned elements --------- */
template <typename D> struct gen_rand {
  u64 seed;
  double lo, scale, hi;
  __device__ __forceinline__ typename D::bits make(u32 word) const {
    const float v = __double2float_rn(fma((double)word * 0x1p-32, scale, lo));
    typename D::bits b = D::from_float(v);
    const double r = D::value(b);
    if (r >= hi) b = D::down(b);       /* rounding reached hi: the value just below it */
    else if (r < lo) b = D::up(b);     /* a lo that is not representable rounded under it */
    return b;
  }
  __device__ __forceinline__ typename D::bits one(u64 i) const {
    const uint4 w = philox4x32_10(i >> 2, 0u, seed);
    const u32 k = (u32)(i & 3);
    return make(k == 0 ? w.x : k == 1 ? w.y : k == 2 ? w.z : w.w);
  }
  __device__ __forceinline__ void four(u64 first, typename D::bits *out) const {
    const uint4 w = philox4x32_10(first >> 2, 0u, seed);
    out[0] = make(w.x);
    out[1] = make(w.y);
    out[2] = make(w.z);
    out[3] = make(w.w);
  }
};

template <typename D> struct gen_randn {
  u64 seed;
  float mean, stdev;
  /* Box-Muller: u1 in (0, 1] so the log is finite (|z| <= 6.8), u2 in [0, 1]. */
  __device__ __forceinline__ void pair(u32 a, u32 b, float *z0, float *z1) const {
    const float u1 = fmaf(__uint2float_rn(a), 0x1p-32f, 0x1p-33f);
    const float u2 = __uint2float_rn(b) * 0x1p-32f;
    const float radius = sqrtf(fmaxf(-2.0f * logf(u1), 0.0f));
    float s, c;
    sincospif(2.0f * u2, &s, &c);
    *z0 = fmaf(radius * c, stdev, mean);
    *z1 = fmaf(radius * s, stdev, mean);
  }
  __device__ __forceinline__ typename D::bits one(u64 i) const {
    const uint4 w = philox4x32_10(i >> 2, 0u, seed);
    float z0, z1;
    if ((i & 2) == 0) pair(w.x, w.y, &z0, &z1);
    else pair(w.z, w.w, &z0, &z1);
    return D::from_float((i & 1) ? z1 : z0);
  }
  __device__ __forceinline__ void four(u64 first, typename D::bits *out) const {
    const uint4 w = philox4x32_10(first >> 2, 0u, seed);
    float z0, z1, z2, z3;
    pair(w.x, w.y, &z0, &z1);
    pair(w.z, w.w, &z2, &z3);
    out[0] = D::from_float(z0);
    out[1] = D::from_float(z1);
    out[2] = D::from_float(z2);
    out[3] = D::from_float(z3);
  }
};

template <typename D> struct gen_randint {
  u64 seed;
  i64 lo;
  u64 range; /* hi - lo, >= 1 */
  __device__ __forceinline__ typename D::bits narrow(u32 word) const {
    return D::from_int((i64)((u64)lo + (((u64)word * range) >> 32)));
  }
  __device__ __forceinline__ typename D::bits wide(u64 i) const {
    const uint4 w = philox4x32_10(i >> 1, 1u, seed);
    const u64 word = (i & 1) ? (((u64)w.w << 32) | w.z) : (((u64)w.y << 32) | w.x);
    return D::from_int((i64)((u64)lo + __umul64hi(word, range)));
  }
  __device__ __forceinline__ typename D::bits one(u64 i) const {
    if (range > 0x100000000ULL) return wide(i);
    const uint4 w = philox4x32_10(i >> 2, 0u, seed);
    const u32 k = (u32)(i & 3);
    return narrow(k == 0 ? w.x : k == 1 ? w.y : k == 2 ? w.z : w.w);
  }
  __device__ __forceinline__ void four(u64 first, typename D::bits *out) const {
    if (range > 0x100000000ULL) {
      for (int k = 0; k < 4; k++) out[k] = wide(first + k);
      return;
    }
    const uint4 w = philox4x32_10(first >> 2, 0u, seed);
    out[0] = narrow(w.x);
    out[1] = narrow(w.y);
    out[2] = narrow(w.z);
    out[3] = narrow(w.w);
  }
};

/* A chunk is 16 bytes of output, or 4 elements if that is more (int64: 32 bytes), so that whole
 * Philox groups and whole vector stores fall inside it. */
template <typename D, typename G>
__device__ __forceinline__ void generate(typename D::bits *out, u64 n, const G &g) {
  typedef typename D::bits B;
  constexpr int per16 = 16 / (int)sizeof(B);
  constexpr int chunk = per16 > 4 ? per16 : 4;
  constexpr int vectors = chunk * (int)sizeof(B) / 16;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 done = 0;
  if (((unsigned long long)out & 15u) == 0) {
    const u64 chunks = n / chunk;
    for (u64 c = tid; c < chunks; c += stride) {
      union { B v[chunk]; uint4 q[vectors]; } buf;
#pragma unroll
      for (int k = 0; k < chunk; k += 4) g.four(c * chunk + k, &buf.v[k]);
      uint4 *dst = reinterpret_cast<uint4 *>(out + c * chunk);
#pragma unroll
      for (int k = 0; k < vectors; k++) dst[k] = buf.q[k];
    }
    done = chunks * chunk;
  }
  for (u64 i = done + tid; i < n; i += stride) out[i] = g.one(i);
}

#define TB_FLOAT_GENERATORS(name, D)                                                          \
  extern "C" __global__ void tb_rand_##name(D::bits *out, u64 n, u64 seed, double lo,         \
                                            double scale, double hi) {                        \
    gen_rand<D> g = {seed, lo, scale, hi};                                                    \
    generate<D>(out, n, g);                                                                   \
  }                                                                                           \
  extern "C" __global__ void tb_randn_##name(D::bits *out, u64 n, u64 seed, float mean,       \
                                             float stdev) {                                   \
    gen_randn<D> g = {seed, mean, stdev};                                                     \
    generate<D>(out, n, g);                                                                   \
  }
#define TB_RANDINT(name, D)                                                                   \
  extern "C" __global__ void tb_randint_##name(D::bits *out, u64 n, u64 seed, i64 lo,         \
                                               u64 range) {                                   \
    gen_randint<D> g = {seed, lo, range};                                                     \
    generate<D>(out, n, g);                                                                   \
  }

TB_FLOAT_GENERATORS(fp32, dt_fp32)
TB_FLOAT_GENERATORS(fp16, dt_fp16)
TB_FLOAT_GENERATORS(bf16, dt_bf16)
TB_FLOAT_GENERATORS(fp8_e4m3, dt_fp8_e4m3)
TB_RANDINT(fp32, dt_fp32)
TB_RANDINT(fp16, dt_fp16)
TB_RANDINT(bf16, dt_bf16)
TB_RANDINT(fp8_e4m3, dt_fp8_e4m3)
TB_RANDINT(int8, dt_int8)
TB_RANDINT(uint8, dt_uint8)
TB_RANDINT(int32, dt_int32)
TB_RANDINT(int64, dt_int64)

/* Fills nbytes with an element pattern repeated to 8 bytes (every dtype's size divides 8): byte
 * k of the tensor is byte k%8 of the pattern. 16-byte stores when the start is aligned. */
extern "C" __global__ void tb_fill_pattern(unsigned char *out, u64 nbytes, u64 pattern) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 done = 0;
  if (((unsigned long long)out & 15u) == 0) {
    const uint4 q = make_uint4((u32)pattern, (u32)(pattern >> 32), (u32)pattern, (u32)(pattern >> 32));
    const u64 vectors = nbytes / 16;
    uint4 *dst = reinterpret_cast<uint4 *>(out);
    for (u64 v = tid; v < vectors; v += stride) dst[v] = q;
    done = vectors * 16;
  }
  for (u64 k = done + tid; k < nbytes; k += stride) out[k] = (unsigned char)(pattern >> (8 * (k & 7)));
}
