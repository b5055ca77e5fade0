/* f16.h: host-side conversions between double and the narrow float formats tilebench stores
 * (fp16, bf16, fp8 e4m3fn), bit-exact with the device's conversions (cuda_fp16.h, cuda_bf16.h,
 * cuda_fp8.h): round to nearest, ties to even, straight from double (no double rounding).
 *
 *   fp16, bf16: overflow rounds to +-Inf; NaN becomes the canonical 0x7FFF (as __double2half).
 *   fp8 e4m3fn: no Inf; finite overflow and +-Inf saturate to +-448 (0x7E/0xFE), which is what
 *               __nv_fp8_e4m3(x) (__NV_SATFINITE) does; NaN becomes 0x7F (0xFF if negative). */
#ifndef TB_F16_H
#define TB_F16_H

#include <stdint.h>

uint16_t tb_f16_from_double(double x);
uint16_t tb_bf16_from_double(double x);
uint8_t tb_fp8e4m3_from_double(double x);

double tb_f16_to_double(uint16_t bits);
double tb_bf16_to_double(uint16_t bits);
double tb_fp8e4m3_to_double(uint8_t bits);

#endif
