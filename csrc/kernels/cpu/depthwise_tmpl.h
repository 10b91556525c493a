/* The plane kernels of depthwise.c for one element type and instruction set, included by
 * depthwise.c once per pair, which defines before it:
 *   T          the element type (float, double)
 *   NAME(x)    x with the type's and the set's suffixes (x##_f32_avx2)
 *   TGT        the function attribute that enables the set (empty for the baseline)
 * and the helpers dw_in_row and dw_ranges, and DW_GATHER2 (gather2.h's copy for T). The kernels:
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
    else if (hi > lo) DW_GATHER2(dst + lo, xr + off + 2 * lo, hi - lo);
    for (int64_t k = hi; k < n; k++) dst[k] = 0;
}

/* The zero-padded copy of plane x that the 3x3 kernels read, in buf: at stride 1 one plane of
 * the padded rows 0 .. OH + 1 (pitch OW + 2); at stride 2 four planes of even or odd padded rows
 * (0, 2, .., 2 OH and 1, 3, .., 2 OH - 1) and even or odd padded columns (pitch OW + 1), so that
 * every tap reads consecutive elements. pl: the plane(s) (pl[0] at stride 1; ee, eo, oe, oo at
 * stride 2); returns the pitch. The elements after them in buf are free (dw_is_3x3 counted an
 * output row buffer there). */
TGT static int64_t NAME(dw_pad3)(const hg_dw_geom *g, const T *x, T *buf, T **pl)
{
    const int64_t H = g->im[1], W = g->im[2], OH = g->out[1], OW = g->out[2];
    const int64_t ph = g->p[1], pw = g->p[2];
    if (g->s[2] == 1) {
        const int64_t P = OW + 2;
        for (int64_t r = 0; r < OH + 2; r++) {
            int64_t i = r - ph;
            NAME(dw_fill)(buf + r * P, i >= 0 && i < H ? x + i * W : NULL, W, pw, 0, 1, P);
        }
        pl[0] = buf;
        pl[1] = buf + (OH + 2) * P;
        return P;
    }
    const int64_t P = OW + 1, ER = OH + 1;
    pl[0] = buf;
    pl[1] = pl[0] + ER * P;
    pl[2] = pl[1] + ER * P;
    pl[3] = pl[2] + OH * P;
    pl[4] = pl[3] + OH * P;
    for (int64_t r = 0; r < 2 * OH + 1; r++) {
        int64_t i = r - ph, at = (r / 2) * P;
        const T *xr = i >= 0 && i < H ? x + i * W : NULL;
        NAME(dw_fill)(((r & 1) ? pl[2] : pl[0]) + at, xr, W, pw, 0, 2, P);
        NAME(dw_fill)(((r & 1) ? pl[3] : pl[1]) + at, xr, W, pw, 1, 2, P);
    }
    return P;
}

/* 2-D 3x3 taps, dilation 1, equal strides of 1 or 2 (MobileNet's layers; see dw_is_3x3): one
 * pass with all nine taps in registers over dw_pad3's copy of the plane. Narrow planes (14x14,
 * 7x7) run as one long loop over the padded rows laid end to end (the pad columns computed and
 * dropped), not as many short ones. The general plane loop below makes nine passes over each
 * output row instead and gathers every other element at stride 2: 2-4x slower on MobileNetV2's
 * eight layer shapes at batch 1 (2 threads; 2.9 ms against 0.76 ms for one of each). The sums
 * run in the same order as there: bias, then the taps row by row. add: y += the result (the
 * data gradient of several filters of one channel) instead of y = . */
TGT static void NAME(fwd_3x3)(const hg_dw_geom *g, const T *x, const T *w, T bias, T *y, bool add)
{
    const int64_t s = g->s[2], OH = g->out[1], OW = g->out[2];
    const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7],
            w8 = w[8];
    _Alignas(64) T buf[DW_BUF_BYTES / sizeof(T)];
    T *pl[5];
    const int64_t P = NAME(dw_pad3)(g, x, buf, pl);
    const bool direct = OW >= DW_DIRECT_W; /* rows long enough to run one by one into y */
    const int64_t n = direct ? OW : (OH - 1) * P + OW;
    T *ext = s == 1 ? pl[1] : pl[4];
    for (int64_t oy = 0; oy < (direct ? OH : 1); oy++) {
        const int64_t at = oy * P;
        T *restrict yr = direct && !add ? y + oy * OW : ext;
        if (s == 1) {
            const T *restrict a = pl[0] + at, *restrict b = a + P, *restrict c = b + P;
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
        } else {
            const T *restrict a = pl[0] + at, *restrict ao = pl[1] + at, *restrict b = pl[2] + at;
            const T *restrict bo = pl[3] + at, *restrict c = a + P, *restrict co = ao + P;
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
        if (direct && add)
            for (int64_t e = 0; e < OW; e++) y[oy * OW + e] += ext[e];
    }
    if (!direct)
        for (int64_t oy = 0; oy < OH; oy++) {
            if (add)
                for (int64_t e = 0; e < OW; e++) y[oy * OW + e] += ext[oy * P + e];
            else memcpy(y + oy * OW, ext + oy * P, sizeof(T) * (size_t)OW);
        }
}

/* dw[0..9) += the 3x3 weight gradient of one image's plane (dw_is_3x3's geometries): for every
 * tap, the sum over the outputs of dy times the input the tap read, from dw_pad3's copy, in
 * one pass with eight partial sums per tap (a vector each). */
TGT static void NAME(bwd_dw_3x3)(const hg_dw_geom *g, const T *dy, const T *x, T *dw)
{
    const int64_t s = g->s[2], OH = g->out[1], OW = g->out[2];
    _Alignas(64) T buf[DW_BUF_BYTES / sizeof(T)];
    T *pl[5];
    const int64_t P = NAME(dw_pad3)(g, x, buf, pl);
    T acc[9][8], tail[9];
    for (int k = 0; k < 9; k++) {
        tail[k] = 0;
        for (int q = 0; q < 8; q++) acc[k][q] = 0;
    }
    for (int64_t oy = 0; oy < OH; oy++) {
        const int64_t at = oy * P;
        const T *restrict d = dy + oy * OW;
        /* the nine tap rows: t[k] + e is the input tap k read for output e */
        const T *t[9];
        if (s == 1) {
            for (int k = 0; k < 9; k++) t[k] = pl[0] + at + (k / 3) * P + k % 3;
        } else {
            const T *rows[3][2] = {{pl[0] + at, pl[1] + at},
                                   {pl[2] + at, pl[3] + at},
                                   {pl[0] + at + P, pl[1] + at + P}};
            for (int r = 0; r < 3; r++) {
                t[3 * r] = rows[r][0];
                t[3 * r + 1] = rows[r][1];
                t[3 * r + 2] = rows[r][0] + 1;
            }
        }
        int64_t e = 0;
        for (; e + 8 <= OW; e += 8)
            for (int k = 0; k < 9; k++) {
                const T *restrict tk = t[k] + e;
                for (int q = 0; q < 8; q++) acc[k][q] += d[e + q] * tk[q];
            }
        for (; e < OW; e++)
            for (int k = 0; k < 9; k++) tail[k] += d[e] * t[k][e];
    }
    for (int k = 0; k < 9; k++)
        dw[k] += ((acc[k][0] + acc[k][1]) + (acc[k][2] + acc[k][3])) +
                 ((acc[k][4] + acc[k][5]) + (acc[k][6] + acc[k][7])) + tail[k];
}

/* dx += the data gradient of one filter at stride 2 (dw_is_3x3 and s == 2). Padded input row
 * ii = i + p and column jj = j + p received dy[oy][ox] through tap (ii - 2 oy, jj - 2 ox), so an
 * even ii takes taps 0 and 2 of the row (oy = ii / 2 and ii / 2 - 1), an odd one tap 1, and the
 * same for columns. With D dy's plane padded by one zero on every side (D[n + 1][m + 1] =
 * dy[n][m]), padded row 2n gets, at column 2m, w00 D[n+1][m+1] + w02 D[n+1][m] + w20 D[n][m+1]
 * + w22 D[n][m] and at 2m + 1, w01 D[n+1][m+1] + w21 D[n][m+1]; row 2n + 1 the same with
 * w10, w12 and w11 from D[n+1] alone. One vectorised loop per padded row writes both columns
 * of each m side by side; the general loop (nine scattered passes) took 3-4x longer. */
TGT static void NAME(bwd_dx_3x3s2)(const hg_dw_geom *g, const T *dy, const T *w, T *dx)
{
    const int64_t H = g->im[1], W = g->im[2], OH = g->out[1], OW = g->out[2];
    const int64_t ph = g->p[1], pw = g->p[2];
    const int64_t DP = OW + 3, DR = OH + 3; /* D's pitch and rows, a zero border beyond */
    _Alignas(64) T buf[DW_BUF_BYTES / sizeof(T)];
    T *D = buf, *row = buf + DR * DP; /* row: 2 * DP values of one padded dx row */
    memset(D, 0, sizeof(T) * (size_t)(DR * DP));
    for (int64_t n = 0; n < OH; n++)
        memcpy(D + (n + 1) * DP + 1, dy + n * OW, sizeof(T) * (size_t)OW);
    const int64_t M = (pw + W + 1) / 2; /* m with 2m or 2m + 1 < pw + W */
    for (int64_t i = 0; i < H; i++) {
        const int64_t ii = i + ph, n = ii / 2;
        const T *restrict a = D + (n + 1) * DP, *restrict b = D + n * DP;
        T *restrict r = row;
        if (ii % 2 == 0) {
            const T w00 = w[0], w01 = w[1], w02 = w[2], w20 = w[6], w21 = w[7], w22 = w[8];
            for (int64_t m = 0; m < M; m++) {
                r[2 * m] = w00 * a[m + 1] + w02 * a[m] + w20 * b[m + 1] + w22 * b[m];
                r[2 * m + 1] = w01 * a[m + 1] + w21 * b[m + 1];
            }
        } else {
            const T w10 = w[3], w11 = w[4], w12 = w[5];
            for (int64_t m = 0; m < M; m++) {
                r[2 * m] = w10 * a[m + 1] + w12 * a[m];
                r[2 * m + 1] = w11 * a[m + 1];
            }
        }
        T *restrict d = dx + i * W;
        const T *restrict src = row + pw;
        for (int64_t j = 0; j < W; j++) d[j] += src[j];
    }
}

/* dx += the data gradient of one filter at stride 1 (dw_is_3x3 and s == 1): the correlation of
 * dy with the filter turned by 180 degrees and padded by 2 - p, i.e. fwd_3x3 on dy's plane. */
TGT static void NAME(bwd_dx_3x3)(const hg_dw_geom *g, const T *dy, const T *w, T *dx)
{
    const hg_dw_geom t = dw_dx_geom(g);
    const T wf[9] = {w[8], w[7], w[6], w[5], w[4], w[3], w[2], w[1], w[0]};
    NAME(fwd_3x3)(&t, dy, wf, 0, dx, true);
}

/* Through a zero-padded copy of the channel (buf, DW_BUF_BYTES): no range checks. With
 * unit strides on the last two axes the rows (o1, .) of one o0 are a single run of the
 * padded width, so each tap is one long vector loop over it (then the pad columns are
 * dropped); 7x7 planes then cost 9 short loops instead of 63. */
TGT static void NAME(fwd_plane)(const hg_dw_geom *g, const dw_ranges *rg, const T *x, const T *w,
                                T bias, T *y)
{
    if (dw_is_3x3(g, sizeof(T))) {
        NAME(fwd_3x3)(g, x, w, bias, y, false);
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
    if (dw_is_3x3(g, sizeof(T))) {
        NAME(bwd_dw_3x3)(g, dy, x, dw);
        return;
    }
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
    if (g->s[2] == 1 && dw_is_3x3(g, sizeof(T)) && dw_dx_is_3x3(g, sizeof(T))) {
        NAME(bwd_dx_3x3)(g, dy, w, dx);
        return;
    }
    if (g->s[2] == 2 && dw_is_3x3(g, sizeof(T)) && dw_dx_s2_fits(g, sizeof(T))) {
        NAME(bwd_dx_3x3s2)(g, dy, w, dx);
        return;
    }
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
