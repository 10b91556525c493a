/* Vectorised float math shared by kernels. */
#ifndef HG_KERNELS_VMATH_H
#define HG_KERNELS_VMATH_H

#include <stdint.h>

#include "hybridgluon/hybridgluon.h" /* HG_API */

/* dst[i] = exp(src[i]) for i < n (dst may equal src), within 1.5 ulp of expf: vmath.c, SIMD
 * 16 lanes wide on AVX-512 processors, 8 on AVX2 ones, the same results on every instruction
 * set. */
void hg_vexp_f32(const float *src, float *dst, int64_t n);

/* The version in effect: "avx512", "avx2" or "portable" (for tests). */
HG_API const char *hg_vexp_impl(void);

static inline void hg_vexp_f32_inplace(float *e, int64_t n) { hg_vexp_f32(e, e, n); }

#endif
