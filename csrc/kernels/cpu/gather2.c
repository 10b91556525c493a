/* Stride-2 copy (see gather2.h). */
#include "kernels/cpu/gather2.h"

#include <stdbool.h>

static void plain(float *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = src[2 * i];
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Blocks of 16 outputs while their 32 inputs lie inside (2 * i + 31 <= 2 * n - 2); the rest
 * through masked loads of the inputs that exist. */
__attribute__((target("avx512f"))) static void gather2_avx512(float *dst, const float *src,
                                                              int64_t n)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                           30);
    int64_t i = 0;
    for (; i + 17 <= n; i += 16) {
        __m512 a = _mm512_loadu_ps(src + 2 * i), b = _mm512_loadu_ps(src + 2 * i + 16);
        _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(a, even, b));
    }
    while (i < n) {
        int64_t m = n - i < 16 ? n - i : 16, in = 2 * m - 1; /* inputs src[2i .. 2i + in) */
        __mmask16 ka = (__mmask16)(in >= 16 ? 0xffff : (1u << in) - 1);
        __mmask16 kb = (__mmask16)(in > 16 ? (1u << (in - 16)) - 1 : 0);
        __m512 a = _mm512_maskz_loadu_ps(ka, src + 2 * i);
        __m512 b = _mm512_maskz_loadu_ps(kb, src + 2 * i + 16);
        _mm512_mask_storeu_ps(dst + i, (__mmask16)((1u << m) - 1),
                              _mm512_permutex2var_ps(a, even, b));
        i += m;
    }
}

__attribute__((target("avx2"))) static void gather2_avx2(float *dst, const float *src, int64_t n)
{
    int64_t i = 0;
    for (; i + 9 <= n; i += 8) {
        __m256 a = _mm256_loadu_ps(src + 2 * i), b = _mm256_loadu_ps(src + 2 * i + 8);
        /* a0 a2 b0 b2 | a4 a6 b4 b6, then the 64-bit pairs reordered 0 2 1 3 */
        __m256 s = _mm256_shuffle_ps(a, b, 0x88);
        _mm256_storeu_ps(dst + i,
                         _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xd8)));
    }
    plain(dst + i, src + 2 * i, n - i);
}

static bool has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static bool has_avx2(void) { return __builtin_cpu_supports("avx2"); }
#endif

/* isa: 1 the plain loop, 2 AVX2, 3 AVX-512 (gemm.h's levels), else the best the CPU has. */
static bool gather2_isa(float *dst, const float *src, int64_t n, int isa)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if ((isa == 3 || isa < 1 || isa > 3) && has_avx512()) {
        gather2_avx512(dst, src, n);
        return true;
    }
    if ((isa == 2 || isa < 1 || isa > 3) && has_avx2()) {
        gather2_avx2(dst, src, n);
        return true;
    }
#endif
    if (isa == 2 || isa == 3) return false;
    plain(dst, src, n);
    return true;
}

int hg_gather2_f32_isa(float *dst, const float *src, int64_t n, int isa)
{
    return gather2_isa(dst, src, n, isa);
}

void hg_gather2_f32(float *dst, const float *src, int64_t n)
{
    /* short rows: the call through the vector paths costs more than it saves */
    if (n < 8) plain(dst, src, n);
    else gather2_isa(dst, src, n, 0);
}

void hg_gather2_f64(double *dst, const double *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = src[2 * i];
}
