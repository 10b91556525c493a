/* The body of im2col.c's kernels for one element type, included once per type by im2col.c,
 * which defines before it:
 *   T          the element type (float, double)
 *   NAME(x)    x with the type's suffix (x##_f32): the names of the type's functions
 * and the helper inner_range. */

typedef struct {
    const hg_im2col_geom *g;
    const T *src;
    T *dst;
} NAME(job);

/* Channels [c0, c1), grid rows (o0, o1) flattened to [r0, r1), into dst with row length
 * ld (>= (r1 - r0) * O2): dst row (c, k) starts at dst + ((c - c0) * K + k) * ld. */
static void NAME(im2col_block)(const hg_im2col_geom *g, const T *src, int64_t c0, int64_t c1,
                               int64_t r0, int64_t r1, T *dst, int64_t ld)
{
    const int64_t I0 = g->im[0], I1 = g->im[1], I2 = g->im[2];
    const int64_t O1 = g->out[1], O2 = g->out[2], s2 = g->s[2];
    for (int64_t c = c0; c < c1; c++) {
        const T *x = src + c * I0 * I1 * I2;
        for (int64_t k0 = 0; k0 < g->k[0]; k0++)
            for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                    T *row = dst + ((((c - c0) * g->k[0] + k0) * g->k[1] + k1) * g->k[2] + k2) * ld;
                    int64_t ofs = k2 * g->d[2] - g->p[2], lo, hi;
                    inner_range(ofs, s2, I2, O2, &lo, &hi);
                    int64_t o0 = r0 / O1, o1 = r0 - o0 * O1;
                    for (int64_t r = r0; r < r1; r++, row += O2) {
                        int64_t i0 = o0 * g->s[0] - g->p[0] + k0 * g->d[0];
                        int64_t i1 = o1 * g->s[1] - g->p[1] + k1 * g->d[1];
                        if (++o1 == O1) { /* next grid row */
                            o1 = 0;
                            o0++;
                        }
                        if (i0 < 0 || i0 >= I0 || i1 < 0 || i1 >= I1) {
                            for (int64_t o = 0; o < O2; o++) row[o] = 0;
                            continue;
                        }
                        const T *in = x + (i0 * I1 + i1) * I2 + ofs;
                        /* plain loops: rows are often a few elements (LeNet: 8 and 24), */
                        /* where a memcpy call costs more than the copy */
                        for (int64_t o = 0; o < lo; o++) row[o] = 0;
                        if (s2 == 1)
                            for (int64_t o = lo; o < hi; o++) row[o] = in[o];
                        else if (s2 == 2) NAME(hg_gather2)(row + lo, in + 2 * lo, hi - lo);
                        else
                            for (int64_t o = lo; o < hi; o++) row[o] = in[o * s2];
                        for (int64_t o = hi; o < O2; o++) row[o] = 0;
                    }
                }
    }
}

static void NAME(im2col_range)(void *ctx, int64_t c0, int64_t c1)
{
    const NAME(job) *j = ctx;
    const hg_im2col_geom *g = j->g;
    const int64_t P = g->out[0] * g->out[1] * g->out[2];
    const int64_t K = g->k[0] * g->k[1] * g->k[2];
    NAME(im2col_block)(g, j->src, c0, c1, 0, g->out[0] * g->out[1], j->dst + c0 * K * P, P);
}

void NAME(hg_im2col_rows)(const hg_im2col_geom *g, const T *x, int64_t r0, int64_t r1, T *col,
                          int64_t ld)
{
    NAME(im2col_block)(g, x, 0, g->C, r0, r1, col, ld);
}

/* Adjoint of im2col_block for channels [0, C): adds dst's rows back into the image. */
static void NAME(col2im_block)(const hg_im2col_geom *g, const T *src, int64_t r0, int64_t r1,
                               T *dst, int64_t ld)
{
    const int64_t I0 = g->im[0], I1 = g->im[1], I2 = g->im[2];
    const int64_t O1 = g->out[1], O2 = g->out[2], s2 = g->s[2];
    for (int64_t c = 0; c < g->C; c++) {
        T *x = dst + c * I0 * I1 * I2;
        for (int64_t k0 = 0; k0 < g->k[0]; k0++)
            for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                    const T *row = src + (((c * g->k[0] + k0) * g->k[1] + k1) * g->k[2] + k2) * ld;
                    int64_t ofs = k2 * g->d[2] - g->p[2], lo, hi;
                    inner_range(ofs, s2, I2, O2, &lo, &hi);
                    int64_t o0 = r0 / O1, o1 = r0 - o0 * O1;
                    for (int64_t r = r0; r < r1; r++, row += O2) {
                        int64_t i0 = o0 * g->s[0] - g->p[0] + k0 * g->d[0];
                        int64_t i1 = o1 * g->s[1] - g->p[1] + k1 * g->d[1];
                        if (++o1 == O1) {
                            o1 = 0;
                            o0++;
                        }
                        if (i0 < 0 || i0 >= I0 || i1 < 0 || i1 >= I1) continue;
                        T *out = x + (i0 * I1 + i1) * I2 + ofs;
                        if (s2 == 1)
                            for (int64_t o = lo; o < hi; o++) out[o] += row[o];
                        else
                            for (int64_t o = lo; o < hi; o++) out[o * s2] += row[o];
                    }
                }
    }
}

void NAME(hg_col2im_rows)(const hg_im2col_geom *g, const T *col, int64_t r0, int64_t r1, int64_t ld,
                          T *x)
{
    NAME(col2im_block)(g, col, r0, r1, x, ld);
}

static void NAME(col2im_range)(void *ctx, int64_t c0, int64_t c1)
{
    const NAME(job) *j = ctx;
    const hg_im2col_geom *g = j->g;
    const int64_t I0 = g->im[0], I1 = g->im[1], I2 = g->im[2];
    const int64_t O0 = g->out[0], O1 = g->out[1], O2 = g->out[2], s2 = g->s[2];
    const int64_t P = O0 * O1 * O2;
    for (int64_t c = c0; c < c1; c++) {
        T *x = j->dst + c * I0 * I1 * I2;
        for (int64_t k0 = 0; k0 < g->k[0]; k0++)
            for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                    const T *row = j->src +
                                   (((c * g->k[0] + k0) * g->k[1] + k1) * g->k[2] + k2) * P;
                    int64_t ofs = k2 * g->d[2] - g->p[2], lo, hi;
                    inner_range(ofs, s2, I2, O2, &lo, &hi);
                    for (int64_t o0 = 0; o0 < O0; o0++) {
                        int64_t i0 = o0 * g->s[0] - g->p[0] + k0 * g->d[0];
                        for (int64_t o1 = 0; o1 < O1; o1++, row += O2) {
                            int64_t i1 = o1 * g->s[1] - g->p[1] + k1 * g->d[1];
                            if (i0 < 0 || i0 >= I0 || i1 < 0 || i1 >= I1) continue;
                            T *dst = x + (i0 * I1 + i1) * I2;
                            if (s2 == 1)
                                for (int64_t o = lo; o < hi; o++) dst[o + ofs] += row[o];
                            else
                                for (int64_t o = lo; o < hi; o++) dst[o * s2 + ofs] += row[o];
                        }
                    }
                }
    }
}

/* Channels per parallel chunk: about HG_GRAIN_ELEMWISE column entries each. */
static int64_t NAME(grain)(const hg_im2col_geom *g)
{
    int64_t per = g->k[0] * g->k[1] * g->k[2] * g->out[0] * g->out[1] * g->out[2];
    return per > 0 ? HG_GRAIN_ELEMWISE / per + 1 : g->C + 1;
}

void NAME(hg_im2col)(const hg_im2col_geom *g, const T *x, T *col)
{
    NAME(job) j = {g, x, col};
    hg_parallel_for(g->C, NAME(grain)(g), NAME(im2col_range), &j);
}

void NAME(hg_col2im)(const hg_im2col_geom *g, const T *col, T *x)
{
    NAME(job) j = {g, col, x};
    hg_parallel_for(g->C, NAME(grain)(g), NAME(col2im_range), &j);
}
