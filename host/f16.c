/* f16.c: double <-> fp16 / bf16 / fp8 e4m3fn on the host, bit-exact with the device (see f16.h).
 * One generic round-to-nearest-even encoder serves all three formats; they differ only in field
 * widths and in what lies past the largest finite value (Inf, or saturation for e4m3fn). */
#include "f16.h"

#include <math.h>
#include <string.h>

typedef struct narrow_format {
  int exp_bits, man_bits;
  int has_inf;           /* IEEE-style Inf/NaN in the top exponent; e4m3fn has neither */
  uint32_t nan_bits;     /* the canonical NaN the device produces */
  uint32_t max_finite;   /* largest finite magnitude, as bits */
} narrow_format;

static const narrow_format fmt_f16 = {5, 10, 1, 0x7FFF, 0x7BFF};
static const narrow_format fmt_bf16 = {8, 7, 1, 0x7FFF, 0x7F7F};
static const narrow_format fmt_e4m3 = {4, 3, 0, 0x7F, 0x7E};

static uint32_t encode(double x, const narrow_format *f) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  const int width = f->exp_bits + f->man_bits;
  const uint32_t sign = (uint32_t)(u >> 63) << width;
  const uint64_t a = u & 0x7FFFFFFFFFFFFFFFULL;
  const uint32_t inf_bits = ((1u << f->exp_bits) - 1u) << f->man_bits;

  if (a > 0x7FF0000000000000ULL) /* NaN: fp16/bf16 drop the sign like cvt.rn; e4m3 keeps it */
    return f->has_inf ? f->nan_bits : (sign | f->nan_bits);
  if (a == 0x7FF0000000000000ULL) return sign | (f->has_inf ? inf_bits : f->max_finite);
  if ((a >> 52) == 0) return sign; /* zero or a double subnormal: far below half the least step */

  const int bias = (1 << (f->exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  const int e = (int)(a >> 52) - 1023;
  const uint64_t mant = (a & ((1ULL << 52) - 1)) | (1ULL << 52); /* 53 bits with the hidden one */
  int shift = 52 - f->man_bits;
  if (e < emin) shift += emin - e; /* subnormal in the target: fewer bits survive */
  if (shift >= 60) return sign;    /* below half the smallest subnormal */

  uint64_t q = mant >> shift;
  const uint64_t rem = mant & ((1ULL << shift) - 1);
  const uint64_t half = 1ULL << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;

  /* A normal result adds the biased exponent; a carry out of the mantissa moves into the
   * exponent by itself, and a subnormal that rounds up to 2^man_bits is the least normal. */
  uint64_t bits = e < emin ? q : ((uint64_t)(e + bias - 1) << f->man_bits) + q;
  if (f->has_inf) {
    if (bits >= inf_bits) bits = inf_bits;
  } else if (bits > f->max_finite) {
    bits = f->max_finite; /* __NV_SATFINITE */
  }
  return sign | (uint32_t)bits;
}

static double decode(uint32_t bits, const narrow_format *f) {
  const int width = f->exp_bits + f->man_bits;
  const int bias = (1 << (f->exp_bits - 1)) - 1;
  const uint32_t exp_all = (1u << f->exp_bits) - 1u;
  const int negative = (int)((bits >> width) & 1u);
  const uint32_t ef = (bits >> f->man_bits) & exp_all;
  const uint32_t frac = bits & ((1u << f->man_bits) - 1u);
  double v;
  if (f->has_inf && ef == exp_all) {
    if (frac != 0) return NAN;
    v = INFINITY;
  } else if (!f->has_inf && (bits & ((1u << width) - 1u)) > f->max_finite) {
    return NAN;
  } else if (ef == 0) {
    v = ldexp((double)frac, 1 - bias - f->man_bits);
  } else {
    v = ldexp((double)(frac | (1u << f->man_bits)), (int)ef - bias - f->man_bits);
  }
  return negative ? -v : v;
}

uint16_t tb_f16_from_double(double x) { return (uint16_t)encode(x, &fmt_f16); }
uint16_t tb_bf16_from_double(double x) { return (uint16_t)encode(x, &fmt_bf16); }
uint8_t tb_fp8e4m3_from_double(double x) { return (uint8_t)encode(x, &fmt_e4m3); }
double tb_f16_to_double(uint16_t bits) { return decode(bits, &fmt_f16); }
double tb_bf16_to_double(uint16_t bits) { return decode(bits, &fmt_bf16); }
double tb_fp8e4m3_to_double(uint8_t bits) { return decode(bits, &fmt_e4m3); }
