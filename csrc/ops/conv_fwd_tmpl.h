/* Convolution's forward (conv.c, "forward plan") for one element type, included once per type
 * by conv.c, which defines before it:
 *   T          the element type (float, double)
 *   NAME(x)    x with the type's suffix (x##_f32): the names of the type's functions
 * and the plan helpers it calls (fwd_plan, fwd_slots, is_depthwise, dw_geom). */

typedef struct {
    const hg_conv_geom *g;
    conv_plan pl;
    const T *x, *w, *b;
    T *y, *ws;
    int64_t nslots;
    const hg_post *po; /* the plan's activation, applied to each tile as it is finished */
} NAME(conv_job);

/* Packed unit u = (images [n0, n1), group gi): one GEMM over their side-by-side columns
 * into buf, then each image's rows (+ bias) to the output. */
static void NAME(conv_pack)(const NAME(conv_job) * j, int64_t u, T *col)
{
    const hg_conv_geom *g = j->g;
    const int64_t P = g->P, S = hg_conv_pack_cols(g), O2 = g->out[2], gi = u % g->G;
    int64_t n0 = u / g->G * j->pl.nb, n1 = n0 + j->pl.nb < g->N ? n0 + j->pl.nb : g->N;
    int64_t cols = (n1 - n0) * S;
    T *buf = col + g->K * cols;
    for (int64_t n = n0; n < n1; n++)
        NAME(hg_conv_pack_im2col)(g, j->x + (n * g->C + gi * g->Cg) * g->I, col + (n - n0) * S,
                                  cols);
    NAME(hg_gemm)(false, false, g->Fg, cols, g->K, 1, j->w + gi * g->Fg * g->K, g->K, col, cols, 0,
                  buf, cols);
    const int64_t rs = hg_conv_is_ext(g) ? g->in[2] : O2; /* a row's stride in the block */
    for (int64_t n = n0; n < n1; n++)
        for (int64_t f = 0; f < g->Fg; f++) {
            T *yr = j->y + (n * g->F + gi * g->Fg + f) * P;
            const T *br = buf + f * cols + (n - n0) * S;
            T bv = j->b ? j->b[gi * g->Fg + f] : 0;
            for (int64_t r = 0; r < P / O2; r++, yr += O2, br += rs) {
                for (int64_t i = 0; i < O2; i++) yr[i] = br[i] + bv;
                NAME(hg_post)(j->po, yr, O2);
            }
        }
}

/* y[0, n) = post(y + bv) in one pass (bias 0: the post alone; neither: nothing). */
static void NAME(epilogue)(const hg_post *po, T *restrict y, int64_t n, const T *b)
{
    const T bv = b ? *b : (T)0;
    if (po->kind == HG_POST_RELU) {
        for (int64_t i = 0; i < n; i++) {
            T v = y[i] + bv;
            y[i] = (v > 0 || v != v) ? v : 0;
        }
    } else if (po->kind == HG_POST_CLIP) {
        const T lo = (T)po->lo, hi = (T)po->hi;
        for (int64_t i = 0; i < n; i++) {
            T v = y[i] + bv;
            y[i] = v > hi ? hi : (v < lo ? lo : v);
        }
    } else if (b) {
        for (int64_t i = 0; i < n; i++) y[i] += bv;
    }
}

typedef struct {
    const NAME(conv_job) * j;
    T *y;
    int64_t cols, gi;
} NAME(epi_job);

/* Filters [f0, f1) of a whole-image tile's epilogue. */
static void NAME(epi_range)(void *ctx, int64_t f0, int64_t f1)
{
    const NAME(epi_job) *e = ctx;
    const NAME(conv_job) *j = e->j;
    for (int64_t f = f0; f < f1; f++)
        NAME(epilogue)(j->po, e->y + f * j->g->P, e->cols,
                       j->b ? j->b + e->gi * j->g->Fg + f : NULL);
}

/* Unit u = (image n, group gi, tile): out_g[:, tile] = W_g . col(tile) (+ bias). */
static void NAME(conv_unit)(const NAME(conv_job) * j, int64_t u, T *col)
{
    const hg_conv_geom *g = j->g;
    if (j->pl.nb > 1) {
        NAME(conv_pack)(j, u, col);
        return;
    }
    const int64_t O2 = g->out[2], R = g->out[0] * g->out[1];
    int64_t tile = u % j->pl.ntiles, ng = u / j->pl.ntiles, gi = ng % g->G, n = ng / g->G;
    int64_t r0 = tile * j->pl.rows, r1 = r0 + j->pl.rows < R ? r0 + j->pl.rows : R;
    int64_t cols = (r1 - r0) * O2;
    T *y = j->y + (n * g->F + gi * g->Fg) * g->P + r0 * O2;
    const T *x = j->x + (n * g->C + gi * g->Cg) * g->I, *src = x + r0 * O2;
    int64_t ld = g->P;
    if (col) {
        const hg_im2col_geom cg = hg_conv_col_geom(g);
        if (j->pl.whole) /* split over channels on the pool */
            NAME(hg_im2col)(&cg, x, col);
        else NAME(hg_im2col_rows)(&cg, x, r0, r1, col, cols);
        src = col;
        ld = cols;
    }
    /* The packed GEMM kernel applies bias and activation to each tile of the output as it
     * stores it (MobileNetV2 at batch 1: the separate pass below was 8% of its time). Else the
     * product, then bias and activation in one pass over the tile while it is in cache (a bias
     * written first and added by the GEMM (beta 1) cost two: MobileNetV2's pointwise 32 -> 192
     * at 28x28, batch 1, 89 -> 38 us). Either gives the same bits for the same GEMM kernel
     * (given a bias: without one, the pass below adds 0 and turns -0 into +0 before a clip; a
     * post-op always comes with a folded BatchNorm's bias). */
    const T *wg = j->w + gi * g->Fg * g->K, *bias = j->b ? j->b + gi * g->Fg : NULL;
    const bool epi = bias || j->po->kind != HG_POST_NONE;
    if (epi && NAME(hg_gemm_epi)(false, false, g->Fg, cols, g->K, 1, wg, g->K, src, ld, 0, y, g->P,
                                 bias, j->po))
        return;
    NAME(hg_gemm)(false, false, g->Fg, cols, g->K, 1, wg, g->K, src, ld, 0, y, g->P);
    if (!epi) return;
    NAME(epi_job) e = {j, y, cols, gi};
    if (j->pl.whole) /* the product used the pool: so does its epilogue */
        hg_parallel_for(g->Fg, 1 + 16384 / (cols + 1), NAME(epi_range), &e);
    else NAME(epi_range)(&e, 0, g->Fg);
}

/* Slots [begin, end): slot t runs its contiguous share of the units with its own col. */
static void NAME(conv_slots)(void *ctx, int64_t begin, int64_t end)
{
    const NAME(conv_job) *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        T *col = j->pl.col_e ? j->ws + t * j->pl.col_e : NULL;
        int64_t u0 = j->pl.units * t / j->nslots, u1 = j->pl.units * (t + 1) / j->nslots;
        for (int64_t u = u0; u < u1; u++) NAME(conv_unit)(j, u, col);
    }
}

static void NAME(conv)(const hg_conv_geom *g, const hg_exec_ctx *ctx, const T *x, const T *w,
                       const T *b, T *y)
{
    if (is_depthwise(g)) {
        const hg_dw_geom dg = dw_geom(g);
        NAME(hg_depthwise_fwd)(&dg, x, w, b, y, &ctx->post);
        return;
    }
    conv_plan pl = fwd_plan(g, sizeof(T), b || ctx->post.kind != HG_POST_NONE);
    int64_t nslots = fwd_slots(g, &pl);
    /* Never more slots than the workspace holds (the thread count could have changed). */
    if (pl.col_e && (size_t)nslots * sizeof(T) * (size_t)pl.col_e > ctx->workspace_bytes)
        nslots = (int64_t)(ctx->workspace_bytes / (sizeof(T) * (size_t)pl.col_e));
    if (nslots < 1) nslots = 1;
    NAME(conv_job) j = {g, pl, x, w, b, y, (T *)ctx->workspace, nslots, &ctx->post};
    if (nslots > 1) hg_parallel_for(nslots, 1, NAME(conv_slots), &j);
    else NAME(conv_slots)(&j, 0, 1);
}
