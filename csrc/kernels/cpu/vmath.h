/* Vectorised float math shared by kernels (GCC vector extensions; SSE2 baseline, wider when the
 * compiler targets more). hg_vexp_f32_inplace: e[i] = exp(e[i]) within 1.5 ulp. */
#ifndef HG_KERNELS_VMATH_H
#define HG_KERNELS_VMATH_H

#include <stdint.h>
#include <string.h>

/* exp over a float tile, in SIMD through GCC vector extensions (libm's expf is an opaque call,
 * so a plain loop cannot vectorise). Cody-Waite reduction x = n ln2 + r with |r| <= ln2/2,
 * Cephes' degree-6 polynomial for e^r (within 1.5 ulp), then 2^n built in the exponent bits as
 * two factors so that results down to the smallest subnormal are right. Inputs are clamped to
 * [-104, 88.7228] first (below -104 the result rounds to 0, above 88.7228 it is +inf); NaN
 * passes through as NaN. The
 * clamps compare float bit patterns as integers: float vector compares would make GCC fall
 * back to scalar branches under the default -ftrapping-math. */
typedef float hg_v4f __attribute__((vector_size(16)));
typedef int32_t hg_v4i __attribute__((vector_size(16)));
typedef uint32_t hg_v4u __attribute__((vector_size(16)));

static inline void hg_vexp4(float *ptr)
{
    const int32_t lo_bits = -1026555904; /* -104.0f as int32 */
    const int32_t hi_bits = 0x42B17218;  /* 88.72283935546875f: above it expf overflows */
    const int32_t ninf = (int32_t)0xFF800000u, pinf = 0x7F800000;
    hg_v4i xi;
    memcpy(&xi, ptr, sizeof xi);
    /* Negative floats order backwards as int32; NaNs lie beyond the infinities. */
    hg_v4i under = (xi > lo_bits) & (xi <= ninf), over = (xi > hi_bits) & (xi <= pinf);
    xi = (under & lo_bits) | (~under & xi);
    xi = (over & hi_bits) | (~over & xi);
    hg_v4f x = (hg_v4f)xi;
    hg_v4f t = x * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23 rounds to an integer */
    hg_v4f n = t - 12582912.0f;
    hg_v4f r = x - n * 0.693359375f - n * -2.12194440e-4f;
    hg_v4f p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* n = bits(t) - bits(1.5 * 2^23); 2^n = 2^n1 * 2^(n - n1), both factors normal floats.
     * Unsigned arithmetic: NaN lanes carry garbage bits and must not overflow a signed int. */
    hg_v4u ni = (hg_v4u)t - 0x4B400000u, n1 = (hg_v4u)((hg_v4i)ni >> 1);
    hg_v4u b1 = (n1 + 127u) << 23, b2 = (ni - n1 + 127u) << 23;
    x = p * (hg_v4f)b1 * (hg_v4f)b2;
    /* Inputs above the clamp overflow: +inf, as expf gives. */
    hg_v4i xr = (hg_v4i)x;
    xr = (over & pinf) | (~over & xr);
    memcpy(ptr, &xr, sizeof xr);
}

static inline void hg_vexp_f32_inplace(float *e, int64_t w)
{
    int64_t c = 0;
    for (; c + 8 <= w; c += 8) {
        hg_vexp4(e + c);
        hg_vexp4(e + c + 4);
    }
    for (; c + 4 <= w; c += 4) hg_vexp4(e + c);
    if (c < w) {
        float tmp[4] = {0};
        memcpy(tmp, e + c, sizeof(float) * (size_t)(w - c));
        hg_vexp4(tmp);
        memcpy(e + c, tmp, sizeof(float) * (size_t)(w - c));
    }
}

/* dst[i] = exp(src[i]) (dst may equal src). */
static inline void hg_vexp_f32(const float *src, float *dst, int64_t n)
{
    if (dst != src) memcpy(dst, src, sizeof(float) * (size_t)n);
    hg_vexp_f32_inplace(dst, n);
}

#endif
