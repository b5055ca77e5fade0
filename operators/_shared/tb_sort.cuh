// tb_sort.cuh: the order every sorting operator (radix_sort, top_k_selection, bitonic_sort)
// compares values in, as unsigned 32-bit keys: a < b as values exactly when key(a) < key(b).
// One header, so the references and the fast kernels of the three operators agree on ties,
// signed zeros and NaN (docs/SORTING.md):
//   int32   key = bits ^ 0x80000000 (signed order)
//   fp32    key = bits ^ 0x80000000 for x >= +0, ~bits for x <= -0: -0.0 sorts just below +0.0
//           (as values they are equal: which of the two comes first does not change any output
//           under the verifier, which compares values); every NaN is the largest key 0xFFFFFFFF,
//           above +inf (torch.sort puts NaN last, torch.topk counts NaN as the largest value),
//           and comes back as the canonical NaN 0x7FC00000
//   fp16    the same on 16 bits (NaN -> 0xFFFF, back as 0x7E00), held in a 32-bit key
// SORT_KIND selects the dtype at compile time: 1 int32, 2 fp32, 3 fp16. TB_SORT_PAD is a key
// above every real key (it is never converted back): the padding of partial tiles and of a
// bitonic network's power-of-two length.
#ifndef TB_SORT_CUH
#define TB_SORT_CUH
#include "tb_common.cuh"

#ifndef SORT_KIND
#error "tb_sort.cuh: define SORT_KIND (1 int32, 2 fp32, 3 fp16)"
#endif

#if SORT_KIND == 1
typedef int32_t tb_sort_t;
#elif SORT_KIND == 2
typedef float tb_sort_t;
#elif SORT_KIND == 3
typedef __half tb_sort_t;
#else
#error "tb_sort.cuh: SORT_KIND must be 1 (int32), 2 (fp32) or 3 (fp16)"
#endif

#define TB_SORT_PAD 0xFFFFFFFFu

TB_DEVICE uint32_t tb_sort_key(tb_sort_t v) {
#if SORT_KIND == 1
  return (uint32_t)v ^ 0x80000000u;
#elif SORT_KIND == 2
  uint32_t u = __float_as_uint(v);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;
  return (u & 0x80000000u) ? ~u : (u ^ 0x80000000u);
#else
  uint32_t u = (uint32_t)__half_as_ushort(v);
  if ((u & 0x7FFFu) > 0x7C00u) return 0xFFFFu;
  return (u & 0x8000u) ? (~u & 0xFFFFu) : (u ^ 0x8000u);
#endif
}

TB_DEVICE tb_sort_t tb_sort_value(uint32_t k) {
#if SORT_KIND == 1
  return (int32_t)(k ^ 0x80000000u);
#elif SORT_KIND == 2
  if (k == 0xFFFFFFFFu) return __uint_as_float(0x7FC00000u);
  return __uint_as_float((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k);
#else
  if (k == 0xFFFFu) return __ushort_as_half((unsigned short)0x7E00u);
  return __ushort_as_half((unsigned short)((k & 0x8000u) ? (k ^ 0x8000u) : (~k & 0xFFFFu)));
#endif
}

#endif
