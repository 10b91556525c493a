/* The body of the small-side GEMM kernels (gemm_small.h), included once per instruction set by
 * gemm_avx512.c, gemm_avx2.c and gemm_portable.c. The including file defines:
 *   KNAME(x)        the kernel's name with the set's suffix (x##_avx512)
 *   HG_TGT          the function attribute that enables the set (empty for portable C)
 *   vf, VW          the vector type and its float lanes
 *   v_zero v_set1 v_load v_loadn v_store v_storen v_fma v_mul v_add v_hsum v_hsum4
 *                   static inline HG_TGT primitives; v_loadn/v_storen touch only the first n
 *                   (0 < n < VW) lanes' memory, v_loadn zeroes the others; v_fma(a, b, c) is
 *                   a*b + c; v_hsum4 writes the four vectors' lane sums to out[0..3]
 *   DOT_MR          rows of A per dot tile (DOT_MR * 4 accumulators must fit the registers)
 *   AXPY_MR, AXPY_NVM, AXPY_NV1
 *                   rows of C per axpy tile, and its width in vectors (AXPY_NV1 for single-row
 *                   products, which have the registers for a wider tile)
 *   V_POST(po, v)   optional: hg_post_f32's activation on one vector, bit for bit (the axpy
 *                   tiles then add the bias and apply it in registers)
 * The tile functions are forced inline with constant tile sizes, so their accumulator arrays
 * become registers and the loops over them unroll; one switch picks the instance per tile.
 */

#define DOT_NR 4 /* rows of B per dot tile: four independent FMA chains even for one row of A */
#define AXPY_NVMAX (AXPY_NV1 > AXPY_NVM ? AXPY_NV1 : AXPY_NVM)
#define INLINE_TILE static inline __attribute__((always_inline)) HG_TGT

/* ---- dot: C(i, j) = alpha <A row i, B row j> + beta C(i, j) --------------------------------- */

/* The mr x nr tile of C at (i, j). Each of the mr*nr sums runs in one vector of partial sums
 * over k (a masked load covers K's tail), reduced across lanes at the end. */
INLINE_TILE void dot_tile(const hg_gemm_small_args *p, const int mr, const int nr, int64_t i,
                          int64_t j)
{
    const int64_t K = p->K, lda = p->lda, ldb = p->ldb;
    const float *a = p->A + i * lda, *b = p->B + j * ldb;
    vf acc[DOT_MR][DOT_NR], bv[DOT_NR];
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++) acc[r][c] = v_zero();
    int64_t k = 0;
    if (mr == 1) {
        /* One row of A (batch 1): four chains of one FMA per vector would wait on the FMA
         * latency, not on B streaming in; a second set of accumulators over odd vectors of k
         * keeps eight FMAs in flight. */
        vf acc2[DOT_NR];
        for (int c = 0; c < nr; c++) acc2[c] = v_zero();
        for (; k + 2 * VW <= K; k += 2 * VW) {
            vf av = v_load(a + k), av2 = v_load(a + k + VW);
            for (int c = 0; c < nr; c++) {
                acc[0][c] = v_fma(av, v_load(b + c * ldb + k), acc[0][c]);
                acc2[c] = v_fma(av2, v_load(b + c * ldb + k + VW), acc2[c]);
            }
        }
        for (int c = 0; c < nr; c++) acc[0][c] = v_add(acc[0][c], acc2[c]);
    }
    for (; k + VW <= K; k += VW) {
        for (int c = 0; c < nr; c++) bv[c] = v_load(b + c * ldb + k);
        for (int r = 0; r < mr; r++) {
            vf av = v_load(a + r * lda + k);
            for (int c = 0; c < nr; c++) acc[r][c] = v_fma(av, bv[c], acc[r][c]);
        }
    }
    if (k < K) {
        int rem = (int)(K - k);
        for (int c = 0; c < nr; c++) bv[c] = v_loadn(b + c * ldb + k, rem);
        for (int r = 0; r < mr; r++) {
            vf av = v_loadn(a + r * lda + k, rem);
            for (int c = 0; c < nr; c++) acc[r][c] = v_fma(av, bv[c], acc[r][c]);
        }
    }
    const float alpha = p->alpha, beta = p->beta;
    for (int r = 0; r < mr; r++) {
        float s[DOT_NR];
        if (nr == DOT_NR) v_hsum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3], s);
        else
            for (int c = 0; c < nr; c++) s[c] = v_hsum(acc[r][c]);
        float *cp = p->C + (i + r) * p->rsc + j * p->csc;
        for (int c = 0; c < nr; c++) {
            float *y = cp + c * p->csc;
            *y = beta == 0 ? alpha * s[c] : alpha * s[c] + beta * *y;
        }
    }
}

#define DOT_CASE(MR_, NR_)                \
    case (MR_) * 8 + (NR_):               \
        dot_tile(p, (MR_), (NR_), i, j);  \
        break;
#define DOT_CASES(MR_) DOT_CASE(MR_, 1) DOT_CASE(MR_, 2) DOT_CASE(MR_, 3) DOT_CASE(MR_, 4)

static HG_TGT void dot_block(const hg_gemm_small_args *p, int mr, int nr, int64_t i, int64_t j)
{
    switch (mr * 8 + nr) {
        DOT_CASES(1)
#if DOT_MR >= 2
        DOT_CASES(2)
#endif
#if DOT_MR >= 3
        DOT_CASES(3)
#endif
#if DOT_MR >= 4
        DOT_CASES(4)
#endif
    default: break;
    }
}

/* Column blocks of DOT_NR rows of B outside, rows of A inside: each block of B is read from
 * memory once and reused from L1 by every block of rows of A (A itself is small). */
HG_TGT void KNAME(hg_gemm_dot)(const hg_gemm_small_args *p, int64_t j0, int64_t j1)
{
    for (int64_t j = j0; j < j1; j += DOT_NR) {
        int nr = j1 - j < DOT_NR ? (int)(j1 - j) : DOT_NR;
        for (int64_t i = 0; i < p->M; i += DOT_MR) {
            int mr = p->M - i < DOT_MR ? (int)(p->M - i) : DOT_MR;
            dot_block(p, mr, nr, i, j);
        }
    }
}

/* ---- axpy: C(i, :) = alpha sum_k A(i, k) B(k, :) + beta C(i, :) ---------------------------- */

#ifndef V_POST
/* C(row, :) in the n floats at c = post(c + bias[row]) (no bias: post(c)) while they are in L1,
 * as the packed kernel's epilogue does; hg_post_f32's loops vectorise here for the set. Sets
 * with V_POST(post, v) (core/post.h's activation on one vector, bit for bit) apply both in
 * registers before the store instead. */
static inline HG_TGT void axpy_epi(const hg_gemm_small_args *p, float *restrict c, int64_t n,
                                   int64_t row)
{
    if (p->bias) {
        const float bv = p->bias[row];
        for (int64_t e = 0; e < n; e++) c[e] += bv;
    }
    hg_post_f32(p->post, c, n);
}
#endif

/* The mr x (nv vectors) tile of C at (i, n); with `tail` (then nv == 1) a single partial vector
 * of `rem` lanes. Each A(i, k) is broadcast and multiplies the tile's part of B's row k. */
INLINE_TILE void axpy_tile(const hg_gemm_small_args *p, const int mr, const int nv, const int tail,
                           int rem, int64_t i, int64_t n)
{
    const int64_t K = p->K, ars = p->ars, acs = p->acs, ldb = p->ldb;
    const float *a = p->A + i * ars, *b = p->B + n;
    vf acc[AXPY_MR][AXPY_NVMAX];
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) acc[r][v] = v_zero();
    for (int64_t k = 0; k < K; k++) {
        const float *bk = b + k * ldb;
        vf bv[AXPY_NVMAX];
        for (int v = 0; v < nv; v++) bv[v] = tail ? v_loadn(bk, rem) : v_load(bk + v * VW);
        for (int r = 0; r < mr; r++) {
            const vf av = v_set1(a[r * ars + k * acs]);
            for (int v = 0; v < nv; v++) acc[r][v] = v_fma(av, bv[v], acc[r][v]);
        }
    }
    const vf valpha = v_set1(p->alpha), vbeta = v_set1(p->beta);
    const int keep = p->beta != 0;
    for (int r = 0; r < mr; r++) {
        float *cp = p->C + (i + r) * p->rsc + n;
#ifdef V_POST
        const vf vbias = v_set1(p->bias ? p->bias[i + r] : 0.0f);
#endif
        for (int v = 0; v < nv; v++) {
            vf y = v_mul(acc[r][v], valpha);
            if (tail) {
                if (keep) y = v_fma(vbeta, v_loadn(cp, rem), y);
            } else {
                if (keep) y = v_fma(vbeta, v_load(cp + v * VW), y);
            }
#ifdef V_POST /* axpy_epi's arithmetic in registers: the same bits, one store */
            if (p->bias) y = v_add(y, vbias);
            y = V_POST(p->post, y);
#endif
            if (tail) v_storen(cp, y, rem);
            else v_store(cp + v * VW, y);
        }
#ifndef V_POST
        if (p->bias || p->post) axpy_epi(p, cp, tail ? rem : nv * VW, i + r);
#endif
    }
}

/* kind: 0 the wide tile (AXPY_NV1 vectors when mr == 1 and `single`, else AXPY_NVM), 1 one
 * vector, 2 one partial vector of rem lanes. */
#define AXPY_CASE(MR_)                                                                          \
    case (MR_):                                                                                 \
        if (kind == 0 && single && (MR_) == 1)                                                  \
            axpy_tile(p, (MR_), AXPY_NV1, 0, 0, i, n);                                          \
        else if (kind == 0)                                                                     \
            axpy_tile(p, (MR_), AXPY_NVM, 0, 0, i, n);                                          \
        else if (kind == 1)                                                                     \
            axpy_tile(p, (MR_), 1, 0, 0, i, n);                                                 \
        else                                                                                    \
            axpy_tile(p, (MR_), 1, 1, rem, i, n);                                               \
        break;

static HG_TGT void axpy_block(const hg_gemm_small_args *p, int mr, int kind, int single, int rem,
                              int64_t i, int64_t n)
{
    switch (mr) {
        AXPY_CASE(1)
#if AXPY_MR >= 2
        AXPY_CASE(2)
#endif
#if AXPY_MR >= 3
        AXPY_CASE(3)
#endif
#if AXPY_MR >= 4
        AXPY_CASE(4)
#endif
    default: break;
    }
}

/* The columns [n, n1) of rows i (mr of them) in wide tiles, single vectors, then a partial one. */
static HG_TGT void axpy_cols(const hg_gemm_small_args *p, int64_t i, int mr, int single, int64_t n,
                             int64_t n1)
{
    int64_t wide = (single ? AXPY_NV1 : AXPY_NVM) * VW;
    for (; n + wide <= n1; n += wide) axpy_block(p, mr, 0, single, 0, i, n);
    for (; n + VW <= n1; n += VW) axpy_block(p, mr, 1, 0, 0, i, n);
    if (n < n1) axpy_block(p, mr, 2, 0, (int)(n1 - n), i, n);
}

/* Few rows of B (small K): blocks of rows of C outside, so that C is written row after row
 * while B stays in cache. Else column panels outside: a panel of B (K rows of the panel's
 * width) is read once and reused from cache by the (few) blocks of rows of C. */
HG_TGT void KNAME(hg_gemm_axpy)(const hg_gemm_small_args *p, int64_t i0, int64_t i1, int64_t n0,
                                int64_t n1)
{
    int single = i1 - i0 == 1;
    if (p->K <= 8) {
        for (int64_t i = i0; i < i1; i += AXPY_MR) {
            int mr = i1 - i < AXPY_MR ? (int)(i1 - i) : AXPY_MR;
            axpy_cols(p, i, mr, single, n0, n1);
        }
        return;
    }
    int64_t wide = (single ? AXPY_NV1 : AXPY_NVM) * VW;
    for (int64_t n = n0; n < n1; n += wide) {
        int64_t e = n1 - n < wide ? n1 : n + wide;
        for (int64_t i = i0; i < i1; i += AXPY_MR) {
            int mr = i1 - i < AXPY_MR ? (int)(i1 - i) : AXPY_MR;
            axpy_cols(p, i, mr, single, n, e);
        }
    }
}

#undef DOT_NR
#undef AXPY_NVMAX
#undef INLINE_TILE
#undef DOT_CASE
#undef DOT_CASES
#undef AXPY_CASE
