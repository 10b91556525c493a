/* Deconvolution's forward (deconv.c) for one element type, included once per type by
 * deconv.c, which defines before it:
 *   T          the element type (float, double)
 *   NAME(x)    x with the type's suffix (x##_f32): the names of the type's functions
 * Images run in slots (deconv_slots), slot t taking images t, t + nslots, ..., each with its own
 * col buffer of Fg*K x I elements in the workspace. */

typedef struct {
    const deconv_geom *g;
    const T *x, *w, *b;
    T *y, *ws;
    int64_t nslots;
} NAME(deconv_job);

static void NAME(deconv_image)(const NAME(deconv_job) * j, int64_t n, T *col)
{
    const deconv_geom *g = j->g;
    T *y = j->y + n * g->F * g->P;
    for (int64_t f = 0; f < g->F; f++) {
        T bv = j->b ? j->b[f] : 0;
        T *yr = y + f * g->P;
        for (int64_t i = 0; i < g->P; i++) yr[i] = bv;
    }
    if (g->Cg == 0) return;
    const hg_im2col_geom cg = deconv_col_geom(g);
    int64_t M = g->Fg * g->K;
    for (int64_t gi = 0; gi < g->G; gi++) {
        const T *x = j->x + (n * g->C + gi * g->Cg) * g->I;
        NAME(hg_gemm)(true, false, M, g->I, g->Cg, 1, j->w + gi * g->Cg * M, M, x, g->I, 0, col,
                      g->I);
        NAME(hg_col2im)(&cg, col, y + gi * g->Fg * g->P);
    }
}

static void NAME(deconv_slots)(void *ctx, int64_t begin, int64_t end)
{
    const NAME(deconv_job) *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        T *col = j->ws + t * j->g->Fg * j->g->K * j->g->I;
        for (int64_t n = t; n < j->g->N; n += j->nslots) NAME(deconv_image)(j, n, col);
    }
}

static void NAME(deconv)(const deconv_geom *g, const hg_exec_ctx *ctx, const T *x, const T *w,
                         const T *b, T *y)
{
    int64_t nslots = deconv_slots(g);
    size_t per = sizeof(T) * (size_t)(g->Fg * g->K * g->I);
    /* Never more slots than the workspace holds (the thread count could have changed). */
    if ((size_t)nslots * per > ctx->workspace_bytes) nslots = 1;
    NAME(deconv_job) j = {g, x, w, b, y, (T *)ctx->workspace, nslots};
    if (nslots > 1) hg_parallel_for(nslots, 1, NAME(deconv_slots), &j);
    else NAME(deconv_slots)(&j, 0, 1);
}
