/* The fused RNN forward and backward for one float type, included once per type by
 * ops/rnn_kernels.c with RT (float or double), RSFX (f32, f64), RGEMM (hg_gemm_f32/f64) and
 * RVEXP(src, dst, n), an element-wise exp over n values (dst may equal src), defined. Geometry, parameter and reserve layouts: rnn.h.
 *
 * Forward, per layer and direction: one GEMM projects the inputs of every step at once (the
 * bulk of the work for a wide input), then per step one recurrent GEMM (N x R times R x G*H) and
 * one fused loop over the gates. The state being carried lives in scratch (hcur, ccur), so a
 * batch row past its sequence length simply keeps its state. Backward runs the steps in reverse
 * with one GEMM per step for dh_{t-1}, keeps the gate gradients of every step, and then forms
 * the weight gradients and the input gradient with one GEMM each over all steps.
 */
#define RCAT2(a, b) a##_##b
#define RCAT(a, b) RCAT2(a, b)
#define RFN(name) RCAT(name, RSFX)

static inline bool RFN(valid)(const int64_t *lens, int64_t t, int64_t n)
{
    return !lens || t < lens[n];
}

/* The step that ran before step t of direction dir for batch row n, or -1 for the initial
 * state (the backward direction starts at the row's last valid step). */
static inline int64_t RFN(prev_step)(const int64_t *lens, int64_t T, int64_t dir, int64_t t,
                                     int64_t n)
{
    if (dir == 0) return t - 1;
    int64_t len = lens ? lens[n] : T;
    return t + 1 < len ? t + 1 : -1;
}

static void RFN(copy)(RT *dst, const RT *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

/* The recurrent products on packed weights (rnn_gemm.h) for float32 with more than 8 batch
 * rows (fewer go to hg_gemm's own small-side kernels, which need no packing); width 0: the
 * BLAS. */
static int64_t RFN(panel_width)(const hg_rnn_dims *d)
{
#if RPACKED
    return d->N > 8 ? hg_rnn_panel_width() : 0;
#else
    (void)d;
    return 0;
#endif
}

static void RFN(pack)(const RT *B, bool tb, int64_t K, int64_t Ncols, int64_t ldb, int64_t W, RT *P)
{
#if RPACKED
    hg_rnn_pack(B, tb, K, Ncols, ldb, W, P);
#else
    (void)B, (void)tb, (void)K, (void)Ncols, (void)ldb, (void)W, (void)P;
#endif
}

static void RFN(gemm_packed)(int64_t M, int64_t Ncols, int64_t K, const RT *A, int64_t lda,
                             const RT *P, int64_t W, RT *C, int64_t ldc)
{
#if RPACKED
    hg_rnn_gemm_packed(M, Ncols, K, A, lda, P, W, C, ldc);
#else
    (void)M, (void)Ncols, (void)K, (void)A, (void)lda, (void)P, (void)W, (void)C, (void)ldc;
#endif
}

static RT RFN(clip_cell)(const hg_rnn_dims *d, RT c)
{
    if (!d->clip) return c;
    if (d->clip_nan) return (RT)fmax(fmin((double)c, d->clip_max), d->clip_min);
    if (c != c) return c; /* NaN propagates unless clip_nan */
    return c<(RT)d->clip_min ? (RT)d->clip_min : c>(RT) d->clip_max ? (RT)d->clip_max : c;
}

/* One step's gate loop for one batch row: reads the input projection (g, without biases) and
 * the recurrent product hh, writes the activated gates back over g and the new state. Returns
 * the new h (unprojected for LSTM with a projection) in hout[0..H). The activations come from
 * one vectorised exp over the row's gates: sigmoid(a) = 1 / (1 + e^-a), tanh(a) =
 * 2 / (1 + e^-2a) - 1 (within a few ulp of 1 in absolute terms, which is what a gate needs). */
static void RFN(gate_row)(const hg_rnn_dims *d, RT *g, const RT *hh, const RT *bx, const RT *bh,
                          const RT *h, RT *c, RT *cst, RT *tcs, RT *hout)
{
    const int64_t H = d->H;
    switch (d->mode) {
    case HG_RNN_LSTM:
        for (int64_t j = 0; j < 4 * H; j++) {
            RT a = g[j] + bx[j] + bh[j] + hh[j];
            g[j] = j >= 2 * H && j < 3 * H ? -2 * a : -a;
        }
        RVEXP(g, g, 4 * H);
        for (int64_t j = 0; j < H; j++) {
            RT i = 1 / (1 + g[j]), f = 1 / (1 + g[H + j]);
            RT gg = 2 / (1 + g[2 * H + j]) - 1, o = 1 / (1 + g[3 * H + j]);
            RT cv = RFN(clip_cell)(d, f * c[j] + i * gg);
            g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
            c[j] = cst[j] = cv;
            tcs[j] = -2 * cv;
        }
        RVEXP(tcs, tcs, H);
        for (int64_t j = 0; j < H; j++) {
            RT tc = 2 / (1 + tcs[j]) - 1;
            tcs[j] = tc;
            hout[j] = g[3 * H + j] * tc;
        }
        break;
    case HG_RNN_GRU:
        for (int64_t j = 0; j < 2 * H; j++) g[j] = -(g[j] + bx[j] + hh[j] + bh[j]);
        RVEXP(g, g, 2 * H);
        for (int64_t j = 0; j < H; j++) {
            RT r = 1 / (1 + g[j]), hn = hh[2 * H + j] + bh[2 * H + j];
            g[j] = r;
            g[H + j] = 1 / (1 + g[H + j]);
            g[3 * H + j] = hn;
            g[2 * H + j] = -2 * (g[2 * H + j] + bx[2 * H + j] + r * hn);
        }
        RVEXP(g + 2 * H, g + 2 * H, H);
        for (int64_t j = 0; j < H; j++) {
            RT nn = 2 / (1 + g[2 * H + j]) - 1, z = g[H + j];
            g[2 * H + j] = nn;
            hout[j] = (1 - z) * nn + z * h[j];
        }
        break;
    case HG_RNN_TANH:
        for (int64_t j = 0; j < H; j++) g[j] = -2 * (g[j] + bx[j] + hh[j] + bh[j]);
        RVEXP(g, g, H);
        for (int64_t j = 0; j < H; j++) g[j] = hout[j] = 2 / (1 + g[j]) - 1;
        break;
    case HG_RNN_RELU:
        for (int64_t j = 0; j < H; j++) {
            RT a = g[j] + bx[j] + hh[j] + bh[j];
            g[j] = hout[j] = a > 0 ? a : 0;
        }
        break;
    }
}

/* The gate loop of one forward step for batch rows [n0, n1): the rows are independent, so the
 * pool splits them (the loop is a tenth of an LSTM's time, on one core otherwise). */
typedef struct RFN(fgate_job) {
    const hg_rnn_dims *d;
    const int64_t *lens;
    int64_t t, dir, ldhg;
    RT *yl, *gates, *cst, *tcst, *rst, *hg, *hcur, *ccur;
    const RT *bx, *bh;
} RFN(fgate_job);

/* Rows a task takes: enough gate values that the hand-off costs little beside them. */
static int64_t RFN(gate_grain)(int64_t GS) { return GS >= 8192 ? 1 : 8192 / (GS > 0 ? GS : 1); }

static void RFN(fgate_range)(void *ctx, int64_t n0, int64_t n1)
{
    const RFN(fgate_job) *job = ctx;
    const hg_rnn_dims *d = job->d;
    const int64_t N = d->N, H = d->H, R = hg_rnn_R(d), YW = d->D * R, GS = hg_rnn_GS(d);
    const int64_t t = job->t, dir = job->dir, ldhg = job->ldhg;
    const int64_t *lens = job->lens;
    const bool lstm = d->mode == HG_RNN_LSTM;
    RT *yl = job->yl, *gates = job->gates, *cst = job->cst, *tcst = job->tcst, *rst = job->rst;
    RT *hg = job->hg, *hcur = job->hcur, *ccur = job->ccur;
    const RT *bx = job->bx, *bh = job->bh;
    for (int64_t n = n0; n < n1; n++) {
        const int64_t row = t * N + n;
        RT *yrow = yl + row * YW + dir * R, *g = gates + row * GS;
        if (!RFN(valid)(lens, t, n)) { /* past the sequence: zeros, the state kept */
            for (int64_t j = 0; j < R; j++) yrow[j] = 0;
            for (int64_t j = 0; j < GS; j++) g[j] = 0;
            if (cst) RFN(copy)(cst + row * H, ccur + n * H, H);
            if (tcst)
                for (int64_t j = 0; j < H; j++) tcst[row * H + j] = 0;
            if (rst)
                for (int64_t j = 0; j < H; j++) rst[row * H + j] = 0;
            continue;
        }
        RT *hout = rst ? rst + row * H : yrow;
        RFN(gate_row)(d, g, hg + n * ldhg, bx, bh, hcur + n * R, lstm ? ccur + n * H : NULL,
                      cst ? cst + row * H : NULL, tcst ? tcst + row * H : NULL, hout);
        if (!rst) RFN(copy)(hcur + n * R, yrow, R);
    }
}

/* One direction of one layer, forward. in: (T*N, Iin); yl: the layer's output (T*N, D*R). */
static void RFN(fwd_dir)(const hg_rnn_dims *d, int64_t l, int64_t dir, const RT *in,
                         const hg_rnn_wptr *wp, const RT *h0, const RT *c0, const int64_t *lens,
                         RT *yl, RT *hy, RT *cy, RT *res, RT *ws)
{
    const int64_t T = d->T, N = d->N, H = d->H, R = hg_rnn_R(d), D = d->D, TN = T * N;
    const int64_t GH = hg_rnn_gates(d) * H, GS = hg_rnn_GS(d), Iin = hg_rnn_layer_in(d, l);
    const int64_t k = l * D + dir, YW = D * R;
    const bool lstm = d->mode == HG_RNN_LSTM;
    const RT *wx = wp[k].wx, *wh = wp[k].wh, *wr = wp[k].wr;
    hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
    const int64_t W = RFN(panel_width)(d), ldhg = W ? hg_rnn_pad32(GH) : GH;
    RT *hcur = ws, *ccur = hcur + N * R, *hg = ccur + N * H, *hp = hg + N * hg_rnn_pad32(GH);
    RT *packed = hp + N * R;
    RT *gates = res + ro.gates[dir], *cst = lstm ? res + ro.c[dir] : NULL;
    RT *tcst = lstm ? res + ro.tc[dir] : NULL, *rst = d->P ? res + ro.r[dir] : NULL;
    const RT *bx = wp[k].bx, *bh = wp[k].bh;
    RGEMM(false, true, TN, GH, Iin, 1, in, Iin, wx, Iin, 0, gates, GS);
    RFN(copy)(hcur, h0 + k * N * R, N * R);
    if (lstm) RFN(copy)(ccur, c0 + k * N * H, N * H);
    if (W && T > 0) RFN(pack)(wh, true, R, GH, R, W, packed);
    for (int64_t s = 0; s < T; s++) {
        const int64_t t = dir == 0 ? s : T - 1 - s;
        if (W) RFN(gemm_packed)(N, GH, R, hcur, R, packed, W, hg, ldhg);
        else RGEMM(false, true, N, GH, R, 1, hcur, R, wh, R, 0, hg, GH);
        RFN(fgate_job)
        job = {.d = d,
               .lens = lens,
               .t = t,
               .dir = dir,
               .ldhg = ldhg,
               .yl = yl,
               .gates = gates,
               .cst = cst,
               .tcst = tcst,
               .rst = rst,
               .hg = hg,
               .hcur = hcur,
               .ccur = ccur,
               .bx = bx,
               .bh = bh};
        hg_parallel_for(N, RFN(gate_grain)(GS), RFN(fgate_range), &job);
        if (rst) { /* h = W_hr r for the valid rows */
            RGEMM(false, true, N, R, H, 1, rst + t * N * H, H, wr, H, 0, hp, R);
            for (int64_t n = 0; n < N; n++) {
                if (!RFN(valid)(lens, t, n)) continue;
                RFN(copy)(hcur + n * R, hp + n * R, R);
                RFN(copy)(yl + (t * N + n) * YW + dir * R, hp + n * R, R);
            }
        }
    }
    RFN(copy)(hy + k * N * R, hcur, N * R);
    if (lstm) RFN(copy)(cy + k * N * H, ccur, N * H);
}

void RFN(hg_rnn_forward)(const hg_rnn_dims *d, bool train, const RT *x, const hg_rnn_wptr *wp,
                         const RT *h0, const RT *c0, const int64_t *lens, RT *y, RT *hy, RT *cy,
                         RT *res, RT *ws)
{
    const int64_t TN = d->T * d->N, YS = TN * d->D * hg_rnn_R(d);
    const RT *in = x;
    for (int64_t l = 0; l < d->L; l++) {
        hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
        RT *yl = l == d->L - 1 ? y : res + ro.y;
        for (int64_t dir = 0; dir < d->D; dir++)
            RFN(fwd_dir)(d, l, dir, in, wp, h0, c0, lens, yl, hy, cy, res, ws);
        in = yl;
        if (l < d->L - 1 && d->drop > 0) {
            /* The mask (drawn by the caller) always exists; the masked copy feeds the next layer
             * only in training, as MXNet's dropout. */
            RT *xd = res + ro.xd;
            const RT *m = res + ro.mask;
            if (train) {
                for (int64_t i = 0; i < YS; i++) xd[i] = yl[i] * m[i];
                in = xd;
            } else {
                for (int64_t i = 0; i < YS; i++) xd[i] = yl[i];
            }
        }
    }
}

/* Gate gradients of one step for batch row n. dh: dL/dh_t (after the projection's adjoint when
 * there is one: dL/dr_t), updated to the part of dL/dh_{t-1} that bypasses the recurrent GEMM
 * (GRU's z * dh; zero otherwise). dc: dL/dc_t in, dL/dc_{t-1} out. */
static void RFN(gate_grad_row)(const hg_rnn_dims *d, const RT *g, const RT *cst, const RT *tcs,
                               const RT *cprev, const RT *hprev, RT *dh, RT *dc, RT *dgx, RT *dgh)
{
    const int64_t H = d->H;
    switch (d->mode) {
    case HG_RNN_LSTM:
        for (int64_t j = 0; j < H; j++) {
            RT i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j], c = cst[j];
            RT tc = tcs[j];
            RT dcv = dc[j] + dh[j] * o * ((RT)1 - tc * tc);
            if (d->clip && (c <= (RT)d->clip_min || c >= (RT)d->clip_max)) dcv = 0;
            dgx[j] = dcv * gg * i * ((RT)1 - i);
            dgx[H + j] = dcv * cprev[j] * f * ((RT)1 - f);
            dgx[2 * H + j] = dcv * i * ((RT)1 - gg * gg);
            dgx[3 * H + j] = dh[j] * tc * o * ((RT)1 - o);
            dc[j] = dcv * f;
            dh[j] = 0;
        }
        break;
    case HG_RNN_GRU:
        for (int64_t j = 0; j < H; j++) {
            RT r = g[j], z = g[H + j], nn = g[2 * H + j], hn = g[3 * H + j], dv = dh[j];
            RT dnp = dv * ((RT)1 - z) * ((RT)1 - nn * nn);
            RT drp = dnp * hn * r * ((RT)1 - r);
            RT dzp = dv * (hprev[j] - nn) * z * ((RT)1 - z);
            dgx[j] = dgh[j] = drp;
            dgx[H + j] = dgh[H + j] = dzp;
            dgx[2 * H + j] = dnp;
            dgh[2 * H + j] = dnp * r;
            dh[j] = dv * z;
        }
        break;
    case HG_RNN_TANH:
        for (int64_t j = 0; j < H; j++) {
            dgx[j] = dh[j] * ((RT)1 - g[j] * g[j]);
            dh[j] = 0;
        }
        break;
    case HG_RNN_RELU:
        for (int64_t j = 0; j < H; j++) {
            dgx[j] = g[j] > 0 ? dh[j] : 0;
            dh[j] = 0;
        }
        break;
    }
}

/* Column sums of a (rows, cols) matrix into out. */
static void RFN(colsum)(const RT *a, int64_t rows, int64_t cols, RT *out)
{
    for (int64_t j = 0; j < cols; j++) out[j] = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++) out[j] += a[r * cols + j];
}

typedef struct RFN(bwd_bufs) {
    RT *dh, *dc, *dr, *tmp, *dg, *dgh, *hp, *dhall, *packed;
} RFN(bwd_bufs);

/* One direction of one layer, backward: BPTT over the steps, then the batched weight, bias and
 * input gradients (dxl accumulates over the directions: dir 0 writes it). */
/* The gate-gradient loop of one backward step for batch rows [n0, n1) (independent rows, as
 * in the forward). */
typedef struct RFN(bgate_job) {
    const hg_rnn_dims *d;
    const int64_t *lens;
    int64_t t, k, dir, din_ld;
    const RT *c0, *gates, *cst, *tcst;
    const RFN(bwd_bufs) * b;
    RT *dgate_in, *dgh;
    bool proj;
} RFN(bgate_job);

static void RFN(bgate_range)(void *ctx, int64_t n0, int64_t n1)
{
    const RFN(bgate_job) *job = ctx;
    const hg_rnn_dims *d = job->d;
    const int64_t T = d->T, N = d->N, H = d->H, R = hg_rnn_R(d), GS = hg_rnn_GS(d);
    const int64_t GH = hg_rnn_gates(d) * H, t = job->t, k = job->k, din_ld = job->din_ld;
    const int64_t *lens = job->lens;
    const bool lstm = d->mode == HG_RNN_LSTM;
    const RT *c0 = job->c0, *gates = job->gates, *cst = job->cst, *tcst = job->tcst;
    const RFN(bwd_bufs) *b = job->b;
    RT *dgate_in = job->dgate_in, *dgh = job->dgh;
    for (int64_t n = n0; n < n1; n++) {
        const int64_t row = t * N + n;
        if (!RFN(valid)(lens, t, n)) continue;
        int64_t p = RFN(prev_step)(lens, T, job->dir, t, n);
        const RT *cprev = NULL;
        if (lstm) cprev = p < 0 ? c0 + (k * N + n) * H : cst + (p * N + n) * H;
        RFN(gate_grad_row)(d, gates + row * GS, cst ? cst + row * H : NULL,
                           tcst ? tcst + row * H : NULL, cprev, b->hp + row * R,
                           dgate_in + n * din_ld, lstm ? b->dc + n * H : NULL, b->dg + row * GH,
                           dgh + row * GH);
        if (job->proj) /* dh fed the projection only; the recurrent GEMM gives dh_{t-1} */
            for (int64_t j = 0; j < R; j++) b->dh[n * R + j] = 0;
    }
}

static void RFN(bwd_dir)(const hg_rnn_dims *d, int64_t l, int64_t dir, const RT *in, const RT *w,
                         const RT *h0, const RT *c0, const int64_t *lens, const RT *yl,
                         const RT *res, const RT *dyl, const RT *dhy, const RT *dcy, RT *dxl,
                         RT *dw, RT *dh0, RT *dc0, const RFN(bwd_bufs) * b)
{
    const int64_t T = d->T, N = d->N, H = d->H, R = hg_rnn_R(d), D = d->D, TN = T * N;
    const int64_t GH = hg_rnn_gates(d) * H, GS = hg_rnn_GS(d), Iin = hg_rnn_layer_in(d, l);
    const int64_t k = l * D + dir, YW = D * R;
    const bool lstm = d->mode == HG_RNN_LSTM, gru = d->mode == HG_RNN_GRU;
    hg_rnn_poff po = hg_rnn_param_offsets(d, l, dir);
    hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
    const RT *gates = res + ro.gates[dir], *cst = lstm ? res + ro.c[dir] : NULL;
    const RT *tcst = lstm ? res + ro.tc[dir] : NULL, *rst = d->P ? res + ro.r[dir] : NULL;
    RT *dgh = gru ? b->dgh : b->dg;
    /* h_{t-1} of every step, for the recurrent weights' gradient (and GRU's gate loop). */
    for (int64_t t = 0; t < T; t++)
        for (int64_t n = 0; n < N; n++) {
            int64_t p = RFN(prev_step)(lens, T, dir, t, n);
            const RT *src = p < 0 ? h0 + (k * N + n) * R : yl + (p * N + n) * YW + dir * R;
            RFN(copy)(b->hp + (t * N + n) * R, src, R);
        }
    RFN(copy)(b->dh, dhy + k * N * R, N * R);
    if (lstm) RFN(copy)(b->dc, dcy + k * N * H, N * H);
    const int64_t W = RFN(panel_width)(d), ldt = W ? hg_rnn_pad32(R) : R;
    if (W && T > 0) RFN(pack)(w + po.wh, false, GH, R, R, W, b->packed);
    for (int64_t s = T - 1; s >= 0; s--) {
        const int64_t t = dir == 0 ? s : T - 1 - s;
        for (int64_t n = 0; n < N; n++) {
            const int64_t row = t * N + n;
            RT *dhn = b->dh + n * R;
            if (!RFN(valid)(lens, t, n)) {
                for (int64_t j = 0; j < GH; j++) b->dg[row * GH + j] = dgh[row * GH + j] = 0;
                if (b->dhall)
                    for (int64_t j = 0; j < R; j++) b->dhall[row * R + j] = 0;
                continue;
            }
            const RT *dyrow = dyl + row * YW + dir * R;
            for (int64_t j = 0; j < R; j++) dhn[j] += dyrow[j];
            if (b->dhall) RFN(copy)(b->dhall + row * R, dhn, R);
        }
        RT *dgate_in = b->dh; /* what the gate loop reads as dL/d(output of the cell) */
        int64_t din_ld = R;
        if (rst) { /* r_t's gradient through the projection: dr = dh W_hr */
            RGEMM(false, false, N, H, R, 1, b->dh, R, w + po.wr, H, 0, b->dr, H);
            dgate_in = b->dr;
            din_ld = H;
        }
        RFN(bgate_job)
        job = {.d = d,
               .lens = lens,
               .t = t,
               .k = k,
               .dir = dir,
               .c0 = c0,
               .gates = gates,
               .cst = cst,
               .tcst = tcst,
               .b = b,
               .dgate_in = dgate_in,
               .din_ld = din_ld,
               .dgh = dgh,
               .proj = rst != NULL};
        hg_parallel_for(N, RFN(gate_grain)(GS), RFN(bgate_range), &job);
        /* dh_{t-1} = dG_h W_hh (+ GRU's bypass, already in dh) for the valid rows; rows past
         * their length pass dh through unchanged (their gate gradients are zero). */
        if (W) RFN(gemm_packed)(N, R, GH, dgh + t * N * GH, GH, b->packed, W, b->tmp, ldt);
        else RGEMM(false, false, N, R, GH, 1, dgh + t * N * GH, GH, w + po.wh, R, 0, b->tmp, R);
        for (int64_t n = 0; n < N; n++) {
            if (!RFN(valid)(lens, t, n)) continue;
            for (int64_t j = 0; j < R; j++) b->dh[n * R + j] += b->tmp[n * ldt + j];
        }
    }
    RFN(copy)(dh0 + k * N * R, b->dh, N * R);
    if (lstm) RFN(copy)(dc0 + k * N * H, b->dc, N * H);
    RGEMM(true, false, GH, Iin, TN, 1, b->dg, GH, in, Iin, 0, dw + po.wx, Iin);
    RGEMM(true, false, GH, R, TN, 1, dgh, GH, b->hp, R, 0, dw + po.wh, R);
    if (rst) RGEMM(true, false, R, H, TN, 1, b->dhall, R, rst, H, 0, dw + po.wr, H);
    RFN(colsum)(b->dg, TN, GH, dw + po.bx);
    if (gru) RFN(colsum)(dgh, TN, GH, dw + po.bh);
    else /* both biases enter the same sum */ RFN(copy)(dw + po.bh, dw + po.bx, GH);
    if (dxl)
        RGEMM(false, false, TN, Iin, GH, 1, b->dg, GH, w + po.wx, Iin, dir == 0 ? 0 : 1, dxl, Iin);
}

void RFN(hg_rnn_backward)(const hg_rnn_dims *d, bool train, const RT *x, const RT *w, const RT *h0,
                          const RT *c0, const int64_t *lens, const RT *y, const RT *res,
                          const RT *dy, const RT *dhy, const RT *dcy, RT *dx, RT *dw, RT *dh0,
                          RT *dc0, RT *ws)
{
    const int64_t N = d->N, H = d->H, R = hg_rnn_R(d), TN = d->T * N, YS = TN * d->D * R;
    const int64_t GH = hg_rnn_gates(d) * H;
    RFN(bwd_bufs) b;
    RT *p = ws;
    b.dh = p, p += N * R;
    b.dc = p, p += N * H;
    b.dr = p, p += N * H;
    b.tmp = p, p += N * hg_rnn_pad32(R);
    b.packed = p, p += hg_rnn_pad32(R) * GH;
    b.dg = p, p += TN * GH;
    b.dgh = NULL;
    if (d->mode == HG_RNN_GRU) b.dgh = p, p += TN * GH;
    b.hp = p, p += TN * R;
    b.dhall = NULL;
    if (d->P) b.dhall = p, p += TN * R;
    RT *dyb = NULL, *dxb = NULL;
    if (d->L > 1) dyb = p, p += YS, dxb = p;
    const RT *dyl = dy;
    for (int64_t l = d->L - 1; l >= 0; l--) {
        hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
        const RT *yl = l == d->L - 1 ? y : res + ro.y;
        const RT *in = x;
        if (l > 0) {
            hg_rnn_roff pr = hg_rnn_reserve_offsets(d, l - 1);
            in = res + (train && d->drop > 0 ? pr.xd : pr.y);
        }
        RT *dxl = l == 0 ? dx : dxb;
        for (int64_t dir = 0; dir < d->D; dir++)
            RFN(bwd_dir)(d, l, dir, in, w, h0, c0, lens, yl, res, dyl, dhy, dcy, dxl, dw, dh0, dc0,
                         &b);
        if (l > 0) { /* the lower layer's output gradient, through its dropout mask */
            hg_rnn_roff pr = hg_rnn_reserve_offsets(d, l - 1);
            if (train && d->drop > 0) {
                const RT *m = res + pr.mask;
                for (int64_t i = 0; i < YS; i++) dxb[i] *= m[i];
            }
            RT *t = dyb;
            dyb = dxb;
            dxb = t;
            dyl = dyb;
        }
    }
}

#undef RFN
#undef RCAT
#undef RCAT2
