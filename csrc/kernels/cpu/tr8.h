/* An 8 x 8 float32 transpose in AVX2 registers, tr16.h's counterpart for AVX2 kernels
 * (depthwise.c's channel blocks), and the lane masks of AVX2's masked loads and stores (also
 * gemm_avx2.c's tails). Include only from code compiled for x86-64 with GCC or Clang;
 * call only where the CPU has AVX2. */
#ifndef HG_KERNELS_CPU_TR8_H
#define HG_KERNELS_CPU_TR8_H

#include <immintrin.h>
#include <stdint.h>

/* The first n lanes of an AVX2 mask vector (n <= 0: none, n >= 8: all). */
__attribute__((target("avx2"))) static inline __m256i hg_lanes8(int64_t n)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int32_t k = n <= 0 ? 0 : n >= 8 ? 8 : (int32_t)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), idx);
}

/* out[k], lane r = src[r * lds + k] for rows r < nr (lanes r >= nr: 0) and columns k < nk
 * (<= 8; the loads read nothing past column nk - 1 of a row, nor rows past nr - 1; out[k] for
 * k >= nk: 0). Unpacks and shuffles within 128-bit lanes, then lane permutes. */
__attribute__((target("avx2"))) static inline void hg_tr8_f32(const float *src, int64_t lds,
                                                              int64_t nr, int64_t nk, __m256 out[8])
{
    const __m256i km = hg_lanes8(nk);
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++)
        r[i] = i >= nr   ? _mm256_setzero_ps()
               : nk >= 8 ? _mm256_loadu_ps(src + i * lds)
                         : _mm256_maskload_ps(src + i * lds, km);
    for (int i = 0; i < 8; i += 2) { /* lane L: (i, 4L'), (i+1, 4L'), (i, 4L'+1), (i+1, 4L'+1) */
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 2; g++) { /* r[4g + c], each half: rows 4g .. 4g+3 of a column */
        r[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        r[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        r[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        r[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) { /* low halves: columns c; high halves: columns 4 + c */
        out[c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x20);
        out[4 + c] = _mm256_permute2f128_ps(r[c], r[4 + c], 0x31);
    }
}

#endif
