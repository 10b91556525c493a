/* Vectorised exp (see vmath.h), in GCC vector extensions of 16 floats: one AVX-512 register,
 * two AVX2 registers, or four SSE2 ones, the function cloned per instruction set and chosen at
 * load time. No contraction into FMA (-std=c11 sets -ffp-contract=off), so every clone gives
 * the same bits.
 *
 * Cody-Waite reduction x = n ln2 + r with |r| <= ln2/2, Cephes' degree-6 polynomial for e^r
 * (within 1.5 ulp), then 2^n built in the exponent bits as two factors so that results down to
 * the smallest subnormal are right. Inputs are clamped to [-104, 88.7228] first (below -104 the
 * result rounds to 0, above 88.7228 it is +inf); NaN passes through as NaN. The clamps compare
 * float bit patterns as integers: float vector compares would make GCC fall back to scalar
 * branches under the default -ftrapping-math. */
#include "vmath.h"

#define LANES 16
typedef float vf __attribute__((vector_size(4 * LANES)));
typedef int32_t vi __attribute__((vector_size(4 * LANES)));
typedef uint32_t vu __attribute__((vector_size(4 * LANES)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HG_CLONES
#endif

static inline __attribute__((always_inline)) void exp_block(float *ptr)
{
    const int32_t lo_bits = -1026555904; /* -104.0f as int32 */
    const int32_t hi_bits = 0x42B17218;  /* 88.72283935546875f: above it expf overflows */
    const int32_t ninf = (int32_t)0xFF800000u, pinf = 0x7F800000;
    vi xi;
    memcpy(&xi, ptr, sizeof xi);
    /* Negative floats order backwards as int32; NaNs lie beyond the infinities. */
    vi under = (xi > lo_bits) & (xi <= ninf), over = (xi > hi_bits) & (xi <= pinf);
    xi = (under & lo_bits) | (~under & xi);
    xi = (over & hi_bits) | (~over & xi);
    vf x = (vf)xi;
    vf t = x * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23 rounds to an integer */
    vf n = t - 12582912.0f;
    vf r = x - n * 0.693359375f - n * -2.12194440e-4f;
    vf p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* n = bits(t) - bits(1.5 * 2^23); 2^n = 2^n1 * 2^(n - n1), both factors normal floats.
     * Unsigned arithmetic: NaN lanes carry garbage bits and must not overflow a signed int. */
    vu ni = (vu)t - 0x4B400000u, n1 = (vu)((vi)ni >> 1);
    vu b1 = (n1 + 127u) << 23, b2 = (ni - n1 + 127u) << 23;
    x = p * (vf)b1 * (vf)b2;
    /* Inputs above the clamp overflow: +inf, as expf gives. */
    vi xr = (vi)x;
    xr = (over & pinf) | (~over & xr);
    memcpy(ptr, &xr, sizeof xr);
}

HG_CLONES void hg_vexp_f32_inplace(float *e, int64_t w)
{
    int64_t c = 0;
    for (; c + LANES <= w; c += LANES) exp_block(e + c);
    if (c < w) {
        float tmp[LANES] = {0};
        memcpy(tmp, e + c, sizeof(float) * (size_t)(w - c));
        exp_block(tmp);
        memcpy(e + c, tmp, sizeof(float) * (size_t)(w - c));
    }
}
