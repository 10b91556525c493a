/* Row-major GEMM (see gemm.h): products with one small side, and wide shallow ones (WIDE_N),
 * go to our own kernels (gemm_small.h, vectorised per instruction set and chosen at run time),
 * everything else to the linked CBLAS. The only file that calls ?gemm / ?gemv (through
 * gemm_tmpl.h, the entry points' body, included once per element type). */
#include "kernels/cpu/gemm.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "hybridgluon/hybridgluon.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/gemm_small.h"
#include "kernels/cpu/sgemm_packed.h"

/* Multiply-adds per chunk of a batched loop below which splitting over threads does not pay. */
#define BATCH_GRAIN_WORK 65536
/* Multiply-adds from which a BLAS product is split over the pool's threads (about 10 us). */
#define SPLIT_MNK 1000000.0

/* ---- own kernels for one small side ------------------------------------------------------ */

/* A product whose M or N (or, for the row-update kernel, K) is at most this goes to our kernels
 * when its layout suits them: the BLAS's gemm packs whole panels for such shapes (3-4x slower at
 * M = 8), and its gemv (M == 1) wakes its own threads for a few microseconds of work. */
#define SMALL_SIDE 8
/* Wide, shallow products (a pointwise convolution over a whole image: N = H*W >= WIDE_N output
 * positions, K <= WIDE_K input channels, M <= WIDE_M filters) also go to the row-update kernel:
 * each panel of B is then read once from cache by every block of rows, where the BLAS packs
 * B's panel and A for a product too shallow to repay it. Measured against OpenBLAS's sgemm on
 * the 2-core AVX-512 machine (2 threads, minimum of 15): MobileNetV2's 1x1 shapes at batch 1,
 * M x N x K = 96 x 12544 x 16, 144 x 3136 x 24, 24 x 3136 x 144, 192 x 784 x 32, 1.2-1.6x
 * faster; 256 x 3136 x 64 and 512 x 784 x 128 1.15x; but 0.9x at K = 256 with M = 1024, slower
 * still at N = 49 or 196 (its tail vectors), equal at K = 384 to 512. On the 2-core AVX2
 * machine (AMD EPYC) the AVX2 build, with 4 x 24 tiles (12 accumulators: the B vectors of a k
 * are loaded first, then each row's A(i, k) is broadcast, so that the tile fits the 16
 * registers), bias and activation applied in registers, and wide products split by columns
 * (small_axpy), against OpenBLAS on 64-byte-aligned operands, 2 threads, median of 15 paired
 * rounds: 96 x 12544 x 16 1.02x, 32 x 12544 x 32 1.11x, 16 x 12544 x 32 1.17x,
 * 144 x 3136 x 24 1.08x, 24 x 3136 x 144 1.12x, 192 x 784 x 32 1.17x, 32 x 784 x 192 1.20x,
 * before the epilogue pass that OpenBLAS's products need after them; MobileNetV2 at batch 1
 * 1.04x and at batch 32 1.06x (benchmarks/ab_switch.py). Operands at 16 bytes past a cache
 * line (NumPy's) made every 32-byte load of the tile split across two lines: 0.7-0.95x, which
 * had kept the route AVX-512 only. At N = 49 it stays 0.5-0.65x, at N = 196 with K or M over
 * 256 0.75-0.8x: those stay with the BLAS. */
#define WIDE_N 768
#define WIDE_K 256
#define WIDE_M 512

/* Where the packed AVX-512 kernel (sgemm_packed.c) takes the products the BLAS would run, it
 * beats the row-update kernel on two kinds of wide shallow products, measured as 1x1
 * convolutions (2 threads, batch 32, images from memory, medians of 9, two runs):
 * - many filters for few channels (M >= 2K: each row of B feeds many rows of C):
 *   16 -> 96 channels at 112 x 112 21 -> 11.8 ms, 24 -> 144 at 56 x 56 5.2 -> 4.4,
 *   64 -> 256 at 56 x 56 24.4 -> 16.0 (batch 1: 345 -> 195 us, 138 -> 128 us);
 * - deep and long (K >= 128, N >= 2048): 144 -> 24 at 56 x 56 7.2-7.7 -> 5.4-6.1 ms.
 * The row-update kernel stays ahead on the rest: 32 -> 16 at 112 x 112 3.8-4.1 against
 * 4.0-4.5 ms, 144 -> 32 and 192 -> 32 at 28 x 28 by 15%; equal elsewhere (96 -> 24, 192 -> 64,
 * 256 -> 64, 128 -> 128). */
static bool packed_for_f32(int64_t M, int64_t N, int64_t K);

static bool wide_not_packed(int64_t M, int64_t N, int64_t K)
{
    return !packed_for_f32(M, N, K) || (M < 2 * K && !(K >= 128 && N >= 2048));
}
/* Cost (small_cost's units, about 1/20 ns each on a 2.3 GHz AVX-512 core) from which a small-side
 * product is split into one share per thread. Posting a job to spinning workers and waiting for
 * them take well under a microsecond, and each core then streams its own share of the weights
 * from its own L2 at every call. Measured on the 2-core AVX-512 machine (C predictor, MLP
 * 512-256-128-2 at batch 1): no split 7.9 us, 512x256 layer split 5.1 us, both big layers split
 * (this threshold) 4.9 us. */
#define SPLIT_COST 15000.0

static atomic_int g_kernel = -2; /* -2: not chosen yet */

static int best_kernel(void)
{
#ifdef HG_GEMM_HAVE_X86
    if (__builtin_cpu_supports("avx512f")) return HG_GEMM_KERNEL_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return HG_GEMM_KERNEL_AVX2;
#endif
    return HG_GEMM_KERNEL_PORTABLE;
}

static int clamp_kernel(int level)
{
    int best = best_kernel();
    return level < 0 || level > best ? best : level;
}

static int kernel_from_env(void)
{
    static const char *const names[] = {"blas", "portable", "avx2", "avx512"};
    const char *env = getenv("HG_GEMM_KERNEL");
    if (env)
        for (int i = 0; i < 4; i++)
            if (strcmp(env, names[i]) == 0) return clamp_kernel(i);
    return best_kernel();
}

int hg_gemm_kernel(void)
{
    int k = atomic_load_explicit(&g_kernel, memory_order_relaxed);
    if (k == -2) {
        k = kernel_from_env(); /* racing first calls all compute the same value */
        atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    }
    return k;
}

int hg_gemm_set_kernel(int level)
{
    int k = clamp_kernel(level);
    atomic_store_explicit(&g_kernel, k, memory_order_relaxed);
    return k;
}

#define MAX_PARTS 64 /* at least the pool's largest thread count */

typedef struct {
    hg_gemm_small_args p;
    hg_gemm_dot_fn dot;
    hg_gemm_axpy_fn axpy;
    bool by_rows;  /* axpy: split over rows of C (else over columns) */
    int64_t units; /* blocks of 4 rows of B (dot) or of 64 columns / 4 rows of C (axpy) */
    int parts;     /* shares of the units, one per thread */
    atomic_bool taken[MAX_PARTS];
} small_job;

/* Units [b, e): multiples of every kernel's tile, so that only the last share has a partial
 * tile. */
static void run_units(const small_job *j, int64_t b, int64_t e)
{
    const hg_gemm_small_args *p = &j->p;
    if (j->dot) j->dot(p, b * 4, e * 4 < p->N ? e * 4 : p->N);
    else if (j->by_rows) j->axpy(p, b * 4, e * 4 < p->M ? e * 4 : p->M, 0, p->N);
    else j->axpy(p, 0, p->M, b * 64, e * 64 < p->N ? e * 64 : p->N);
}

/* Called once per share, by whichever thread the pool gives it to: the thread takes the share
 * numbered after its CPU if still free, else the next free one. A weight matrix read at every
 * call is then split the same way between the cores each time and each part stays in the L2
 * of the core that reads it; handing shares out in arrival order instead moves them between
 * cores whenever the caller and the worker swap places (half the speed of L2, measured). */
static void share_range(void *ctx, int64_t b, int64_t e)
{
    small_job *j = ctx;
    int cpu = sched_getcpu();
    int first = cpu < 0 ? 0 : cpu % j->parts;
    for (int64_t c = b; c < e; c++)
        for (int i = 0; i < j->parts; i++) {
            int part = (first + i) % j->parts;
            if (!atomic_exchange_explicit(&j->taken[part], true, memory_order_relaxed)) {
                run_units(j, j->units * part / j->parts, j->units * (part + 1) / j->parts);
                break;
            }
        }
}

/* The time a small-side product takes on one thread, in SPLIT_COST's units: one unit per two
 * multiply-adds (compute), per two elements of B (read from L2 or further, the bound for M = 1),
 * and four per element of C (written: the bound for K = 1). Fit to the kernels' timings. */
static double small_cost(const hg_gemm_small_args *p)
{
    double m = (double)p->M, n = (double)p->N, k = (double)p->K;
    return 0.5 * m * n * k + 0.5 * n * k + 4 * m * n;
}

/* Runs the job over its units, split into one share per thread when each share's cost pays
 * for waking the pool. */
static void small_run(small_job *j)
{
    double shares = small_cost(&j->p) / SPLIT_COST;
    int threads = shares >= 2 ? hg_get_num_threads() : 1;
    int parts = shares < threads ? (int)shares : threads;
    if (parts > j->units) parts = (int)j->units;
    if (parts > MAX_PARTS) parts = MAX_PARTS;
    if (parts < 2) {
        run_units(j, 0, j->units);
        return;
    }
    j->parts = parts;
    for (int i = 0; i < parts; i++) atomic_init(&j->taken[i], false);
    hg_parallel_for(parts, 1, share_range, j);
}

static void small_dot(small_job *j)
{
    j->axpy = NULL;
    j->units = (j->p.N + 3) / 4;
    small_run(j);
}

/* wide: the product took the wide shallow route (small_route's SMALL_AXPY_WIDE). */
static void small_axpy(small_job *j, bool wide)
{
    const hg_gemm_small_args *p = &j->p;
    j->dot = NULL;
    /* Wide products on AVX2 split by columns: each core then reads half of B, and all of the
     * (small) A, where split by rows each core streams all of B from L3 (2 threads, against
     * OpenBLAS: 32 x 12544 x 32 0.92x by rows, 1.11x by columns; 192 x 784 x 32 0.97x, 1.17x).
     * The AVX-512 route keeps the split it was measured with. */
    j->by_rows = p->M > SMALL_SIDE && !(wide && hg_gemm_kernel() == HG_GEMM_KERNEL_AVX2);
    j->units = j->by_rows ? (p->M + 3) / 4 : (p->N + 63) / 64;
    small_run(j);
}

/* Which of our small-side kernels a product goes to (SMALL_NONE: the BLAS-sized path). */
enum { SMALL_NONE, SMALL_DOT, SMALL_AXPY, SMALL_AXPY_WIDE, SMALL_AXPY_T };

static int small_route(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                       int64_t ldc)
{
    if (hg_gemm_kernel() == HG_GEMM_KERNEL_BLAS) return SMALL_NONE;
    /* Which operands run contiguously along which index: op(A) along k (rows) or i (columns),
     * op(B) along k (columns) or n (rows). A single row or column with unit stride is both. */
    bool a_k = !ta || (M == 1 && lda == 1), a_i = ta || (K == 1 && lda == 1);
    bool b_k = tb || (N == 1 && ldb == 1), b_n = !tb || (K == 1 && ldb == 1);
    if (a_k && b_k && (M <= SMALL_SIDE || N <= SMALL_SIDE)) return SMALL_DOT;
    bool wide = hg_gemm_kernel() >= HG_GEMM_KERNEL_AVX2 && N >= WIDE_N && K <= WIDE_K &&
                M <= WIDE_M && wide_not_packed(M, N, K);
    if (b_n && wide) return SMALL_AXPY_WIDE;
    if (b_n && (M <= SMALL_SIDE || K <= SMALL_SIDE)) return SMALL_AXPY;
    if (a_i && N == 1 && ldc == 1) return SMALL_AXPY_T;
    return SMALL_NONE;
}

/* Our kernel for C = alpha op(A) op(B) + beta C when a side is small and the operands are laid
 * out as it needs; false leaves the product to the BLAS. C^T = op(B)^T op(A)^T lets a small N
 * use the same kernels with C addressed transposed. */
static void small_run_f32(int route, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                          float *C, int64_t ldc, const float *bias, const hg_post *post)
{
    int level = hg_gemm_kernel();
    small_job j = {.p = {.K = K, .alpha = alpha, .beta = beta}};
#ifdef HG_GEMM_HAVE_X86
    if (level == HG_GEMM_KERNEL_AVX512) {
        j.dot = hg_gemm_dot_avx512;
        j.axpy = hg_gemm_axpy_avx512;
    } else if (level == HG_GEMM_KERNEL_AVX2) {
        j.dot = hg_gemm_dot_avx2;
        j.axpy = hg_gemm_axpy_avx2;
    } else
#endif
    {
        j.dot = hg_gemm_dot_portable;
        j.axpy = hg_gemm_axpy_portable;
    }
    hg_gemm_small_args *p = &j.p;
    if (route == SMALL_DOT) {
        bool swap = M > SMALL_SIDE || (N < M);
        p->A = swap ? B : A;
        p->lda = swap ? ldb : lda;
        p->B = swap ? A : B;
        p->ldb = swap ? lda : ldb;
        p->M = swap ? N : M;
        p->N = swap ? M : N;
        p->C = C;
        p->rsc = swap ? 1 : ldc;
        p->csc = swap ? ldc : 1;
        small_dot(&j);
    } else if (route == SMALL_AXPY || route == SMALL_AXPY_WIDE) {
        *p = (hg_gemm_small_args){M, N,   K, alpha, beta, A,    0,   ta ? 1 : lda, ta ? lda : 1,
                                  B, ldb, C, ldc,   1,    bias, post};
        small_axpy(&j, route == SMALL_AXPY_WIDE);
    } else { /* C^T = op(B)^T op(A)^T, one row of N == 1 */
        *p = (hg_gemm_small_args){1, M, K, alpha, beta, B, 0, 0, tb ? 1 : ldb, A, ta ? lda : 1,
                                  C, 0, 1};
        small_axpy(&j, false);
    }
}

static bool small_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc)
{
    int route = small_route(ta, tb, M, N, K, lda, ldb, ldc);
    if (route == SMALL_NONE) return false;
    small_run_f32(route, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, NULL);
    return true;
}

/* hg_gemm_epi's small-side part: 1 done (the row-update kernel applies bias and post to each
 * row of a tile as it stores it), 0 not a small-side product, -1 a small-side product in
 * another form (the caller applies them). */
static int small_epi_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                         float *C, int64_t ldc, const float *bias, const hg_post *post)
{
    int route = small_route(ta, tb, M, N, K, lda, ldb, ldc);
    if (route == SMALL_NONE) return 0;
    if (route != SMALL_AXPY && route != SMALL_AXPY_WIDE) return -1;
    small_run_f32(route, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, post);
    return 1;
}

/* The products the BLAS would run, on our AVX-512 kernel (sgemm_packed.c) when the small
 * kernels' set is AVX-512 (HG_GEMM_KERNEL=blas keeps OpenBLAS's; AVX2 machines have only it),
 * except the smallest and the narrowest, where OpenBLAS's small-matrix kernels are faster (our
 * tile is 32 columns wide). Against OpenBLAS, 2 threads, one share of C each (minimum of 7):
 * 512 x 49 x 4608 1.12x, 256 x 49 x 2304 1.13x, 256 x 196 x 2304 1.04x, 128 x 784 x 1152 1.07x,
 * 64 x 3136 x 576 1.07x, 1024^3 1.03x; but 64^3 0.75x and 512 x 16 x 512 0.92x. From 1e6
 * multiply-adds (nd.dot, 2 threads, minimum of 7, noisy to +-10%): 128^3 32 -> 20 us,
 * 512 x 32 x 128 29 -> 20, 32 x 256 x 256 35 -> 25, 256 x 49 x 256 (ResNet-18's 14x14
 * Winograd products at batch 1, that layer 1.2 -> 1.07 ms) 47 -> 39; 100^3 15 -> 20.
 * No AVX2 counterpart: a prototype with the weights packed once (output channels on the lanes,
 * 16 x 6 tiles, K in blocks of 128, bias and clip applied in registers and the tile transposed
 * into C's rows, B unpacked or in 8-channel blocks) ran at 0.8-1.1x OpenBLAS plus its epilogue
 * pass on MobileNetV2's deep 1x1 products at batch 1 (960 x 49 x 160, 160 x 49 x 960,
 * 576 x 196 x 96, 384 x 196 x 64, ...; one thread, cold weights, median of 41 paired rounds on
 * the 2-core AMD EPYC machine): OpenBLAS's packing is cheaper than its kernel is fast. */
#define PACKED_MIN_N 24
#define PACKED_MIN_MNK 1e6

static bool packed_for_f32(int64_t M, int64_t N, int64_t K)
{
    return hg_gemm_kernel() == HG_GEMM_KERNEL_AVX512 && N >= PACKED_MIN_N &&
           (double)M * (double)N * (double)K >= PACKED_MIN_MNK;
}

/* One thread's part of a product that packed_for_f32 accepted; false (no AVX-512, or no
 * buffer): the BLAS runs it. */
static bool packed_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                       float *C, int64_t ldc, const float *bias, const hg_post *post)
{
    return hg_sgemm_packed_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, post);
}

static inline bool packed_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                              const double *A, int64_t lda, const double *B, int64_t ldb,
                              double beta, double *C, int64_t ldc, const double *bias,
                              const hg_post *post)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B;
    (void)ldb, (void)beta, (void)C, (void)ldc, (void)bias, (void)post;
    return false; /* float64 products all go to the BLAS */
}

static inline bool small_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                             const double *A, int64_t lda, const double *B, int64_t ldb,
                             double beta, double *C, int64_t ldc)
{
    return false; /* float64 products all go to the BLAS */
}

int hg_gemm_route_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                      int64_t ldc)
{
    if (small_route(ta, tb, M, N, K, lda, ldb, ldc) != SMALL_NONE) return HG_GEMM_ROUTE_SMALL;
    return packed_for_f32(M, N, K) ? HG_GEMM_ROUTE_PACKED : HG_GEMM_ROUTE_BLAS;
}

/* ---- the GEMM entry points ---------------------------------------------------------------- */

#define T float
#define NAME(x) x##_f32
#define GEMM_BLAS HG_CBLAS(sgemm)
#define GEMM_GEMV HG_CBLAS(sgemv)
#define GEMM_SMALL small_f32
#define GEMM_PACKED packed_f32
#define GEMM_PACKED_FOR packed_for_f32
#define GEMM_SMALL_EPI small_epi_f32
#define GEMM_POST hg_post_f32
#include "kernels/cpu/gemm_tmpl.h"
#undef T
#undef NAME
#undef GEMM_BLAS
#undef GEMM_GEMV
#undef GEMM_SMALL
#undef GEMM_PACKED
#undef GEMM_PACKED_FOR
#undef GEMM_SMALL_EPI
#undef GEMM_POST

#define T double
#define NAME(x) x##_f64
#define GEMM_BLAS HG_CBLAS(dgemm)
#define GEMM_GEMV HG_CBLAS(dgemv)
#define GEMM_SMALL small_f64
#define GEMM_PACKED packed_f64
#define GEMM_PACKED_FOR(M, N, K) false
#define GEMM_SMALL_EPI(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, post) 0
#define GEMM_POST hg_post_f64
#include "kernels/cpu/gemm_tmpl.h"
#undef T
#undef NAME
#undef GEMM_BLAS
#undef GEMM_GEMV
#undef GEMM_SMALL
#undef GEMM_PACKED
#undef GEMM_PACKED_FOR
#undef GEMM_SMALL_EPI
#undef GEMM_POST
