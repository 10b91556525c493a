/* The packed im2col and the backward of conv_common.h for one element type, included once per
 * type by conv_common.c, which defines before it:
 *   T          the element type (float, double)
 *   NAME(x)    x with the type's suffix (x##_f32): the names of the type's functions
 *
 * The backward runs images in slots, one per thread, each walking its images tile by tile (a
 * tile's col block stays in cache between im2col and the GEMMs; one thread owns all of an
 * image's tiles, so col2im's overlapping rows need no locks). With fewer images than threads the
 * products split themselves over the pool. Slot 0 sums the weight and bias gradients straight
 * into the outputs, slot t > 0 into its own workspace buffers, added at the end.
 */

void NAME(hg_conv_pack_im2col)(const hg_conv_geom *g, const T *x, T *col, int64_t ld)
{
    if (!hg_conv_is_ext(g)) {
        const hg_im2col_geom cg = hg_conv_col_geom(g);
        NAME(hg_im2col_rows)(&cg, x, 0, g->out[0] * g->out[1], col, ld);
        return;
    }
    const int64_t I2 = g->in[2], L = hg_conv_pack_cols(g);
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t k1 = 0; k1 < g->k[1]; k1++)
            for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                const T *src = x + c * g->I + k1 * g->d[1] * I2 + k2 * g->d[2];
                memcpy(col + ((c * g->k[1] + k1) * g->k[2] + k2) * ld, src, sizeof(T) * (size_t)L);
            }
}

/* Adjoint of pack_im2col: dx (zeroed here) += scatter of one image's columns. */
static void NAME(pack_col2im)(const hg_conv_geom *g, const T *col, int64_t ld, T *dx)
{
    memset(dx, 0, sizeof(T) * (size_t)(g->Cg * g->I));
    if (!hg_conv_is_ext(g)) {
        const hg_im2col_geom cg = hg_conv_col_geom(g);
        NAME(hg_col2im_rows)(&cg, col, 0, g->out[0] * g->out[1], ld, dx);
        return;
    }
    const int64_t I2 = g->in[2], L = hg_conv_pack_cols(g);
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t k1 = 0; k1 < g->k[1]; k1++)
            for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                T *dst = dx + c * g->I + k1 * g->d[1] * I2 + k2 * g->d[2];
                const T *r = col + ((c * g->k[1] + k1) * g->k[2] + k2) * ld;
                for (int64_t e = 0; e < L; e++) dst[e] += r[e];
            }
}

/* Positions per run of a pointwise layer's backward. An expanding layer (more filters than
 * channels) with a large dy image reads dy in both products; in runs of PW_COLS positions that
 * part of dy stays in L2 between the two, so dy comes from memory once: MobileNetV2's 16 -> 96
 * at 112x112, batch 16, 2 threads: 16.5 -> 9.5 ms. Narrow dy (projections) gain nothing and
 * lose to the per-run calls: whole images. */
#ifndef HG_CONV_PW_RUNS
#define HG_CONV_PW_RUNS
#define PW_COLS 1024
#define PW_DY_BYTES (1 << 20)
static int64_t pw_cols(const hg_conv_geom *g, size_t esize)
{
    bool big = g->Fg >= g->K && (double)g->Fg * (double)g->P * (double)esize > PW_DY_BYTES;
    return big && g->P > PW_COLS ? PW_COLS : (g->P > 0 ? g->P : 1);
}
#endif

typedef struct {
    const hg_conv_geom *g;
    const hg_conv_bw_plan *pl;
    const T *dy, *x, *w;
    T *dx, *y, *dw, *db; /* NULL: not computed */
    T *ws;
    int64_t part_e;
} NAME(bw_job);

/* Images [n0, n1) packed side by side: dy gathered into one block, one GEMM per gradient. */
static void NAME(bw_pack)(const NAME(bw_job) * j, int64_t n0, int64_t n1, T *col, T *dw)
{
    const hg_conv_geom *g = j->g;
    const int64_t P = g->P, S = hg_conv_pack_cols(g), O2 = g->out[2], cols = (n1 - n0) * S;
    const int64_t rs = hg_conv_is_ext(g) ? g->in[2] : O2; /* a row's stride in the block */
    T *dyb = col + g->K * cols;
    for (int64_t gi = 0; gi < g->G; gi++) {
        /* dy gathered; the dropped columns of extended rows are zeros */
        if (S != P) memset(dyb, 0, sizeof(T) * (size_t)(g->Fg * cols));
        for (int64_t n = n0; n < n1; n++)
            for (int64_t f = 0; f < g->Fg; f++) {
                const T *src = j->dy + (n * g->F + gi * g->Fg + f) * P;
                T *dst = dyb + f * cols + (n - n0) * S;
                for (int64_t r = 0; r < P / O2; r++, src += O2, dst += rs)
                    memcpy(dst, src, sizeof(T) * (size_t)O2);
            }
        if (dw) {
            for (int64_t n = n0; n < n1; n++)
                NAME(hg_conv_pack_im2col)(g, j->x + (n * g->C + gi * g->Cg) * g->I,
                                          col + (n - n0) * S, cols);
            NAME(hg_gemm)(false, true, g->Fg, g->K, cols, 1, dyb, cols, col, cols, 1,
                          dw + gi * g->Fg * g->K, g->K);
        }
        if (j->dx) {
            NAME(hg_gemm)(true, false, g->K, cols, g->Fg, 1, j->w + gi * g->Fg * g->K, g->K, dyb,
                          cols, 0, col, cols);
            for (int64_t n = n0; n < n1; n++)
                NAME(pack_col2im)(g, col + (n - n0) * S, cols,
                                  j->dx + (n * g->C + gi * g->Cg) * g->I);
        }
    }
}

/* db[f] += sum over positions of channel f of image n of src (ch channels, pos positions). */
static void NAME(bias_grad)(const T *src, int64_t ch, int64_t pos, int64_t n, T *db)
{
    for (int64_t f = 0; f < ch; f++) {
        const T *r = src + (n * ch + f) * pos;
        T acc = 0;
        for (int64_t i = 0; i < pos; i++) acc += r[i];
        db[f] += acc;
    }
}

static void NAME(bw_bias)(const NAME(bw_job) * j, int64_t n, T *db)
{
    const hg_conv_geom *g = j->g;
    if (j->pl->bias_of_x) NAME(bias_grad)(j->x, g->C, g->I, n, db);
    else NAME(bias_grad)(j->dy, g->F, g->P, n, db);
}

/* One image, group by group and tile by tile (a tile's col block stays in cache). */
static void NAME(bw_image)(const NAME(bw_job) * j, int64_t n, T *col, T *dw, T *db)
{
    const hg_conv_geom *g = j->g;
    const hg_im2col_geom cg = hg_conv_col_geom(g);
    const int64_t O2 = g->out[2], R = g->out[0] * g->out[1];
    const int64_t rows = j->pl->whole ? R : j->pl->rows;
    for (int64_t gi = 0; gi < g->G; gi++) {
        const T *x = j->x + (n * g->C + gi * g->Cg) * g->I;
        const T *dyg = j->dy + (n * g->F + gi * g->Fg) * g->P;
        const T *w = j->w + gi * g->Fg * g->K;
        T *dx = j->dx ? j->dx + (n * g->C + gi * g->Cg) * g->I : NULL;
        T *y = j->y ? j->y + (n * g->F + gi * g->Fg) * g->P : NULL;
        if (!col) { /* pointwise: the image is the col matrix, in runs of PW_COLS positions */
            const int64_t step = pw_cols(g, sizeof(T));
            for (int64_t p0 = 0; p0 < g->P; p0 += step) {
                const int64_t n = g->P - p0 < step ? g->P - p0 : step;
                if (dw)
                    NAME(hg_gemm)(false, true, g->Fg, g->K, n, 1, dyg + p0, g->P, x + p0, g->P, 1,
                                  dw + gi * g->Fg * g->K, g->K);
                if (dx)
                    NAME(hg_gemm)(true, false, g->K, n, g->Fg, 1, w, g->K, dyg + p0, g->P, 0,
                                  dx + p0, g->P);
                if (y)
                    NAME(hg_gemm)(false, false, g->Fg, n, g->K, 1, w, g->K, x + p0, g->P, 0, y + p0,
                                  g->P);
            }
            continue;
        }
        if (dx) memset(dx, 0, sizeof(T) * (size_t)(g->Cg * g->I));
        for (int64_t r0 = 0; r0 < R; r0 += rows) {
            int64_t r1 = r0 + rows < R ? r0 + rows : R, cols = (r1 - r0) * O2;
            const T *dy = dyg + r0 * O2;
            if (dw || y) {
                if (j->pl->whole) /* split over channels on the pool */
                    NAME(hg_im2col)(&cg, x, col);
                else NAME(hg_im2col_rows)(&cg, x, r0, r1, col, cols);
            }
            if (y)
                NAME(hg_gemm)(false, false, g->Fg, cols, g->K, 1, w, g->K, col, cols, 0,
                              y + r0 * O2, g->P);
            if (dw)
                NAME(hg_gemm)(false, true, g->Fg, g->K, cols, 1, dy, g->P, col, cols, 1,
                              dw + gi * g->Fg * g->K, g->K);
            if (dx) {
                NAME(hg_gemm)(true, false, g->K, cols, g->Fg, 1, w, g->K, dy, g->P, 0, col, cols);
                NAME(hg_col2im_rows)(&cg, col, r0, r1, cols, dx);
            }
        }
    }
    if (db) NAME(bw_bias)(j, n, db);
}

static void NAME(bw_slots)(void *ctx, int64_t begin, int64_t end)
{
    const NAME(bw_job) *j = ctx;
    const hg_conv_geom *g = j->g;
    const hg_conv_bw_plan *pl = j->pl;
    for (int64_t t = begin; t < end; t++) {
        T *col = pl->col_e ? j->ws + t * pl->col_e : NULL, *dw = j->dw, *db = j->db;
        if (t > 0) {
            T *part = j->ws + pl->nslots * pl->col_e + (t - 1) * j->part_e;
            memset(part, 0, sizeof(T) * (size_t)j->part_e);
            if (dw) {
                dw = part;
                part += g->F * g->K;
            }
            if (db) db = part;
        }
        if (pl->whole) { /* slot t: images t, t + nslots, ... */
            for (int64_t n = t; n < g->N; n += pl->nslots) NAME(bw_image)(j, n, col, dw, db);
            continue;
        }
        /* slot t: a contiguous run of images, nb at a time when packed */
        int64_t n0 = g->N * t / pl->nslots, n1 = g->N * (t + 1) / pl->nslots;
        if (pl->nb > 1)
            for (int64_t n = n0; n < n1; n += pl->nb) {
                NAME(bw_pack)(j, n, n + pl->nb < n1 ? n + pl->nb : n1, col, dw);
                for (int64_t i = n; i < n + pl->nb && i < n1 && db; i++) NAME(bw_bias)(j, i, db);
            }
        else
            for (int64_t n = n0; n < n1; n++) NAME(bw_image)(j, n, col, dw, db);
    }
}

void NAME(hg_conv_bw)(const hg_conv_geom *g, const hg_conv_bw_plan *pl, T *ws, const T *dy,
                      const T *x, const T *w, T *dx, T *y, T *dw, T *db)
{
    const int64_t nbias = pl->bias_of_x ? g->C : g->F;
    NAME(bw_job) j = {g, pl, dy, x, w, dx, y, dw, db, ws, 0};
    j.part_e = bw_part_elems(g, pl, dw != NULL, db != NULL);
    if (dw) memset(dw, 0, sizeof(T) * (size_t)(g->F * g->K));
    if (db) memset(db, 0, sizeof(T) * (size_t)nbias);
    if (pl->nslots > 1) hg_parallel_for(pl->nslots, 1, NAME(bw_slots), &j);
    else NAME(bw_slots)(&j, 0, 1);
    for (int64_t t = 1; t < pl->nslots; t++) {
        const T *part = j.ws + pl->nslots * pl->col_e + (t - 1) * j.part_e;
        if (dw) {
            for (int64_t i = 0; i < g->F * g->K; i++) dw[i] += part[i];
            part += g->F * g->K;
        }
        if (db)
            for (int64_t f = 0; f < nbias; f++) db[f] += part[f];
    }
}
