/* The recurrent product of the fused RNN kernels, float32: C (M x Ncols) = A (M x K) op(B),
 * with op(B) (K x Ncols) packed once per call into column panels, then reused by every step.
 *
 * Why not the BLAS: a step multiplies a few dozen rows by the whole recurrent weight matrix
 * (650 x 2600 for the usual LSTM), and OpenBLAS packs that matrix again on every call, which
 * cost as much as the multiplication itself. Packed once per layer and direction, a step only
 * streams the panels (each stays in L2 while every row block of A passes over it).
 *
 * Panels are W columns wide (32 with AVX-512F, 16 with AVX2+FMA), zero-padded, and C must
 * have room for npanels * W columns (ldc >= that): the padding columns are written with
 * zeros and ignored. Without AVX2 (or with HG_GEMM_KERNEL=blas/portable) callers use hg_gemm.
 * Static functions for ops/rnn_kernels.c; thread-safe (the pool splits the panels).
 */
#ifndef HG_KERNELS_CPU_RNN_GEMM_H
#define HG_KERNELS_CPU_RNN_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/parallel.h"
#include "kernels/cpu/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HG_RNN_GEMM_X86 1
#endif

#define HG_RNN_PANEL_MAX 32 /* the widest panel: what workspaces are sized for */

/* Panel width in effect (0: no packed kernel, use hg_gemm). */
static inline int64_t hg_rnn_panel_width(void)
{
#ifdef HG_RNN_GEMM_X86
    int level = hg_gemm_kernel();
    if (level == HG_GEMM_KERNEL_AVX512) return 32;
    if (level == HG_GEMM_KERNEL_AVX2) return 16;
#endif
    return 0;
}

static inline int64_t hg_rnn_round_up(int64_t n, int64_t w) { return (n + w - 1) / w * w; }

/* Packs op(B) (K x Ncols; B stored Ncols x K when tb) into ceil(Ncols/W) panels of K x W. */
static void hg_rnn_pack(const float *B, bool tb, int64_t K, int64_t Ncols, int64_t ldb, int64_t W,
                        float *P)
{
    int64_t np = (Ncols + W - 1) / W;
    for (int64_t p = 0; p < np; p++) {
        float *pp = P + p * K * W;
        for (int64_t c = 0; c < W; c++) {
            int64_t col = p * W + c;
            if (col >= Ncols) {
                for (int64_t k = 0; k < K; k++) pp[k * W + c] = 0;
            } else if (tb) {
                const float *src = B + col * ldb;
                for (int64_t k = 0; k < K; k++) pp[k * W + c] = src[k];
            } else {
                for (int64_t k = 0; k < K; k++) pp[k * W + c] = B[k * ldb + col];
            }
        }
    }
}

#ifdef HG_RNN_GEMM_X86
/* The tiles: mr rows of C (mr <= MR_FULL: 8 with AVX-512, 6 with AVX2) over one panel, in
 * mr x 2 accumulators. Each row count is its own copy of the loop, with mr a constant, so that
 * the accumulators live in registers: with one loop for every mr (an accumulator array indexed
 * by the run-time count), GCC kept the array in memory and stored all twelve accumulators at
 * every k of the full tile (twelve 32-byte stores for twelve multiply-adds, bound by the store
 * port). Measured on the 2-core AVX2 machine (AMD EPYC) with benchmarks/bench_rnn.py's word
 * LM (two LSTM layers of 650; per step the product 32 x 2600 x 650), three alternating runs of
 * each build: the tile had run at about a third of OpenBLAS's rate per multiply-add (40% of the
 * time for a quarter of the multiply-adds); inference at batch 32 went from 355-370 ms to
 * 273-292 ms, the training step from 1060 ms to 880 ms. */
#define RNN_TILE(NAME, TGT, V, VW, SET0, LOAD, STORE, BCAST, FMA, MR_FULL)                     \
    TGT static inline __attribute__((always_inline)) void NAME##_rows(                         \
        const int mr, int64_t K, const float *A, int64_t lda, const float *pp, float *C,       \
        int64_t ldc)                                                                            \
    {                                                                                           \
        V acc[8][2];                                                                            \
        _Pragma("GCC unroll 8") for (int r = 0; r < mr; r++) acc[r][0] = acc[r][1] = SET0();   \
        for (int64_t k = 0; k < K; k++) {                                                       \
            V b0 = LOAD(pp + k * 2 * (VW)), b1 = LOAD(pp + k * 2 * (VW) + (VW));                \
            _Pragma("GCC unroll 8") for (int r = 0; r < mr; r++)                                \
            {                                                                                   \
                V a = BCAST(A + r * lda + k);                                                   \
                acc[r][0] = FMA(a, b0, acc[r][0]);                                              \
                acc[r][1] = FMA(a, b1, acc[r][1]);                                              \
            }                                                                                   \
        }                                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < mr; r++)                                    \
        {                                                                                       \
            STORE(C + r * ldc, acc[r][0]);                                                      \
            STORE(C + r * ldc + (VW), acc[r][1]);                                               \
        }                                                                                       \
    }                                                                                           \
    /* one copy per row count up to MR_FULL (callers pass no more), each a constant */         \
    TGT static void NAME(int mr, int64_t K, const float *A, int64_t lda, const float *pp,       \
                         float *C, int64_t ldc)                                                 \
    {                                                                                           \
        switch (mr) {                                                                           \
        case 1: NAME##_rows(1, K, A, lda, pp, C, ldc); break;                                   \
        case 2: NAME##_rows(2, K, A, lda, pp, C, ldc); break;                                   \
        case 3: NAME##_rows(3, K, A, lda, pp, C, ldc); break;                                   \
        case 4: NAME##_rows(4, K, A, lda, pp, C, ldc); break;                                   \
        case 5: NAME##_rows(5, K, A, lda, pp, C, ldc); break;                                   \
        case 6: NAME##_rows(6, K, A, lda, pp, C, ldc); break;                                   \
        case 7:                                                                                 \
            if ((MR_FULL) >= 7) NAME##_rows(7, K, A, lda, pp, C, ldc);                            \
            break;                                                                              \
        case 8:                                                                                 \
            if ((MR_FULL) >= 8) NAME##_rows(8, K, A, lda, pp, C, ldc);                            \
            break;                                                                              \
        default: break;                                                                         \
        }                                                                                       \
    }

__attribute__((target("avx512f"))) static inline __m512 hg_rnn_bcast512(const float *p)
{
    return _mm512_set1_ps(*p);
}

/* AVX-512F: 32-wide panels, 8 x 2 accumulators; AVX2+FMA: 16-wide panels, 6 x 2. */
RNN_TILE(rnn_tile_avx512, __attribute__((target("avx512f"))), __m512, 16, _mm512_setzero_ps,
         _mm512_loadu_ps, _mm512_storeu_ps, hg_rnn_bcast512, _mm512_fmadd_ps, 8)
RNN_TILE(rnn_tile_avx2, __attribute__((target("avx2,fma"))), __m256, 8, _mm256_setzero_ps,
         _mm256_loadu_ps, _mm256_storeu_ps, _mm256_broadcast_ss, _mm256_fmadd_ps, 6)
#undef RNN_TILE
#endif

typedef struct hg_rnn_gemm_job {
    int64_t M, K, lda, ldc, W;
    const float *A, *P;
    float *C;
} hg_rnn_gemm_job;

static void hg_rnn_gemm_range(void *ctx, int64_t p0, int64_t p1)
{
#ifdef HG_RNN_GEMM_X86
    const hg_rnn_gemm_job *j = ctx;
    const int64_t W = j->W, MR = W == 32 ? 8 : 6;
    for (int64_t p = p0; p < p1; p++) {
        const float *pp = j->P + p * j->K * W;
        for (int64_t r = 0; r < j->M; r += MR) {
            int mr = (int)(j->M - r < MR ? j->M - r : MR);
            if (W == 32)
                rnn_tile_avx512(mr, j->K, j->A + r * j->lda, j->lda, pp, j->C + r * j->ldc + p * W,
                                j->ldc);
            else
                rnn_tile_avx2(mr, j->K, j->A + r * j->lda, j->lda, pp, j->C + r * j->ldc + p * W,
                              j->ldc);
        }
    }
#else
    (void)ctx;
    (void)p0;
    (void)p1;
#endif
}

/* C = A P over ncols columns (rounded up to whole panels of width W). */
static void hg_rnn_gemm_packed(int64_t M, int64_t Ncols, int64_t K, const float *A, int64_t lda,
                               const float *P, int64_t W, float *C, int64_t ldc)
{
    hg_rnn_gemm_job j = {.M = M, .K = K, .lda = lda, .ldc = ldc, .W = W, .A = A, .P = P, .C = C};
    int64_t np = (Ncols + W - 1) / W;
    if (M == 0 || np == 0) return;
    /* A panel is M*K*W multiply-adds: split the panels when there are enough of them. */
    hg_parallel_for(np, M * K * W >= (1 << 18) ? 1 : np, hg_rnn_gemm_range, &j);
}

#endif
