/* tb_host.cuh: what the host's own kernels share (tensor.cu's generators and fill, verify.cu's
 * compare): fixed-width integer names and one set of dtype traits. Embedded in the binary with the
 * kernels and handed to NVRTC only for the host kernels that include it (host_kernels.c). Never
 * the operators' headers (operators/_shared): the host does not depend on an operator family.
 *
 * A dtype D: D::bits, the unsigned integer of its size the kernels store; D::is_float;
 * D::value(b), its value as a double; floats: D::from_float(f) (the device's RNE conversion, fp8
 * e4m3 saturating), D::from_int(r) (through double), D::down(b) / D::up(b) (one ulp toward -Inf /
 * +Inf); integers: D::from_int(r) (wrapping, as a C cast), D::integer(b) as int64. */
#ifndef TB_HOST_CUH
#define TB_HOST_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

template <typename B> struct sign_magnitude {
  /* One ulp toward -Inf / +Inf for sign-magnitude encodings (all our float formats). */
  static __device__ __forceinline__ B down(B b) {
    const B sign = (B)((B)1 << (sizeof(B) * 8 - 1));
    if ((B)(b & (B)~sign) == 0) return (B)(sign | 1);
    return (b & sign) ? (B)(b + 1) : (B)(b - 1);
  }
  static __device__ __forceinline__ B up(B b) {
    const B sign = (B)((B)1 << (sizeof(B) * 8 - 1));
    if ((B)(b & (B)~sign) == 0) return (B)1;
    return (b & sign) ? (B)(b - 1) : (B)(b + 1);
  }
};

struct dt_fp32 : sign_magnitude<u32> {
  typedef u32 bits;
  enum { is_float = 1 };
  static __device__ __forceinline__ bits from_float(float v) { return __float_as_uint(v); }
  static __device__ __forceinline__ bits from_int(i64 r) { return __float_as_uint(__ll2float_rn(r)); }
  static __device__ __forceinline__ double value(bits b) { return (double)__uint_as_float(b); }
};
struct dt_fp16 : sign_magnitude<unsigned short> {
  typedef unsigned short bits;
  enum { is_float = 1 };
  static __device__ __forceinline__ bits from_float(float v) { return __half_as_ushort(__float2half_rn(v)); }
  static __device__ __forceinline__ bits from_int(i64 r) { return __half_as_ushort(__double2half((double)r)); }
  static __device__ __forceinline__ double value(bits b) { return (double)__half2float(__ushort_as_half(b)); }
};
struct dt_bf16 : sign_magnitude<unsigned short> {
  typedef unsigned short bits;
  enum { is_float = 1 };
  static __device__ __forceinline__ bits from_float(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
  static __device__ __forceinline__ bits from_int(i64 r) { return __bfloat16_as_ushort(__double2bfloat16((double)r)); }
  static __device__ __forceinline__ double value(bits b) { return (double)__bfloat162float(__ushort_as_bfloat16(b)); }
};
struct dt_fp8_e4m3 : sign_magnitude<unsigned char> {
  typedef unsigned char bits;
  enum { is_float = 1 };
  static __device__ __forceinline__ bits from_float(float v) {
    return (bits)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
  }
  static __device__ __forceinline__ bits from_int(i64 r) {
    return (bits)__nv_cvt_double_to_fp8((double)r, __NV_SATFINITE, __NV_E4M3);
  }
  static __device__ __forceinline__ double value(bits b) {
    return (double)__half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3)));
  }
};
template <typename I, typename B> struct dt_int {
  typedef B bits;
  enum { is_float = 0 };
  static __device__ __forceinline__ bits from_int(i64 r) { return (bits)(I)r; }
  static __device__ __forceinline__ i64 integer(bits b) { return (i64)(I)b; }
  static __device__ __forceinline__ double value(bits b) { return (double)(I)b; }
};
typedef dt_int<signed char, unsigned char> dt_int8;
typedef dt_int<unsigned char, unsigned char> dt_uint8;
typedef dt_int<int, u32> dt_int32;
typedef dt_int<i64, u64> dt_int64;

#endif
