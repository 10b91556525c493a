/* The small-side GEMM kernels (gemm_small.h) for AVX2 with FMA: 8 lanes, maskload/maskstore for
 * the tails. Compiled for that set through function attributes (the build targets baseline
 * x86-64); gemm.c calls them only when the CPU reports avx2 and fma. */
#include "kernels/cpu/gemm_small.h"

#ifdef HG_GEMM_HAVE_X86
#include <immintrin.h>

#include "kernels/cpu/post_avx2.h"
#include "kernels/cpu/tr8.h"

#define HG_TGT __attribute__((target("avx2,fma")))
#define KNAME(x) x##_avx2
#define VW 8
/* 16 vector registers. dot: 2 x 4 tiles (8 accumulators and the 4 vectors of B). axpy: 4 x 3
 * vectors, 12 accumulators (enough to hide the multiply-add latency on two FMA ports), the 3
 * vectors of B's row k and one broadcast A(i, k); 4 x 2 lost to OpenBLAS on the wide shallow
 * products (gemm.c, WIDE_N). */
#define DOT_MR 2
#define AXPY_MR 4
#define AXPY_NVM 3
#define AXPY_NV1 8
typedef __m256 vf;
#define V_POST hg_post_m256

static inline HG_TGT vf v_zero(void) { return _mm256_setzero_ps(); }
static inline HG_TGT vf v_set1(float x) { return _mm256_set1_ps(x); }
static inline HG_TGT vf v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline HG_TGT vf v_loadn(const float *p, int n)
{
    return _mm256_maskload_ps(p, hg_lanes8(n));
}
static inline HG_TGT void v_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline HG_TGT void v_storen(float *p, vf v, int n)
{
    _mm256_maskstore_ps(p, hg_lanes8(n), v);
}
static inline HG_TGT vf v_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline HG_TGT vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline HG_TGT vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline HG_TGT float v_hsum(vf v)
{
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}
/* Four sums at once: pairwise horizontal adds leave a's, b's, c's and d's sums of each 128-bit
 * half side by side. */
static inline HG_TGT void v_hsum4(vf a, vf b, vf c, vf d, float *out)
{
    __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
}

#include "kernels/cpu/gemm_small_tmpl.h"
#else
typedef int hg_gemm_avx2_unused; /* not an x86-64 GCC build: the kernels do not exist */
#endif
