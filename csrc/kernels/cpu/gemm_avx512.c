/* The small-side GEMM kernels (gemm_small.h) for AVX-512F: 16 lanes, masked loads and stores for
 * the tails. Compiled for that set through function attributes (the build targets baseline
 * x86-64); gemm.c calls them only when the CPU reports avx512f. */
#include "kernels/cpu/gemm_small.h"

#ifdef HG_GEMM_HAVE_X86
#include <immintrin.h>

#include "kernels/cpu/post_avx512.h"

#define HG_TGT __attribute__((target("avx512f,avx2,fma")))
#define KNAME(x) x##_avx512
#define VW 16
#define DOT_MR 4
#define AXPY_MR 4
#define AXPY_NVM 4
#define AXPY_NV1 8
typedef __m512 vf;
#define V_POST hg_post_m512

static inline HG_TGT vf v_zero(void) { return _mm512_setzero_ps(); }
static inline HG_TGT vf v_set1(float x) { return _mm512_set1_ps(x); }
static inline HG_TGT vf v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline HG_TGT vf v_loadn(const float *p, int n)
{
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}
static inline HG_TGT void v_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline HG_TGT void v_storen(float *p, vf v, int n)
{
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v);
}
static inline HG_TGT vf v_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline HG_TGT vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline HG_TGT vf v_add(vf a, vf b) { return _mm512_add_ps(a, b); }

/* The sum of the two 256-bit halves. */
static inline HG_TGT __m256 fold256(vf v)
{
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return _mm256_add_ps(_mm512_castps512_ps256(v), hi);
}
static inline HG_TGT float v_hsum(vf v)
{
    __m256 h = fold256(v);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}
/* Four sums at once: fold each to 256 bits, then pairwise horizontal adds leave a's, b's, c's
 * and d's sums of each 128-bit half side by side. */
static inline HG_TGT void v_hsum4(vf a, vf b, vf c, vf d, float *out)
{
    __m256 ab = _mm256_hadd_ps(fold256(a), fold256(b));
    __m256 cd = _mm256_hadd_ps(fold256(c), fold256(d));
    __m256 s = _mm256_hadd_ps(ab, cd);
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
}

#include "kernels/cpu/gemm_small_tmpl.h"
#else
typedef int hg_gemm_avx512_unused; /* not an x86-64 GCC build: the kernels do not exist */
#endif
