/* A 16 x 16 float32 transpose in AVX-512 registers, for kernels that reorder data between
 * layouts (sgemm_packed.c's transposed B, depthwise.c's channel blocks). Include only from code
 * compiled for x86-64 with GCC or Clang; call only where the CPU has AVX-512F. */
#ifndef HG_KERNELS_CPU_TR16_H
#define HG_KERNELS_CPU_TR16_H

#include <immintrin.h>
#include <stdint.h>

/* out[k], lane r = src[r * lds + k] for rows r < nr (lanes r >= nr: 0) and columns k < nk
 * (<= 16; the loads read nothing past column nk - 1 of a row, nor rows past nr - 1; out[k] for
 * k >= nk: 0). Unpacks within 128-bit lanes, then lane shuffles: about 64 shuffles per 256
 * elements, where element by element costs a load and a store each. */
__attribute__((target("avx512f"))) static inline void
hg_tr16_f32(const float *src, int64_t lds, int64_t nr, int64_t nk, __m512 out[16])
{
    const __mmask16 km = (__mmask16)(nk >= 16 ? 0xffff : (1u << nk) - 1);
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = i < nr ? _mm512_maskz_loadu_ps(km, src + i * lds) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) { /* lane L: (i, 4L), (i+1, 4L), (i, 4L+1), (i+1, 4L+1) */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 4; g++) { /* r[4g + c], lane L: rows 4g .. 4g+3 of column 4L + c */
        r[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        r[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        r[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        r[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) { /* lane L of the four row groups side by side: column 4L + c */
        __m512 x = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        __m512 y = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        __m512 x2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        __m512 y2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
        out[c] = _mm512_shuffle_f32x4(x, x2, 0x88);
        out[8 + c] = _mm512_shuffle_f32x4(x, x2, 0xdd);
        out[4 + c] = _mm512_shuffle_f32x4(y, y2, 0x88);
        out[12 + c] = _mm512_shuffle_f32x4(y, y2, 0xdd);
    }
}

#endif
