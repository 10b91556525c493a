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

/* One padded row of the plane for fwd_3x3: dst[k] = the padded row's column c0 + step * k for
 * k in [0, n), zero in the padding (xr NULL: a padding row). The interior is a plain (or
 * every-other-element) copy, without a test per element, so that it vectorises. */
TGT static inline void NAME(dw_fill)(T *restrict dst, const T *restrict xr, int64_t W, int64_t pw,
                                     int64_t c0, int64_t step, int64_t n)
{
    int64_t lo = 0, hi = 0; /* columns with 0 <= c0 + step * k - pw < W */
    if (xr) {
        int64_t first = pw - c0; /* k >= first / step */
        lo = first <= 0 ? 0 : (first + step - 1) / step;
        int64_t last = W - 1 + pw - c0; /* k <= last / step */
        hi = last < 0 ? 0 : last / step + 1;
        if (hi > n) hi = n;
        if (lo > hi) lo = hi;
    }
    for (int64_t k = 0; k < lo; k++) dst[k] = 0;
    const int64_t off = c0 - pw; /* off + step * k >= 0 for k >= lo */
    if (step == 1)
        for (int64_t k = lo; k < hi; k++) dst[k] = xr[off + k];
    else
        for (int64_t k = lo; k < hi; k++) dst[k] = xr[off + 2 * k];
    for (int64_t k = hi; k < n; k++) dst[k] = 0;
}

/* 2-D 3x3 taps, dilation 1, equal strides of 1 or 2 (MobileNet's layers; see dw_is_3x3): one
 * pass with all nine taps in registers over a zero-padded copy of the plane in buf. At stride 2
 * the copy is split into four planes (even or odd rows, even or odd columns) so that every tap
 * reads consecutive elements. Narrow planes (14x14, 7x7) run as one long loop over the padded
 * rows laid end to end (the pad columns computed and dropped), not as many short ones. The
 * general plane loop below makes nine passes over each output row instead and gathers every
 * other element at stride 2: 2-4x slower on MobileNetV2's eight layer shapes at batch 1 (2
 * threads; 2.9 ms against 0.76 ms for one of each). The sums run in the same order as there:
 * bias, then the taps row by row. */
TGT static void NAME(fwd_3x3)(const hg_dw_geom *g, const T *x, const T *w, T bias, T *y)
{
    const int64_t H = g->im[1], W = g->im[2], s = g->s[2], OH = g->out[1], OW = g->out[2];
    const int64_t ph = g->p[1], pw = g->p[2];
    const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7],
            w8 = w[8];
    _Alignas(64) T buf[DW_BUF_BYTES / sizeof(T)];
    const bool direct = OW >= DW_DIRECT_W; /* rows long enough to run one by one into y */
    if (s == 1) {
        const int64_t HP = OH + 2, P = OW + 2; /* padded rows and pitch */
        for (int64_t r = 0; r < HP; r++) {
            int64_t i = r - ph;
            NAME(dw_fill)(buf + r * P, i >= 0 && i < H ? x + i * W : NULL, W, pw, 0, 1, P);
        }
        const int64_t n = direct ? OW : (OH - 1) * P + OW;
        T *ext = buf + HP * P;
        for (int64_t oy = 0; oy < (direct ? OH : 1); oy++) {
            const T *restrict a = buf + oy * P, *restrict b = a + P, *restrict c = b + P;
            T *restrict yr = direct ? y + oy * OW : ext;
            for (int64_t e = 0; e < n; e++) {
                T v = bias;
                v += w0 * a[e];
                v += w1 * a[e + 1];
                v += w2 * a[e + 2];
                v += w3 * b[e];
                v += w4 * b[e + 1];
                v += w5 * b[e + 2];
                v += w6 * c[e];
                v += w7 * c[e + 1];
                v += w8 * c[e + 2];
                yr[e] = v;
            }
        }
        if (!direct)
            for (int64_t oy = 0; oy < OH; oy++)
                memcpy(y + oy * OW, ext + oy * P, sizeof(T) * (size_t)OW);
        return;
    }
    /* stride 2: planes ee, eo (even padded rows 0, 2, .., 2*OH) and oe, oo (odd rows 1, ..,
     * 2*OH - 1), each of even or odd padded columns, at pitch P */
    const int64_t P = OW + 1, ER = OH + 1;
    T *ee = buf, *eo = ee + ER * P, *oe = eo + ER * P, *oo = oe + OH * P, *ext = oo + OH * P;
    for (int64_t r = 0; r < 2 * OH + 1; r++) {
        int64_t i = r - ph;
        const T *xr = i >= 0 && i < H ? x + i * W : NULL;
        T *de = (r & 1) ? oe + (r / 2) * P : ee + (r / 2) * P;
        T *dodd = (r & 1) ? oo + (r / 2) * P : eo + (r / 2) * P;
        NAME(dw_fill)(de, xr, W, pw, 0, 2, P);
        NAME(dw_fill)(dodd, xr, W, pw, 1, 2, P);
    }
    const int64_t n = direct ? OW : (OH - 1) * P + OW;
    for (int64_t oy = 0; oy < (direct ? OH : 1); oy++) {
        const int64_t at = oy * P;
        const T *restrict a = ee + at, *restrict ao = eo + at, *restrict b = oe + at;
        const T *restrict bo = oo + at, *restrict c = a + P, *restrict co = ao + P;
        T *restrict yr = direct ? y + oy * OW : ext;
        for (int64_t e = 0; e < n; e++) {
            T v = bias;
            v += w0 * a[e];
            v += w1 * ao[e];
            v += w2 * a[e + 1];
            v += w3 * b[e];
            v += w4 * bo[e];
            v += w5 * b[e + 1];
            v += w6 * c[e];
            v += w7 * co[e];
            v += w8 * c[e + 1];
            yr[e] = v;
        }
    }
    if (!direct)
        for (int64_t oy = 0; oy < OH; oy++)
            memcpy(y + oy * OW, ext + oy * P, sizeof(T) * (size_t)OW);
}

/* Through a zero-padded copy of the channel (buf, DW_BUF_BYTES): no range checks. With
 * unit strides on the last two axes the rows (o1, .) of one o0 are a single run of the
 * padded width, so each tap is one long vector loop over it (then the pad columns are
 * dropped); 7x7 planes then cost 9 short loops instead of 63. */
TGT static void NAME(fwd_plane)(const hg_dw_geom *g, const dw_ranges *rg, const T *x, const T *w,
                                T bias, T *y)
{
    if (dw_is_3x3(g, sizeof(T))) {
        NAME(fwd_3x3)(g, x, w, bias, y);
        return;
    }
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
