/* Float32 GEMM for AVX-512 on one thread (see sgemm_packed.h): a block of KC rows of op(B) by up
 * to NC columns is packed into panels NR wide; each panel of MR rows of op(A), read in place,
 * then runs the micro-kernel against every B panel, keeping an MR x NR tile of C in 24 zmm
 * registers for the whole KC loop.
 *
 * Why our own: OpenBLAS 0.3's SKYLAKEX sgemm reached 131 GFLOP/s on one core of the 2-core
 * AVX-512 machine (1024^3), 66% of the core's 197 GFLOP/s FMA peak (a register-only FMA loop),
 * and 45% on ResNet-18's deep convolutions at batch 1 (512 x 49 x 4608), where ONNX Runtime's
 * kernels reach 80%. The micro-kernel runs at about 94% of the peak (perf: 70% of a 1024^3
 * product's time at 130 GFLOP/s overall, before the packing of A was dropped). Tile 12 x 32:
 * per k, two loads of B and twelve broadcasts of A feed 24 FMAs (12 cycles on two FMA ports). */
#include "kernels/cpu/sgemm_packed.h"

#include <string.h>

#include "core/thread_buf.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "kernels/cpu/post_avx512.h"
#include "kernels/cpu/tr16.h"
#define SG_HAVE_X86 1
#define TGT __attribute__((target("avx512f,avx2,fma")))
#endif

#define MR 12
#define NR 32
/* KC: the A panel (MR x KC, 12 KiB) and a B panel (KC x NR, 32 KiB) fit L1 (48 KiB); NC: the
 * packed B block (KC x NC, 1 MiB) fits L2 (2 MiB). */
#define KC 256
#define NC 1024

/* ---- per-thread packing buffers ------------------------------------------------------------ */

/* Each thread keeps one buffer (an A panel then a B block) for its life, freed when it exits:
 * a product runs on one thread, so nothing here is shared. */
#define BUF_FLOATS ((size_t)MR * KC + (size_t)KC * NC)

static hg_thread_buf g_buf = HG_THREAD_BUF_INIT(BUF_FLOATS * sizeof(float));

static float *thread_buf(void) { return hg_thread_buf_get(&g_buf); }

#ifdef SG_HAVE_X86

/* ---- packing ------------------------------------------------------------------------------- */

/* The first n lanes of a vector (n <= 0: none, n >= 16: all): a panel's two vectors of
 * columns take lane_mask(nr) and lane_mask(nr - 16). */
static inline __mmask16 lane_mask(int64_t n)
{
    return (__mmask16)(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

/* Rows [i0, i0 + mr) of op(A) (mr <= MR), columns [k0, k0 + kc), as one panel: for each k, MR
 * values, zero past mr. op(A)(i, k) is A[i * lda + k], or A[k * lda + i] when ta. */
TGT static void pack_a(bool ta, const float *A, int64_t lda, int64_t i0, int mr, int64_t k0,
                       int64_t kc, float *restrict dst)
{
    if (ta) {
        const __mmask16 m = (__mmask16)((1u << mr) - 1);
        for (int64_t k = 0; k < kc; k++)
            _mm512_mask_storeu_ps(dst + k * MR, 0x0fff,
                                  _mm512_maskz_loadu_ps(m, A + (k0 + k) * lda + i0));
        return;
    }
    for (int r = 0; r < MR; r++) {
        const float *restrict s = A + (i0 + r) * lda + k0;
        if (r < mr)
            for (int64_t k = 0; k < kc; k++) dst[k * MR + r] = s[k];
        else
            for (int64_t k = 0; k < kc; k++) dst[k * MR + r] = 0;
    }
}

/* dst[k * NR + r] = src[r * lds + k] for k < nk (<= 16), r < 16 (zero for r >= nr): the
 * transposed B's panels through tr16.h (element by element, a cycle each: 10-25% of a weight
 * gradient's product). */
TGT static void pack_bt16(const float *src, int64_t lds, int64_t nr, int64_t nk, float *dst)
{
    __m512 t[16];
    hg_tr16_f32(src, lds, nr, nk, t);
    for (int k = 0; k < nk; k++) _mm512_storeu_ps(dst + k * NR, t[k]);
}

/* The block of op(B) at rows [k0, k0 + kc), columns [j0, j0 + nc) as panels of NR columns:
 * panel q holds, for each k, columns q*NR .. q*NR + NR - 1 (zero past nc). op(B)(k, n) is
 * B[k * ldb + n], or B[n * ldb + k] when tb. */
TGT static void pack_b(bool tb, const float *B, int64_t ldb, int64_t k0, int64_t kc, int64_t j0,
                       int64_t nc, float *restrict dst)
{
    for (int64_t q = 0; q < nc; q += NR, dst += NR * kc) {
        int64_t nr = nc - q < NR ? nc - q : NR;
        if (!tb) {
            const __mmask16 m0 = lane_mask(nr), m1 = lane_mask(nr - 16);
            for (int64_t k = 0; k < kc; k++) {
                const float *s = B + (k0 + k) * ldb + j0 + q;
                _mm512_store_ps(dst + k * NR, _mm512_maskz_loadu_ps(m0, s));
                _mm512_store_ps(dst + k * NR + 16, _mm512_maskz_loadu_ps(m1, s + 16));
            }
        } else {
            for (int h = 0; h < NR; h += 16)
                for (int64_t k = 0; k < kc; k += 16)
                    pack_bt16(B + (j0 + q + h) * ldb + k0 + k, ldb, nr - h,
                              kc - k < 16 ? kc - k : 16, dst + k * NR + h);
        }
    }
}

/* ---- micro-kernel -------------------------------------------------------------------------- */

#define SG_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* C[0..mr) x [0..nr) = post(alpha * (a . b) + beta * C + bias[r]) over kc steps (bias NULL: no
 * bias; post NULL: none); beta 0 does not read C (it may hold NaN). Row r of the A panel at
 * step k is a[r * ars + k * acs]: a packed panel (ars 1, acs MR) or the rows of A read in place
 * (ars lda, acs 1), which then has all MR rows. Step k of the B panel is the NR floats at
 * b + k * bcs (packed: NR). Rows past mr (a packed panel's zero padding) and columns past nr
 * are computed and never stored.
 * The rows are addressed from four bases at ars and 2 ars, so that the loop needs few registers
 * besides the 24 accumulators. */
TGT __attribute__((noinline)) static void kernel(int64_t kc, const float *a, int64_t ars,
                                                 int64_t acs, const float *b, int64_t bcs, float *c,
                                                 int64_t ldc, int mr, int nr, float alpha,
                                                 float beta, const float *bias, const hg_post *post)
{
#define SG_ZERO(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
    SG_ROWS(SG_ZERO)
#undef SG_ZERO
    const float *a0 = a, *a3 = a + 3 * ars, *a6 = a + 6 * ars, *a9 = a + 9 * ars;
    for (int64_t k = 0; k < kc; k++, a0 += acs, a3 += acs, a6 += acs, a9 += acs, b += bcs) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#define SG_FMA(r, p)                                                                            \
    {                                                                                           \
        const __m512 av = _mm512_set1_ps(p);                                                    \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                             \
        c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                             \
    }
#define SG_FMA3(r0, r1, r2, base)                                                               \
    SG_FMA(r0, base[0]) SG_FMA(r1, base[ars]) SG_FMA(r2, base[2 * ars])
        SG_FMA3(0, 1, 2, a0)
        SG_FMA3(3, 4, 5, a3)
        SG_FMA3(6, 7, 8, a6)
        SG_FMA3(9, 10, 11, a9)
#undef SG_FMA3
#undef SG_FMA
    }
    const __mmask16 m0 = lane_mask(nr), m1 = lane_mask(nr - 16);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#define SG_STORE(r)                                                                             \
    if (r < mr) {                                                                               \
        float *cr = c + (int64_t)(r) * ldc;                                                     \
        __m512 v0 = _mm512_mul_ps(va, c##r##0), v1 = _mm512_mul_ps(va, c##r##1);                \
        if (beta != 0) {                                                                        \
            v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), v0);                        \
            v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), v1);                   \
        }                                                                                       \
        if (bias) {                                                                             \
            const __m512 br = _mm512_set1_ps(bias[r]);                                          \
            v0 = _mm512_add_ps(v0, br);                                                         \
            v1 = _mm512_add_ps(v1, br);                                                         \
        }                                                                                       \
        _mm512_mask_storeu_ps(cr, m0, hg_post_m512(post, v0));                                  \
        _mm512_mask_storeu_ps(cr + 16, m1, hg_post_m512(post, v1));                             \
    }
    SG_ROWS(SG_STORE)
#undef SG_STORE
}

/* ---- the product --------------------------------------------------------------------------- */

/* Loop order: blocks of NC columns and KC steps; each B block is packed once, then every MR-row
 * panel of op(A), read in place, runs against all of its panels. The A panel (MR x KC, 12 KiB)
 * stays in L1 across the B panels, which come from L2. Packing A as BLIS does (a block of MC
 * rows, then the panels) was slower on every shape measured, for the scalar transposing copy it
 * costs: 512 x 49 x 4608 1229 -> 1194 us, 256 x 196 x 2304 1172 -> 1010 us, 64 x 3136 x 576
 * 1472 -> 1180 us (2 threads, one share of C each). Packed panels: a last partial one, whose zero
 * padding stands for the rows past M, and every panel of a transposed A (its 12 values per k
 * lie in one row of A: read in place, the panel spans kc cache lines, a data gradient's
 * 14-24% slower). */
TGT static void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc, const float *bias, const hg_post *post, float *buf)
{
    float *pa = buf, *pb = buf + (size_t)MR * KC;
    const int64_t ars = ta ? 1 : lda, acs = ta ? lda : 1; /* op(A)(i, k) = A[i * ars + k * acs] */
    /* K in equal blocks of at most KC (576 = 3 x 192, not 256 + 256 + 64: each block pays for
     * loading and storing the C tiles) */
    const int64_t kblocks = (K + KC - 1) / KC, kstep = (K + kblocks - 1) / kblocks;
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += kstep) {
            int64_t kc = K - pc < kstep ? K - pc : kstep;
            float bk = pc == 0 ? beta : 1.0f; /* later blocks add to the first's result */
            const bool last = pc + kc >= K;    /* the epilogue goes with the last block */
            pack_b(tb, B, ldb, pc, kc, jc, nc, pb);
            for (int64_t ir = 0; ir < M; ir += MR) {
                int mr = (int)(M - ir < MR ? M - ir : MR);
                const float *ap = A + ir * ars + pc * acs;
                int64_t rs = ars, cs = acs;
                if (ta || mr < MR) {
                    pack_a(ta, A, lda, ir, mr, pc, kc, pa);
                    ap = pa;
                    rs = 1;
                    cs = MR;
                }
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int nr = (int)(nc - jr < NR ? nc - jr : NR);
                    kernel(kc, ap, rs, cs, pb + jr * kc, NR, C + ir * ldc + jc + jr, ldc, mr, nr,
                           alpha, bk, last && bias ? bias + ir : NULL, last ? post : NULL);
                }
            }
        }
    }
}

bool hg_sgemm_packed_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                            const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                            float *C, int64_t ldc, const float *bias, const hg_post *post)
{
    if (!__builtin_cpu_supports("avx512f")) return false;
    float *buf = thread_buf();
    if (!buf) return false;
    if (post && post->kind == HG_POST_NONE) post = NULL;
    sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, post, buf);
    return true;
}

#else

bool hg_sgemm_packed_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                            const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                            float *C, int64_t ldc, const float *bias, const hg_post *post)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B;
    (void)ldb, (void)beta, (void)C, (void)ldc, (void)bias, (void)post, (void)thread_buf;
    return false;
}

#endif
