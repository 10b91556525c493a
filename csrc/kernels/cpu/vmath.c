/* Vectorised exp (see vmath.h): one algorithm written three times, for AVX-512F (16 lanes),
 * AVX2 (8 lanes) and portable C (GCC vector extensions, 4 lanes on baseline x86-64), chosen once
 * at load time. Every version does the same float operations in the same order with no
 * contraction into FMA (separate multiply and add intrinsics; -std=c11 sets -ffp-contract=off
 * for the C one), so they all give the same bits.
 *
 * Cody-Waite reduction x = n ln2 + r with |r| <= ln2/2, Cephes' degree-6 polynomial for e^r
 * (within 1.5 ulp), then 2^n built in the exponent bits as two factors so that results down to
 * the smallest subnormal are right. Inputs are clamped to [-104, 88.7228] first (below -104 the
 * result rounds to 0, above 88.7228 it is +inf); NaN passes through as NaN: max/min return
 * their second operand when either is NaN, and x is passed second. The portable version
 * clamps on the float bit patterns as integers, since float vector compares make GCC fall back
 * to scalar branches under the default -ftrapping-math. */
#include "kernels/cpu/vmath.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LO -104.0f
#define HI 88.72283935546875f /* above it expf overflows */
#define LOG2E 1.44269504088896341f
#define MAGIC 12582912.0f /* 1.5 * 2^23: x + MAGIC rounds x to an integer */
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f
#define MAGIC_BITS 0x4B400000

/* ---- portable: GCC vector extensions ------------------------------------------------------ */

typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));
typedef uint32_t vu4 __attribute__((vector_size(16)));

static inline void exp4(const float *src, float *dst)
{
    const int32_t lo_bits = -1026555904; /* -104.0f as int32 */
    const int32_t hi_bits = 0x42B17218;  /* HI as int32 */
    const int32_t ninf = (int32_t)0xFF800000u, pinf = 0x7F800000;
    vi4 xi;
    memcpy(&xi, src, sizeof xi);
    /* Negative floats order backwards as int32; NaNs lie beyond the infinities. */
    vi4 under = (xi > lo_bits) & (xi <= ninf), over = (xi > hi_bits) & (xi <= pinf);
    xi = (under & lo_bits) | (~under & xi);
    xi = (over & hi_bits) | (~over & xi);
    vf4 x = (vf4)xi;
    vf4 t = x * LOG2E + MAGIC;
    vf4 n = t - MAGIC;
    vf4 r = x - n * LN2_HI - n * LN2_LO;
    vf4 p = r * P0 + P1;
    p = p * r + P2;
    p = p * r + P3;
    p = p * r + P4;
    p = p * r + P5;
    p = p * r * r + r + 1.0f;
    /* n = bits(t) - bits(MAGIC); 2^n = 2^n1 * 2^(n - n1), both factors normal floats.
     * Unsigned arithmetic: NaN lanes carry garbage bits and must not overflow a signed int. */
    vu4 ni = (vu4)t - (uint32_t)MAGIC_BITS, n1 = (vu4)((vi4)ni >> 1);
    vu4 b1 = (n1 + 127u) << 23, b2 = (ni - n1 + 127u) << 23;
    x = p * (vf4)b1 * (vf4)b2;
    vi4 xr = (vi4)x;
    xr = (over & pinf) | (~over & xr); /* inputs above the clamp overflow: +inf */
    memcpy(dst, &xr, sizeof xr);
}

static void exp_portable(const float *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) exp4(src + i, dst + i);
    if (i < n) {
        float tmp[4] = {0};
        memcpy(tmp, src + i, sizeof(float) * (size_t)(n - i));
        exp4(tmp, tmp);
        memcpy(dst + i, tmp, sizeof(float) * (size_t)(n - i));
    }
}

/* ---- AVX2 and AVX-512F: intrinsics -------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1

/* One body for both widths: V is the vector type, VI its integer twin, M a lane mask; the
 * macros below are their operations. */
#define EXP_BODY(x)                                                                             \
    do {                                                                                        \
        M over = GT(x, SET1(HI));                                                               \
        x = MIN(SET1(HI), MAX(SET1(LO), x));                                                    \
        V t = ADD(MUL(x, SET1(LOG2E)), SET1(MAGIC));                                            \
        V n = SUB(t, SET1(MAGIC));                                                              \
        V r = SUB(SUB(x, MUL(n, SET1(LN2_HI))), MUL(n, SET1(LN2_LO)));                          \
        V p = ADD(MUL(r, SET1(P0)), SET1(P1));                                                  \
        p = ADD(MUL(p, r), SET1(P2));                                                           \
        p = ADD(MUL(p, r), SET1(P3));                                                           \
        p = ADD(MUL(p, r), SET1(P4));                                                           \
        p = ADD(MUL(p, r), SET1(P5));                                                           \
        p = ADD(ADD(MUL(MUL(p, r), r), r), SET1(1.0f));                                         \
        VI ni = ISUB(CASTI(t), ISET1(MAGIC_BITS)), n1 = ISRA(ni, 1);                            \
        VI b1 = ISLL(IADD(n1, ISET1(127)), 23), b2 = ISLL(IADD(ISUB(ni, n1), ISET1(127)), 23);  \
        x = MUL(MUL(p, CASTF(b1)), CASTF(b2));                                                  \
        x = BLEND(x, SET1(__builtin_inff()), over);                                             \
    } while (0)

#define TGT __attribute__((target("avx2")))
#define V __m256
#define VI __m256i
#define M __m256
#define SET1 _mm256_set1_ps
#define ADD _mm256_add_ps
#define SUB _mm256_sub_ps
#define MUL _mm256_mul_ps
#define MIN _mm256_min_ps
#define MAX _mm256_max_ps
#define GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define BLEND(a, b, m) _mm256_blendv_ps(a, b, m)
#define CASTI _mm256_castps_si256
#define CASTF _mm256_castsi256_ps
#define ISET1 _mm256_set1_epi32
#define IADD _mm256_add_epi32
#define ISUB _mm256_sub_epi32
#define ISRA _mm256_srai_epi32
#define ISLL _mm256_slli_epi32

static TGT void exp_avx2(const float *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) { /* two registers per iteration hide the latency chain */
        V a = _mm256_loadu_ps(src + i), b = _mm256_loadu_ps(src + i + 8);
        EXP_BODY(a);
        EXP_BODY(b);
        _mm256_storeu_ps(dst + i, a);
        _mm256_storeu_ps(dst + i + 8, b);
    }
    for (; i < n; i += 8) {
        int left = n - i < 8 ? (int)(n - i) : 8;
        VI m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left),
                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        V a = _mm256_maskload_ps(src + i, m);
        EXP_BODY(a);
        _mm256_maskstore_ps(dst + i, m, a);
    }
}

#undef V
#undef VI
#undef M
#undef TGT
#undef SET1
#undef ADD
#undef SUB
#undef MUL
#undef MIN
#undef MAX
#undef GT
#undef BLEND
#undef CASTI
#undef CASTF
#undef ISET1
#undef IADD
#undef ISUB
#undef ISRA
#undef ISLL
#define V __m512
#define VI __m512i
#define M __mmask16
#define TGT __attribute__((target("avx512f")))
#define SET1 _mm512_set1_ps
#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define MIN _mm512_min_ps
#define MAX _mm512_max_ps
#define GT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define BLEND(a, b, m) _mm512_mask_blend_ps(m, a, b)
#define CASTI _mm512_castps_si512
#define CASTF _mm512_castsi512_ps
#define ISET1 _mm512_set1_epi32
#define IADD _mm512_add_epi32
#define ISUB _mm512_sub_epi32
#define ISRA _mm512_srai_epi32
#define ISLL _mm512_slli_epi32

static TGT void exp_avx512(const float *src, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 a = _mm512_loadu_ps(src + i), b = _mm512_loadu_ps(src + i + 16);
        EXP_BODY(a);
        EXP_BODY(b);
        _mm512_storeu_ps(dst + i, a);
        _mm512_storeu_ps(dst + i + 16, b);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, src + i);
        EXP_BODY(x);
        _mm512_mask_storeu_ps(dst + i, m, x);
    }
}
#endif

typedef void (*exp_fn)(const float *, float *, int64_t);

/* The best version the CPU has, or the one HG_VMATH=portable|avx2|avx512 names (read once; a
 * set the CPU lacks falls back to the best it has): lets tests check that all give the same
 * bits. */
static exp_fn choose(void)
{
    const char *env = getenv("HG_VMATH");
    bool any = !env || !*env;
    if (env && strcmp(env, "portable") == 0) return exp_portable;
#ifdef HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && (any || strcmp(env, "avx512") == 0)) return exp_avx512;
    if (__builtin_cpu_supports("avx2")) return exp_avx2;
#endif
    (void)any;
    return exp_portable;
}

static exp_fn chosen(void)
{
    static exp_fn fn; /* racing first calls all store the same pointer */
    exp_fn f = __atomic_load_n(&fn, __ATOMIC_RELAXED);
    if (!f) {
        f = choose();
        __atomic_store_n(&fn, f, __ATOMIC_RELAXED);
    }
    return f;
}

void hg_vexp_f32(const float *src, float *dst, int64_t n) { chosen()(src, dst, n); }

const char *hg_vexp_impl(void)
{
    exp_fn f = chosen();
#ifdef HAVE_X86
    if (f == exp_avx512) return "avx512";
    if (f == exp_avx2) return "avx2";
#endif
    return f == exp_portable ? "portable" : "?";
}
