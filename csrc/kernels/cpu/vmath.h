/* Vectorised float math shared by kernels. */
#ifndef HG_KERNELS_VMATH_H
#define HG_KERNELS_VMATH_H

#include <stdint.h>
#include <string.h>

/* e[i] = exp(e[i]) for i < w, within 1.5 ulp of expf (vmath.c: SIMD, 16 lanes wide on AVX-512
 * processors, the same results on every instruction set). */
void hg_vexp_f32_inplace(float *e, int64_t w);

/* dst[i] = exp(src[i]) (dst may equal src). */
static inline void hg_vexp_f32(const float *src, float *dst, int64_t n)
{
    if (dst != src) memcpy(dst, src, sizeof(float) * (size_t)n);
    hg_vexp_f32_inplace(dst, n);
}

#endif
