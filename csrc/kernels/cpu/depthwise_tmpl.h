/* The plane kernels of depthwise.c for one element type and instruction set, included by
 * depthwise.c once per pair, which defines before it:
 *   T          the element type (float, double)
 *   NAME(x)    x with the type's and the set's suffixes (x##_f32_avx2)
 *   TGT        the function attribute that enables the set (empty for the baseline)
 * and the helpers dw_in_row and dw_ranges. The kernels:
 *   fwd_plane: one output plane y[f] from its channel x[c] and filter w[f];
 *   bwd_dw:    dw[f] += taps' sums of dy[f] * shifted x[c] over one image;
 *   bwd_dx:    dx[c] += taps of w[f] scattered from dy[f] over one image. */

TGT static inline void NAME(fwd_rows)(const hg_dw_geom *g, const dw_ranges *rg, const T *x,
                                      const T *w, T bias, T *y)
{
    const int64_t O2 = g->out[2], s2 = g->s[2];
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
        for (int64_t o1 = 0; o1 < g->out[1]; o1++) {
            T *restrict yr = y + (o0 * g->out[1] + o1) * O2;
            for (int64_t o = 0; o < O2; o++) yr[o] = bias;
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                for (int64_t k1 = 0; k1 < g->k[1]; k1++) {
                    int64_t at = dw_in_row(g, o0, o1, k0, k1);
                    if (at < 0) continue;
                    const T *restrict xr = x + at;
                    const T *wk = w + (k0 * g->k[1] + k1) * g->k[2];
                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                        const T wv = wk[k2];
                        int64_t ofs = rg->ofs[k2], lo = rg->lo[k2], hi = rg->hi[k2];
                        const T *restrict xs = xr + ofs;
                        if (s2 == 1)
                            for (int64_t o = lo; o < hi; o++) yr[o] += wv * xs[o];
                        else if (s2 == 2)
                            for (int64_t o = lo; o < hi; o++) yr[o] += wv * xs[2 * o];
                        else
                            for (int64_t o = lo; o < hi; o++) yr[o] += wv * xs[o * s2];
                    }
                }
        }
}

/* Through a zero-padded copy of the channel (buf, DW_BUF_BYTES): no range checks. With
 * unit strides on the last two axes the rows (o1, .) of one o0 are a single run of the
 * padded width, so each tap is one long vector loop over it (then the pad columns are
 * dropped); 7x7 planes then cost 9 short loops instead of 63. */
TGT static void NAME(fwd_plane)(const hg_dw_geom *g, const dw_ranges *rg, const T *x, const T *w,
                                T bias, T *y)
{
    const int64_t O0 = g->out[0], O1 = g->out[1], O2 = g->out[2];
    const int64_t I0p = g->im[0] + 2 * g->p[0], I1p = g->im[1] + 2 * g->p[1];
    const int64_t I2p = g->im[2] + 2 * g->p[2], pad_e = I0p * I1p * I2p;
    const bool unit = g->s[1] == 1 && g->s[2] == 1;
    if ((pad_e + (unit ? O1 * I2p : 0)) * (int64_t)sizeof(T) > DW_BUF_BYTES) {
        NAME(fwd_rows)(g, rg, x, w, bias, y);
        return;
    }
    _Alignas(64) T buf[DW_BUF_BYTES / sizeof(T)];
    T *restrict xp = buf;
    memset(xp, 0, sizeof(T) * (size_t)pad_e);
    for (int64_t i0 = 0; i0 < g->im[0]; i0++)
        for (int64_t i1 = 0; i1 < g->im[1]; i1++)
            memcpy(xp + ((i0 + g->p[0]) * I1p + i1 + g->p[1]) * I2p + g->p[2],
                   x + (i0 * g->im[1] + i1) * g->im[2], sizeof(T) * (size_t)g->im[2]);
    const int64_t K1 = g->k[1], K2 = g->k[2];
    for (int64_t o0 = 0; o0 < O0; o0++) {
        if (unit) {
            T *restrict ext = buf + pad_e;
            const int64_t L = (O1 - 1) * I2p + O2;
            for (int64_t e = 0; e < L; e++) ext[e] = bias;
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                for (int64_t k1 = 0; k1 < K1; k1++)
                    for (int64_t k2 = 0; k2 < K2; k2++) {
                        const T wv = w[(k0 * K1 + k1) * K2 + k2];
                        const T *restrict xs = xp +
                                               ((o0 * g->s[0] + k0 * g->d[0]) * I1p +
                                                k1 * g->d[1]) *
                                                   I2p +
                                               k2 * g->d[2];
                        for (int64_t e = 0; e < L; e++) ext[e] += wv * xs[e];
                    }
            for (int64_t o1 = 0; o1 < O1; o1++)
                memcpy(y + (o0 * O1 + o1) * O2, ext + o1 * I2p, sizeof(T) * (size_t)O2);
            continue;
        }
        for (int64_t o1 = 0; o1 < O1; o1++) {
            T *restrict yr = y + (o0 * O1 + o1) * O2;
            for (int64_t o = 0; o < O2; o++) yr[o] = bias;
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                for (int64_t k1 = 0; k1 < K1; k1++) {
                    const T *xr = xp + ((o0 * g->s[0] + k0 * g->d[0]) * I1p + o1 * g->s[1] +
                                        k1 * g->d[1]) *
                                           I2p;
                    for (int64_t k2 = 0; k2 < K2; k2++) {
                        const T wv = w[(k0 * K1 + k1) * K2 + k2];
                        const T *restrict xs = xr + k2 * g->d[2];
                        if (g->s[2] == 2)
                            for (int64_t o = 0; o < O2; o++) yr[o] += wv * xs[2 * o];
                        else
                            for (int64_t o = 0; o < O2; o++) yr[o] += wv * xs[o * g->s[2]];
                    }
                }
        }
    }
}

TGT static void NAME(bwd_dw)(const hg_dw_geom *g, const dw_ranges *rg, const T *dy, const T *x,
                             T *dw)
{
    const int64_t O2 = g->out[2], s2 = g->s[2];
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
        for (int64_t o1 = 0; o1 < g->out[1]; o1++) {
            const T *restrict dr = dy + (o0 * g->out[1] + o1) * O2;
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                for (int64_t k1 = 0; k1 < g->k[1]; k1++) {
                    int64_t at = dw_in_row(g, o0, o1, k0, k1);
                    if (at < 0) continue;
                    const T *restrict xr = x + at;
                    T *dwk = dw + (k0 * g->k[1] + k1) * g->k[2];
                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                        int64_t ofs = rg->ofs[k2], lo = rg->lo[k2], hi = rg->hi[k2], o = 0;
                        const T *restrict xs = xr + ofs;
                        /* 8 independent partial sums: a vector of them, no reassociation
                         * of one float sum needed. */
                        T acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;
                        if (s2 == 1)
                            for (o = lo; o + 8 <= hi; o += 8)
                                for (int q = 0; q < 8; q++) acc[q] += dr[o + q] * xs[o + q];
                        else
                            for (o = lo; o + 8 <= hi; o += 8)
                                for (int q = 0; q < 8; q++) acc[q] += dr[o + q] * xs[(o + q) * s2];
                        for (; o < hi; o++) tail += dr[o] * xs[o * s2];
                        dwk[k2] += ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                                   ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
                    }
                }
        }
}

TGT static void NAME(bwd_dx)(const hg_dw_geom *g, const dw_ranges *rg, const T *dy, const T *w,
                             T *dx)
{
    const int64_t O2 = g->out[2], s2 = g->s[2];
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
        for (int64_t o1 = 0; o1 < g->out[1]; o1++) {
            const T *restrict dr = dy + (o0 * g->out[1] + o1) * O2;
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
                for (int64_t k1 = 0; k1 < g->k[1]; k1++) {
                    int64_t at = dw_in_row(g, o0, o1, k0, k1);
                    if (at < 0) continue;
                    T *xr = dx + at;
                    const T *wk = w + (k0 * g->k[1] + k1) * g->k[2];
                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                        const T wv = wk[k2];
                        int64_t ofs = rg->ofs[k2], lo = rg->lo[k2], hi = rg->hi[k2];
                        T *restrict xs = xr + ofs;
                        if (s2 == 1)
                            for (int64_t o = lo; o < hi; o++) xs[o] += wv * dr[o];
                        else
                            for (int64_t o = lo; o < hi; o++) xs[o * s2] += wv * dr[o];
                    }
                }
        }
}
