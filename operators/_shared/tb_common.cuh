// tb_common.cuh: what every operator kernel shares: how dtypes convert and how 16-byte accesses
// are made. Lives in operators/_shared; handed to NVRTC as a header by name (`#include
// "tb_common.cuh"`) to every operator compile that includes it, so kernel sources stay short and
// agree. The families build on it: tb_pointwise.cuh (the point-wise driver), tb_rows.cuh (group
// reductions, row loaders, row streams and the row kernels' prologue).
//
//   dtypes      int8_t.. typedefs under NVRTC; tb_to_float(x) for float, __half, __nv_bfloat16,
//               __nv_fp8_e4m3, int8_t, uint8_t, int32_t; tb_from_float<T>(f) (round to nearest
//               even; integers saturate); tb_round<T>(f) = the float value of tb_from_float<T>(f)
//   vectors     tb_vec<T>: 16 bytes of T (tb_vec<T>::N elements); tb_vec_zero<T>(); tb_load_vec /
//               tb_store_vec (one LDG.128 / STG.128; the address must be 16-byte aligned); tb_load_part /
//               tb_store_part (the N elements from e of a row of length len: one 16-byte access
//               when allowed and whole, element by element otherwise, elements >= len skipped)
//
// Operators pass their configuration as -D defines, so every template parameter and local name
// here carries the tb_ prefix: a define named T or BLOCK must not rewrite this header. (Nor may
// a kernel's element-type define be called T: NVRTC's own builtin header has `template <typename
// T>`, which -DT=float turns into a syntax error. Operators use DTYPE.)
#ifndef TB_COMMON_CUH
#define TB_COMMON_CUH

#if defined(__has_include)
#if !__has_include(<cuda_fp16.h>)
#error "tb_common.cuh needs the CUDA toolkit headers: pass -I<CUDA_HOME>/include to NVRTC"
#endif
#endif
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if defined(__CUDACC_RTC__)
// NVRTC has no <cstdint>; these match the LP64 definitions of the host compilers.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
#else
#include <cstdint>
#endif

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#define TB_DEVICE __device__ __forceinline__

// ---- dtypes ----------------------------------------------------------------------------------
template <typename tb_T> struct tb_is_integer { static constexpr bool value = false; };
template <> struct tb_is_integer<int8_t> { static constexpr bool value = true; };
template <> struct tb_is_integer<uint8_t> { static constexpr bool value = true; };
template <> struct tb_is_integer<int32_t> { static constexpr bool value = true; };
template <> struct tb_is_integer<int64_t> { static constexpr bool value = true; };

TB_DEVICE float tb_to_float(float v) { return v; }
TB_DEVICE float tb_to_float(__half v) { return __half2float(v); }
TB_DEVICE float tb_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
TB_DEVICE float tb_to_float(__nv_fp8_e4m3 v) { return static_cast<float>(v); }
TB_DEVICE float tb_to_float(int8_t v) { return static_cast<float>(v); }
TB_DEVICE float tb_to_float(uint8_t v) { return static_cast<float>(v); }
TB_DEVICE float tb_to_float(int32_t v) { return static_cast<float>(v); }

template <typename tb_T> TB_DEVICE tb_T tb_from_float(float v);
template <> TB_DEVICE float tb_from_float<float>(float v) { return v; }
template <> TB_DEVICE __half tb_from_float<__half>(float v) { return __float2half_rn(v); }
template <> TB_DEVICE __nv_bfloat16 tb_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
// fp8 e4m3: round to nearest even, saturating to +-448 (the constructor's __NV_SATFINITE).
template <> TB_DEVICE __nv_fp8_e4m3 tb_from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }
template <> TB_DEVICE int8_t tb_from_float<int8_t>(float v) {
  return static_cast<int8_t>(max(-128, min(127, __float2int_rn(v))));
}
template <> TB_DEVICE uint8_t tb_from_float<uint8_t>(float v) {
  return static_cast<uint8_t>(max(0, min(255, __float2int_rn(v))));
}
template <> TB_DEVICE int32_t tb_from_float<int32_t>(float v) { return __float2int_rn(v); }

// The value a float takes once stored in the dtype: where PyTorch rounds an intermediate.
template <typename tb_T> TB_DEVICE float tb_round(float v) { return tb_to_float(tb_from_float<tb_T>(v)); }

// ---- 16-byte vectors -------------------------------------------------------------------------
template <typename tb_T> struct alignas(16) tb_vec {
  static constexpr int N = 16 / sizeof(tb_T);
  tb_T v[N];
};

// Whole-struct accesses of an alignas(16) type compile to one LDG.E.128 / STG.E.128.
template <typename tb_T> TB_DEVICE tb_vec<tb_T> tb_load_vec(const tb_T *p) {
  return *reinterpret_cast<const tb_vec<tb_T> *>(p);
}

template <typename tb_T> TB_DEVICE void tb_store_vec(tb_T *p, const tb_vec<tb_T> &r) {
  *reinterpret_cast<tb_vec<tb_T> *>(p) = r;
}

template <typename tb_T> TB_DEVICE tb_vec<tb_T> tb_vec_zero() {
  tb_vec<tb_T> r;
#pragma unroll
  for (int k = 0; k < tb_vec<tb_T>::N; ++k) r.v[k] = tb_from_float<tb_T>(0.0f);
  return r;
}

TB_DEVICE bool tb_aligned16(const void *p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

// The N elements p[e .. e+N) of a row of length len, raw (N = tb_vec<T>::N). vec_ok: p + e is
// 16-byte aligned whenever e is a multiple of N. Elements at or past len are zero and not read.
template <typename tb_T>
TB_DEVICE tb_vec<tb_T> tb_load_part(const tb_T *p, long long e, long long len, bool vec_ok) {
  constexpr int tb_V = tb_vec<tb_T>::N;
  if (vec_ok && e + tb_V <= len) return tb_load_vec(p + e);
  tb_vec<tb_T> r;
#pragma unroll
  for (int k = 0; k < tb_V; ++k) r.v[k] = (e + k < len) ? p[e + k] : tb_from_float<tb_T>(0.0f);
  return r;
}

template <typename tb_T>
TB_DEVICE void tb_store_part(tb_T *p, long long e, long long len, bool vec_ok, const tb_vec<tb_T> &r) {
  constexpr int tb_V = tb_vec<tb_T>::N;
  if (vec_ok && e + tb_V <= len) {
    tb_store_vec(p + e, r);
    return;
  }
#pragma unroll
  for (int k = 0; k < tb_V; ++k)
    if (e + k < len) p[e + k] = r.v[k];
}


#endif
