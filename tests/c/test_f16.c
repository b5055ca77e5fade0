/* test_f16.c: host fp16 / bf16 / fp8 e4m3fn conversions (host/f16.c) against three references:
 * the rounding rule itself (exhaustive over each format's values and the midpoints between
 * them), GCC's _Float16 for fp16, and CUDA's own host implementation of the e4m3 conversion
 * (__nv_cvt_double_to_fp8 in cuda_fp8.h, which is plain C) for fp8. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_fp8.h>

#include "f16.h"

static int failures;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      if (failures++ < 40) {                              \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);   \
        fprintf(stderr, __VA_ARGS__);                     \
        fputc('\n', stderr);                              \
      }                                                   \
    }                                                     \
  } while (0)

typedef struct format_ops {
  const char *name;
  int bits;                       /* 8 or 16 */
  uint32_t (*enc)(double);
  double (*dec)(uint32_t);
} format_ops;

static uint32_t enc_f16(double x) { return tb_f16_from_double(x); }
static uint32_t enc_bf16(double x) { return tb_bf16_from_double(x); }
static uint32_t enc_e4m3(double x) { return tb_fp8e4m3_from_double(x); }
static double dec_f16(uint32_t b) { return tb_f16_to_double((uint16_t)b); }
static double dec_bf16(uint32_t b) { return tb_bf16_to_double((uint16_t)b); }
static double dec_e4m3(uint32_t b) { return tb_fp8e4m3_to_double((uint8_t)b); }

static const format_ops formats[] = {
  {"fp16", 16, enc_f16, dec_f16},
  {"bf16", 16, enc_bf16, dec_bf16},
  {"fp8_e4m3", 8, enc_e4m3, dec_e4m3},
};

/* Every finite value survives a round trip; between two neighbours the midpoint goes to the
 * even one and anything off the midpoint goes to the nearer one. */
static void check_rounding_rule(const format_ops *f) {
  const uint32_t n = 1u << f->bits, sign_bit = n >> 1;
  for (uint32_t b = 0; b < n; b++) {
    double v = f->dec(b);
    if (isnan(v)) continue;
    CHECK(f->enc(v) == b, "%s: round trip of 0x%x (%.17g) gave 0x%x", f->name, b, v, f->enc(v));
    if ((b & (sign_bit - 1)) == sign_bit - 1) continue; /* the last pattern has no upper neighbour */
    double w = f->dec(b + 1);                        /* next magnitude, same sign */
    if (isnan(w) || isinf(w) || isinf(v)) continue;
    double mid = v / 2 + w / 2;                      /* exact: both are short binary numbers */
    uint32_t even = (b & 1) ? b + 1 : b;
    CHECK(f->enc(mid) == even, "%s: midpoint %.17g of 0x%x/0x%x gave 0x%x, want 0x%x", f->name,
          mid, b, b + 1, f->enc(mid), even);
    double toward_w = nextafter(mid, w), toward_v = nextafter(mid, v);
    CHECK(f->enc(toward_w) == b + 1, "%s: %.17g just past the midpoint gave 0x%x, want 0x%x",
          f->name, toward_w, f->enc(toward_w), b + 1);
    CHECK(f->enc(toward_v) == b, "%s: %.17g just short of the midpoint gave 0x%x, want 0x%x",
          f->name, toward_v, f->enc(toward_v), b);
  }
}

static void check_specials(void) {
  /* fp16 */
  CHECK(tb_f16_from_double(65504.0) == 0x7BFF, "fp16 max");
  CHECK(tb_f16_from_double(65519.99) == 0x7BFF, "fp16 below the overflow midpoint");
  CHECK(tb_f16_from_double(65520.0) == 0x7C00, "fp16 overflow midpoint rounds to Inf (even)");
  CHECK(tb_f16_from_double(1e300) == 0x7C00, "fp16 overflow");
  CHECK(tb_f16_from_double(-INFINITY) == 0xFC00, "fp16 -Inf");
  CHECK(tb_f16_from_double(NAN) == 0x7FFF, "fp16 NaN is canonical");
  CHECK(tb_f16_from_double(-0.0) == 0x8000, "fp16 -0");
  CHECK(tb_f16_from_double(ldexp(1, -24)) == 0x0001, "fp16 least subnormal");
  CHECK(tb_f16_from_double(ldexp(1, -25)) == 0x0000, "fp16 half the least subnormal ties to 0");
  CHECK(tb_f16_from_double(nextafter(ldexp(1, -25), 1)) == 0x0001, "fp16 just over half");
  CHECK(tb_f16_from_double(-ldexp(3, -25)) == 0x8002, "fp16 1.5 subnormal steps ties to even");
  CHECK(tb_f16_from_double(ldexp(1023, -24) + ldexp(1, -25)) == 0x0400, "fp16 subnormal carries into the least normal");
  CHECK(tb_f16_from_double(1e-300) == 0 && tb_f16_from_double(4.9e-324) == 0, "fp16 tiny");
  CHECK(tb_f16_from_double(0.1) == 0x2E66, "fp16 0.1");
  CHECK(isinf(tb_f16_to_double(0x7C00)) && tb_f16_to_double(0xFC00) < 0, "fp16 Inf decodes");
  CHECK(isnan(tb_f16_to_double(0x7E00)) && isnan(tb_f16_to_double(0xFFFF)), "fp16 NaN decodes");
  CHECK(tb_f16_to_double(0x0001) == ldexp(1, -24), "fp16 subnormal decodes");
  /* bf16 */
  CHECK(tb_bf16_from_double(1.0) == 0x3F80, "bf16 1");
  CHECK(tb_bf16_from_double(0.1) == 0x3DCD, "bf16 0.1");
  CHECK(tb_bf16_from_double(3.3895313892515355e38) == 0x7F7F, "bf16 max");
  CHECK(tb_bf16_from_double(3.3962e38) == 0x7F80, "bf16 overflow to Inf");
  CHECK(tb_bf16_from_double(NAN) == 0x7FFF, "bf16 NaN is canonical");
  CHECK(tb_bf16_from_double(ldexp(1, -133)) == 0x0001, "bf16 least subnormal");
  CHECK(tb_bf16_from_double(ldexp(1, -134)) == 0x0000, "bf16 half the least subnormal");
  CHECK(isinf(tb_bf16_to_double(0xFF80)) && tb_bf16_to_double(0xFF80) < 0, "bf16 -Inf decodes");
  /* fp8 e4m3fn: no Inf, saturating */
  CHECK(tb_fp8e4m3_from_double(448.0) == 0x7E, "e4m3 max");
  CHECK(tb_fp8e4m3_from_double(464.0) == 0x7E, "e4m3 464 ties to 448");
  CHECK(tb_fp8e4m3_from_double(465.0) == 0x7E, "e4m3 finite overflow saturates");
  CHECK(tb_fp8e4m3_from_double(1e300) == 0x7E, "e4m3 huge saturates");
  CHECK(tb_fp8e4m3_from_double(INFINITY) == 0x7E, "e4m3 +Inf saturates");
  CHECK(tb_fp8e4m3_from_double(-INFINITY) == 0xFE, "e4m3 -Inf saturates");
  CHECK(tb_fp8e4m3_from_double(NAN) == 0x7F, "e4m3 NaN");
  CHECK(tb_fp8e4m3_from_double(-NAN) == 0xFF, "e4m3 -NaN keeps its sign");
  CHECK(tb_fp8e4m3_from_double(ldexp(1, -9)) == 0x01, "e4m3 least subnormal");
  CHECK(tb_fp8e4m3_from_double(ldexp(1, -10)) == 0x00, "e4m3 half the least subnormal");
  CHECK(tb_fp8e4m3_from_double(-ldexp(1, -10)) == 0x80, "e4m3 -tiny keeps its sign");
  CHECK(tb_fp8e4m3_from_double(0.1) == 0x1D, "e4m3 0.1");
  CHECK(isnan(tb_fp8e4m3_to_double(0x7F)) && isnan(tb_fp8e4m3_to_double(0xFF)), "e4m3 NaN decodes");
  CHECK(tb_fp8e4m3_to_double(0x7E) == 448.0 && tb_fp8e4m3_to_double(0xFE) == -448.0, "e4m3 max decodes");
  CHECK(tb_fp8e4m3_to_double(0x78) == 256.0, "e4m3 exponent 15 is finite");
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t next_random(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

/* Random doubles whose binary exponent lies in [lo, hi], random sign and mantissa. */
static double random_double(int lo, int hi) {
  uint64_t r = next_random();
  int e = lo + (int)(r % (uint64_t)(hi - lo + 1));
  uint64_t bits = ((uint64_t)(e + 1023) << 52) | (next_random() & ((1ULL << 52) - 1));
  if (r & (1ULL << 40)) bits |= 1ULL << 63;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

static void check_against_references(void) {
  for (int i = 0; i < 2000000; i++) {
    double x = random_double(-40, 20);
    uint8_t want = __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    CHECK(tb_fp8e4m3_from_double(x) == want, "e4m3(%.17g) = 0x%x, cuda_fp8.h says 0x%x", x,
          tb_fp8e4m3_from_double(x), want);
#ifdef __FLT16_MANT_DIG__
    double y = random_double(-30, 17);
    _Float16 h = (_Float16)y;
    uint16_t hb;
    memcpy(&hb, &h, sizeof hb);
    CHECK(tb_f16_from_double(y) == hb, "fp16(%.17g) = 0x%x, _Float16 says 0x%x", y,
          tb_f16_from_double(y), hb);
#endif
    /* bf16 of a value that is exactly a float: the classic float-bits rounding is the reference */
    float fl = (float)random_double(-140, 127);
    uint32_t fb;
    memcpy(&fb, &fl, sizeof fb);
    uint16_t bf_want = (uint16_t)((fb + 0x7FFFu + ((fb >> 16) & 1u)) >> 16);
    CHECK(tb_bf16_from_double(fl) == bf_want, "bf16(%.9g) = 0x%x, want 0x%x", (double)fl,
          tb_bf16_from_double(fl), bf_want);
  }
  const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 448.0, 464.0,
                             464.00000001, 480.0, 1e-300, -1e-300, 4.9e-324, 1e300};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
    uint8_t want = __nv_cvt_double_to_fp8(specials[i], __NV_SATFINITE, __NV_E4M3);
    CHECK(tb_fp8e4m3_from_double(specials[i]) == want, "e4m3 special %g: 0x%x, cuda_fp8.h 0x%x",
          specials[i], tb_fp8e4m3_from_double(specials[i]), want);
  }
}

int main(void) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) check_rounding_rule(&formats[i]);
  check_specials();
  check_against_references();
  if (failures) {
    fprintf(stderr, "test_f16: %d failures\n", failures);
    return 1;
  }
  printf("test_f16: ok\n");
  return 0;
}
