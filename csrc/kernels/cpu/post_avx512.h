/* core/post.h's activations on 16 float32 lanes, for AVX-512 kernels that apply them in
 * registers (sgemm_packed.c's epilogue, depthwise.c's channel blocks). The formulas are
 * hg_post_f32's, bit for bit: relu keeps NaN and gives +0 for -0; clip keeps NaN and tests the
 * upper bound first. Include only from x86-64 code built with GCC or Clang; call only where the
 * CPU has AVX-512F. */
#ifndef HG_KERNELS_CPU_POST_AVX512_H
#define HG_KERNELS_CPU_POST_AVX512_H

#include <immintrin.h>

#include "core/post.h"

__attribute__((target("avx512f"))) static inline __m512 hg_post_m512(const hg_post *po, __m512 v)
{
    if (!po || po->kind == HG_POST_NONE) return v;
    const __m512 zero = _mm512_setzero_ps();
    if (po->kind == HG_POST_RELU) /* v > 0 or NaN: v; else +0 */
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_NLE_UQ), zero, v);
    const __m512 lo = _mm512_set1_ps(po->lo), hi = _mm512_set1_ps(po->hi);
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), v, lo);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), v, hi);
}

#endif
