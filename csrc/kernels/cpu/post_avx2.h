/* core/post.h's activations on 8 float32 lanes, post_avx512.h's counterpart for AVX2 kernels
 * that apply them in registers. The formulas are hg_post_f32's, bit for bit: relu keeps NaN and
 * gives +0 for -0; clip keeps NaN and tests the upper bound first. Include only from x86-64 code
 * built with GCC or Clang; call only where the CPU has AVX2. */
#ifndef HG_KERNELS_CPU_POST_AVX2_H
#define HG_KERNELS_CPU_POST_AVX2_H

#include <immintrin.h>

#include "core/post.h"

__attribute__((target("avx2"))) static inline __m256 hg_post_m256(const hg_post *po, __m256 v)
{
    if (!po || po->kind == HG_POST_NONE) return v;
    const __m256 zero = _mm256_setzero_ps();
    if (po->kind == HG_POST_RELU) /* v > 0 or NaN: v; else +0 */
        return _mm256_blendv_ps(zero, v, _mm256_cmp_ps(v, zero, _CMP_NLE_UQ));
    const __m256 lo = _mm256_set1_ps(po->lo), hi = _mm256_set1_ps(po->hi);
    v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
}

#endif
