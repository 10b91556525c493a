/* The float32 3x3 depthwise kernels of depthwise.c in one instruction set's vectors: the plane
 * kernel (dw3: one channel's plane, VW outputs of a row per vector) and the channel-blocked one
 * (dwb: VW channels per vector, for small planes). Included once per set, with:
 *   VW                   lanes per vector (16: AVX-512, 8: AVX2)
 *   V, VM                the vector type and its lane-mask type
 *   TGT_V                the function attribute of the set
 *   VN(x)                x's name for the set
 *   V_SET1, V_ZERO, V_FMA, V_LOAD, V_STORE (aligned), V_LOADU, V_STOREU, V_MLOAD(m, p) (masked
 *                        lanes read as 0 and not at all), V_MSTORE(p, m, v)
 *   VM_RANGE(lo, hi)     the mask of lanes [lo, hi) (0 <= lo, hi <= VW)
 *   V_EVEN(a, b), V_ODD(a, b)  the even / odd lanes of the 2 VW floats a then b
 *   V_POST(post, v)      core/post.h's activation in registers, bit for bit
 *   V_TR(src, lds, nr, nk, out)  a VW x VW transpose (tr16.h / tr8.h)
 * and undefines them at its end. Every output is the same sum in the same order in both sets
 * (bias, then the taps row by row, each a fused multiply-add), so they agree bit for bit with
 * each other and across kernels. */

/* The lanes l of a load at column c of a row of W whose column c + l is inside. */
TGT_V static inline VM VN(dw3_mask)(int64_t c, int64_t W)
{
    int64_t lo = c < 0 ? -c : 0, hi = W - c < VW ? W - c : VW;
    return hi <= lo ? VM_RANGE(0, 0) : VM_RANGE(lo, hi);
}

/* The three tap vectors of input row r (NULL: a padding row, zeros) for the VW outputs whose
 * first tap reads column c; m: the loads' masks (stride 1: c, c + 1, c + 2; stride 2: c,
 * c + VW, c + 2, c + VW + 2), or NULL where every lane is inside: plain loads (a masked load is
 * several times slower on AMD's Zen: the plane kernel ran at half the portable loops' speed). */
TGT_V static inline void VN(dw3_taps)(const float *r, int64_t c, int64_t s, const VM *m, V *t)
{
    if (!r) {
        t[0] = t[1] = t[2] = V_ZERO();
        return;
    }
    const float *a = (const float *)((uintptr_t)r + (uintptr_t)(c * (int64_t)sizeof(float)));
    if (!m) {
        if (s == 1) {
            t[0] = V_LOADU(a);
            t[1] = V_LOADU(a + 1);
            t[2] = V_LOADU(a + 2);
            return;
        }
        const V lo = V_LOADU(a), hi = V_LOADU(a + VW);
        const V lo2 = V_LOADU(a + 2), hi2 = V_LOADU(a + VW + 2);
        t[0] = V_EVEN(lo, hi);
        t[1] = V_ODD(lo, hi);
        t[2] = V_EVEN(lo2, hi2);
        return;
    }
    if (s == 1) {
        t[0] = V_MLOAD(m[0], a);
        t[1] = V_MLOAD(m[1], a + 1);
        t[2] = V_MLOAD(m[2], a + 2);
        return;
    }
    const V lo = V_MLOAD(m[0], a), hi = V_MLOAD(m[1], a + VW);
    const V lo2 = V_MLOAD(m[2], a + 2), hi2 = V_MLOAD(m[3], a + VW + 2);
    t[0] = V_EVEN(lo, hi);
    t[1] = V_ODD(lo, hi);
    t[2] = V_EVEN(lo2, hi2);
}

TGT_V static void VN(dw3_plane)(const hg_dw_geom *g, const float *x, const float *w, float bias,
                                float *y, const hg_post *post)
{
    const int64_t H = g->im[1], W = g->im[2], OH = g->out[1], OW = g->out[2], s = g->s[2];
    const int64_t ph = g->p[1], pw = g->p[2];
    V wv[9];
    for (int k = 0; k < 9; k++) wv[k] = V_SET1(w[k]);
    const V bv = V_SET1(bias);
    for (int64_t oy = 0; oy < OH; oy += DW3_ROWS) {
        const int64_t nr = OH - oy < DW3_ROWS ? OH - oy : DW3_ROWS;
        const int64_t nin = (nr - 1) * s + 3; /* input rows the block reads */
        const float *rows[(DW3_ROWS - 1) * 2 + 3];
        for (int64_t t = 0; t < nin; t++) {
            int64_t iy = oy * s - ph + t;
            rows[t] = iy >= 0 && iy < H ? x + iy * W : NULL;
        }
        for (int64_t ox = 0; ox < OW; ox += VW) {
            const int64_t c = ox * s - pw; /* tap (., 0)'s column for lane 0 */
            VM mv[4], *m = mv;
            if (c >= 0 && c + (s == 1 ? VW : 2 * VW) + 2 <= W) m = NULL; /* all inside */
            else if (s == 1) {
                for (int k = 0; k < 3; k++) m[k] = VN(dw3_mask)(c + k, W);
            } else {
                m[0] = VN(dw3_mask)(c, W);
                m[1] = VN(dw3_mask)(c + VW, W);
                m[2] = VN(dw3_mask)(c + 2, W);
                m[3] = VN(dw3_mask)(c + VW + 2, W);
            }
            V acc[DW3_ROWS] = {bv, bv, bv, bv}, tv[3];
            /* input rows in order: row t gives output row o its tap row ky = t - o * s, so each
             * sum takes its taps in the order ky = 0, 1, 2 */
#define DW3_TAP(o, ky)                                                                          \
    (acc[o] = V_FMA(wv[3 * (ky)], tv[0], acc[o]), acc[o] = V_FMA(wv[3 * (ky) + 1], tv[1], acc[o]), \
     acc[o] = V_FMA(wv[3 * (ky) + 2], tv[2], acc[o]))
#define DW3_ROW(t) VN(dw3_taps)(rows[t], c, s, m, tv)
            if (nr == DW3_ROWS && s == 1) { /* the full blocks, unrolled */
                DW3_ROW(0), DW3_TAP(0, 0);
                DW3_ROW(1), DW3_TAP(0, 1), DW3_TAP(1, 0);
                DW3_ROW(2), DW3_TAP(0, 2), DW3_TAP(1, 1), DW3_TAP(2, 0);
                DW3_ROW(3), DW3_TAP(1, 2), DW3_TAP(2, 1), DW3_TAP(3, 0);
                DW3_ROW(4), DW3_TAP(2, 2), DW3_TAP(3, 1);
                DW3_ROW(5), DW3_TAP(3, 2);
            } else if (nr == DW3_ROWS) {
                DW3_ROW(0), DW3_TAP(0, 0);
                DW3_ROW(1), DW3_TAP(0, 1);
                DW3_ROW(2), DW3_TAP(0, 2), DW3_TAP(1, 0);
                DW3_ROW(3), DW3_TAP(1, 1);
                DW3_ROW(4), DW3_TAP(1, 2), DW3_TAP(2, 0);
                DW3_ROW(5), DW3_TAP(2, 1);
                DW3_ROW(6), DW3_TAP(2, 2), DW3_TAP(3, 0);
                DW3_ROW(7), DW3_TAP(3, 1);
                DW3_ROW(8), DW3_TAP(3, 2);
            } else {
                for (int64_t t = 0; t < nin; t++) {
                    DW3_ROW(t);
                    for (int o = 0; o < nr; o++) {
                        int64_t ky = t - o * s;
                        if (ky >= 0 && ky <= 2) DW3_TAP(o, ky);
                    }
                }
            }
#undef DW3_ROW
#undef DW3_TAP
            if (OW - ox >= VW) {
                for (int o = 0; o < nr; o++) V_STOREU(y + (oy + o) * OW + ox, V_POST(post, acc[o]));
            } else {
                const VM om = VM_RANGE(0, OW - ox);
                for (int o = 0; o < nr; o++)
                    V_MSTORE(y + (oy + o) * OW + ox, om, V_POST(post, acc[o]));
            }
        }
    }
}

/* Output planes [u0, u1): u = n * F + f. */
TGT_V static void VN(dw3_range)(void *ctx, int64_t u0, int64_t u1)
{
    const dw3_job *j = ctx;
    const hg_dw_geom *g = j->g;
    const int64_t F = g->C * g->mult, I = g->im[1] * g->im[2], P = g->out[1] * g->out[2];
    for (int64_t u = u0; u < u1; u++) {
        int64_t n = u / F, f = u - n * F, c = f / g->mult;
        VN(dw3_plane)(g, j->x + (n * g->C + c) * I, j->w + f * 9, j->b ? j->b[f] : 0.0f,
                      j->y + u * P, j->post);
    }
}

/* Channel blocks. Units [u0, u1): u = image n * blocks + block of VW channels. */
TGT_V static void VN(dwb_range)(void *ctx, int64_t u0, int64_t u1)
{
    const dwb_job *j = ctx;
    const hg_dw_geom *g = j->g;
    const int64_t H = g->im[1], W = g->im[2], OH = g->out[1], OW = g->out[2], s = g->s[1];
    const int64_t ph = g->p[1], pw = g->p[2], I = H * W, P = OH * OW;
    const int64_t PH = (OH - 1) * s + 3, PW = (OW - 1) * s + 3; /* the padded window */
    _Alignas(64) float in[DWB_MAX_IN * VW];
    _Alignas(64) float out[DWB_MAX_OUT * VW];
    _Alignas(64) float wt[9 * VW];
    V t[VW];
    for (int64_t u = u0; u < u1; u++) {
        const int64_t n = u / j->blocks, c0 = (u - n * j->blocks) * VW;
        const int64_t nc = g->C - c0 < VW ? g->C - c0 : VW;
        const float *x = j->x + (n * g->C + c0) * I;
        float *y = j->y + (n * g->C + c0) * P;
        /* the nine taps' weights and the bias, one lane per channel */
        for (int k = 0; k < 9; k++)
            for (int64_t c = 0; c < VW; c++) wt[k * VW + c] = c < nc ? j->w[(c0 + c) * 9 + k] : 0;
        V wv[9];
        for (int k = 0; k < 9; k++) wv[k] = V_LOAD(wt + k * VW);
        const V bv = j->b ? V_MLOAD(VM_RANGE(0, nc), j->b + c0) : V_ZERO();
        /* padded window: pixel (py, px) holds input (py - ph, px - pw), zero outside */
        const int64_t y0 = ph, y1 = H + ph < PH ? H + ph : PH; /* window rows inside */
        const int64_t xn = W + pw < PW ? W : PW - pw;          /* input columns inside */
        memset(in, 0, sizeof(float) * VW * (size_t)(y0 * PW));
        memset(in + y1 * PW * VW, 0, sizeof(float) * VW * (size_t)((PH - y1) * PW));
        for (int64_t py = y0; py < y1; py++) {
            float *row = in + py * PW * VW;
            memset(row, 0, sizeof(float) * VW * (size_t)pw);
            memset(row + (pw + xn) * VW, 0, sizeof(float) * VW * (size_t)(PW - pw - xn));
            for (int64_t ix = 0; ix < xn; ix += VW) {
                int64_t nk = xn - ix < VW ? xn - ix : VW;
                V_TR(x + (py - ph) * W + ix, I, nc, nk, t);
                float *d = row + (pw + ix) * VW;
                for (int64_t k = 0; k < nk; k++) V_STORE(d + k * VW, t[k]);
            }
        }
        /* four output pixels at a time: four independent chains of nine taps */
        const int64_t st = s * VW, rs = PW * VW;
        for (int64_t oy = 0; oy < OH; oy++) {
            const float *a = in + oy * s * rs;
            float *o = out + oy * OW * VW;
            int64_t ox = 0;
            for (; ox + 4 <= OW; ox += 4, a += 4 * st, o += 4 * VW) {
                V v0 = bv, v1 = bv, v2 = bv, v3 = bv;
#define DWB_TAP(k, off)                                                                         \
    {                                                                                           \
        const float *q = a + (off);                                                             \
        v0 = V_FMA(wv[k], V_LOAD(q), v0);                                                       \
        v1 = V_FMA(wv[k], V_LOAD(q + st), v1);                                                  \
        v2 = V_FMA(wv[k], V_LOAD(q + 2 * st), v2);                                              \
        v3 = V_FMA(wv[k], V_LOAD(q + 3 * st), v3);                                              \
    }
                DWB_TAP(0, 0);
                DWB_TAP(1, VW);
                DWB_TAP(2, 2 * VW);
                DWB_TAP(3, rs);
                DWB_TAP(4, rs + VW);
                DWB_TAP(5, rs + 2 * VW);
                DWB_TAP(6, 2 * rs);
                DWB_TAP(7, 2 * rs + VW);
                DWB_TAP(8, 2 * rs + 2 * VW);
#undef DWB_TAP
                V_STORE(o, V_POST(j->post, v0));
                V_STORE(o + VW, V_POST(j->post, v1));
                V_STORE(o + 2 * VW, V_POST(j->post, v2));
                V_STORE(o + 3 * VW, V_POST(j->post, v3));
            }
            for (; ox < OW; ox++, a += st, o += VW) {
                V v = bv;
                for (int k = 0; k < 9; k++)
                    v = V_FMA(wv[k], V_LOAD(a + (k / 3) * rs + (k % 3) * VW), v);
                V_STORE(o, V_POST(j->post, v));
            }
        }
        for (int64_t p0 = 0; p0 < P; p0 += VW) { /* back to planes: VW pixels of each channel */
            int64_t np = P - p0 < VW ? P - p0 : VW;
            const VM pm = VM_RANGE(0, np);
            V_TR(out + p0 * VW, VW, np, VW, t);
            if (np == VW)
                for (int64_t c = 0; c < nc; c++) V_STOREU(y + c * P + p0, t[c]);
            else
                for (int64_t c = 0; c < nc; c++) V_MSTORE(y + c * P + p0, pm, t[c]);
        }
    }
}

#undef VW
#undef V
#undef VM
#undef TGT_V
#undef VN
#undef V_SET1
#undef V_ZERO
#undef V_FMA
#undef V_LOAD
#undef V_STORE
#undef V_LOADU
#undef V_STOREU
#undef V_MLOAD
#undef V_MSTORE
#undef VM_RANGE
#undef V_EVEN
#undef V_ODD
#undef V_POST
#undef V_TR
