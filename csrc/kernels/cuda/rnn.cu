/* hg_gpu_kernels_rnn: GPU kernels of the fused recurrent layer of ops/rnn.c: RNN, _backward_RNN
 * and _rnn_param_concat.
 *
 * The algorithm is the CPU's (kernels/cpu/rnn_tmpl.h), step for step, on the same flat parameter
 * layout and the same reserve (kernels/cpu/rnn.h), so the reserve a forward leaves for
 * _backward_RNN means the same on either device. Per layer and direction one GEMM projects the
 * inputs of every step; then per step one recurrent GEMM (cuBLAS) and one element-wise kernel for
 * the gates (a thread per batch row and unit). The backward runs the steps in reverse the same
 * way and forms the weight and input gradients with one GEMM each over all steps (the biases' with
 * a column-sum kernel, in row order as the CPU sums). The activations are the CPU's forms (sigmoid
 * 1 / (1 + e^-a), tanh 2 / (1 + e^-2a) - 1) in the element type with CUDA's exp; only rounding,
 * contraction into fused multiply-adds and the GEMMs' summation order differ from the CPU.
 *
 * Nothing waits for the GPU. Sequence lengths are read on the device (into int64, clamped as the
 * CPU's load_lens does). The dropout masks between layers come from a counter-based hash of one
 * seed drawn from the global generator per training call (mx.random.seed replays them), so with
 * p > 0 they differ from the CPU's masks, not in distribution; with p == 0, or outside training
 * (masks of ones, as on the CPU), nothing is drawn.
 *
 * The step logic is written once over an executor (gpu_exec: cuBLAS GEMMs and a grid-stride
 * launch of a functor), and the element-wise functors are __host__ __device__, so the whole
 * algorithm also runs on the host with a plain GEMM, to be checked against the CPU op.
 */
#include <math.h>
#include <stdint.h>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "core/rng.h"
#include "ops/rnn.h"
}

namespace
{

#define HD __host__ __device__ __forceinline__

/* What the element-wise functors need of hg_rnn_dims (whose helpers are host functions). */
struct geo {
    int mode;
    int64_t T, N, H, R, GH, GS, YW; /* GS: the reserve's gate values per row; YW: D * R */
    bool clip, clip_nan;
    double clip_min, clip_max;
};

geo geo_of(const hg_rnn_dims *d)
{
    geo g;
    g.mode = (int)d->mode;
    g.T = d->T, g.N = d->N, g.H = d->H, g.R = hg_rnn_R(d);
    g.GH = hg_rnn_gates(d) * d->H, g.GS = hg_rnn_GS(d), g.YW = d->D * g.R;
    g.clip = d->clip, g.clip_nan = d->clip_nan;
    g.clip_min = d->clip_min, g.clip_max = d->clip_max;
    return g;
}

/* ---- the element-wise math: rnn_tmpl.h's gate_row and gate_grad_row, one unit at a time --- */

HD float ex(float v) { return expf(v); }
HD double ex(double v) { return exp(v); }
template <typename E> HD E sigm(E a) { return (E)1 / ((E)1 + ex(-a)); }
template <typename E> HD E tanh2(E a) { return (E)2 / ((E)1 + ex((E)-2 * a)) - (E)1; }

template <typename E> HD E clip_cell(const geo &g, E c)
{
    if (!g.clip) return c;
    if (g.clip_nan) return (E)fmax(fmin((double)c, g.clip_max), g.clip_min);
    if (c != c) return c; /* NaN propagates unless clip_nan */
    return c<(E)g.clip_min ? (E)g.clip_min : c>(E) g.clip_max ? (E)g.clip_max : c;
}

/* Unit j of one row's forward step: gt holds the row's input projection (no biases) and gets
 * the activated gates (GRU: and W_hn h + b_hn); hh is the recurrent product. hprev: h_{t-1}
 * (GRU); c: the cell (LSTM), updated, also stored to *cs with its tanh to *tcs. Returns the new
 * h (LSTM with a projection: before it). The sums in the CPU's order. */
template <typename E>
HD E fwd_unit(const geo &g, int64_t j, E *gt, const E *hh, const E *bx, const E *bh, E hprev, E *c,
              E *cs, E *tcs)
{
    const int64_t H = g.H;
    switch (g.mode) {
    case HG_RNN_LSTM: {
        const E i = sigm(gt[j] + bx[j] + bh[j] + hh[j]);
        const E f = sigm(gt[H + j] + bx[H + j] + bh[H + j] + hh[H + j]);
        const E gg = tanh2(gt[2 * H + j] + bx[2 * H + j] + bh[2 * H + j] + hh[2 * H + j]);
        const E o = sigm(gt[3 * H + j] + bx[3 * H + j] + bh[3 * H + j] + hh[3 * H + j]);
        const E cv = clip_cell(g, f * *c + i * gg);
        gt[j] = i, gt[H + j] = f, gt[2 * H + j] = gg, gt[3 * H + j] = o;
        *c = *cs = cv;
        const E tc = tanh2(cv);
        *tcs = tc;
        return o * tc;
    }
    case HG_RNN_GRU: {
        const E r = sigm(gt[j] + bx[j] + hh[j] + bh[j]);
        const E z = sigm(gt[H + j] + bx[H + j] + hh[H + j] + bh[H + j]);
        const E hn = hh[2 * H + j] + bh[2 * H + j];
        const E nn = tanh2(gt[2 * H + j] + bx[2 * H + j] + r * hn);
        gt[j] = r, gt[H + j] = z, gt[2 * H + j] = nn, gt[3 * H + j] = hn;
        return ((E)1 - z) * nn + z * hprev;
    }
    case HG_RNN_TANH: return gt[j] = tanh2(gt[j] + bx[j] + hh[j] + bh[j]);
    default: {
        const E v = gt[j] + bx[j] + hh[j] + bh[j];
        return gt[j] = v > 0 ? v : (E)0;
    }
    }
}

/* Unit j of one row's gate gradients. gt: the row's saved gates; c, tc: its cell and tanh
 * (LSTM); cprev: c_{t-1} (LSTM); hprev: h_{t-1} (GRU). *dh: dL/dh_t in (dL/dr_t with a
 * projection), out the part of dL/dh_{t-1} that bypasses the recurrent GEMM (GRU's z * dh, zero
 * otherwise); *dc: dL/dc_t in, dL/dc_{t-1} out. dgx, dgh: the row's gradients of the input and
 * recurrent pre-activations (the same buffer except for GRU). */
template <typename E>
HD void bwd_unit(const geo &g, int64_t j, const E *gt, E c, E tc, E cprev, E hprev, E *dh, E *dc,
                 E *dgx, E *dgh)
{
    const int64_t H = g.H;
    switch (g.mode) {
    case HG_RNN_LSTM: {
        const E i = gt[j], f = gt[H + j], gg = gt[2 * H + j], o = gt[3 * H + j];
        E dcv = *dc + *dh * o * ((E)1 - tc * tc);
        if (g.clip && (c <= (E)g.clip_min || c >= (E)g.clip_max)) dcv = 0;
        dgx[j] = dcv * gg * i * ((E)1 - i);
        dgx[H + j] = dcv * cprev * f * ((E)1 - f);
        dgx[2 * H + j] = dcv * i * ((E)1 - gg * gg);
        dgx[3 * H + j] = *dh * tc * o * ((E)1 - o);
        *dc = dcv * f;
        *dh = 0;
        break;
    }
    case HG_RNN_GRU: {
        const E r = gt[j], z = gt[H + j], nn = gt[2 * H + j], hn = gt[3 * H + j], dv = *dh;
        const E dnp = dv * ((E)1 - z) * ((E)1 - nn * nn);
        const E drp = dnp * hn * r * ((E)1 - r);
        const E dzp = dv * (hprev - nn) * z * ((E)1 - z);
        dgx[j] = dgh[j] = drp;
        dgx[H + j] = dgh[H + j] = dzp;
        dgx[2 * H + j] = dnp;
        dgh[2 * H + j] = dnp * r;
        *dh = dv * z;
        break;
    }
    case HG_RNN_TANH:
        dgx[j] = *dh * ((E)1 - gt[j] * gt[j]);
        *dh = 0;
        break;
    default:
        dgx[j] = gt[j] > 0 ? *dh : (E)0;
        *dh = 0;
        break;
    }
}

/* Whether step t of batch row n is within its sequence; the step that ran before step t of
 * direction dir (-1: the initial state; the backward direction starts at the row's last step). */
HD bool valid(const int64_t *lens, int64_t t, int64_t n) { return !lens || t < lens[n]; }
HD int64_t prev_step(const int64_t *lens, int64_t T, int64_t dir, int64_t t, int64_t n)
{
    if (dir == 0) return t - 1;
    const int64_t len = lens ? lens[n] : T;
    return t + 1 < len ? t + 1 : -1;
}

/* A uniform double in [0, 1) for element i: splitmix64 of the seed and the index (as Dropout's
 * GPU kernel draws, kernels/cuda/layout.cu). */
HD double unit_hash(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* ---- functors: one call per index of a grid-stride loop --------------------------------- */

template <typename E> struct copy_f {
    E *dst;
    const E *src;
    HD void operator()(int64_t i) const { dst[i] = src[i]; }
};

/* Zeros in rows of `cols` values `ld` apart. */
template <typename E> struct zero_f {
    E *dst;
    int64_t cols, ld;
    HD void operator()(int64_t i) const { dst[i / cols * ld + i % cols] = (E)0; }
};

template <typename E> struct mul_f {
    E *dst;
    const E *a, *b;
    HD void operator()(int64_t i) const { dst[i] = a[i] * b[i]; }
};

/* The dropout mask of one layer: (u < keep) / keep in training, ones otherwise (the CPU's
 * draw_masks: the value in double, then rounded to the element type). */
template <typename E> struct mask_f {
    E *m;
    uint64_t seed, base;
    double keep;
    bool train;
    HD void operator()(int64_t i) const
    {
        m[i] = (E)(!train ? 1.0 : unit_hash(seed, base + (uint64_t)i) < keep ? 1.0 / keep : 0.0);
    }
};

/* One forward step's gates, for index n * H + j. Rows past their length give zeros (gates,
 * output, tanh of the cell, unprojected h) and keep their state (the saved cell is the carried
 * one), as the CPU's fgate_range. */
template <typename E> struct fstep_f {
    geo g;
    const int64_t *lens;
    int64_t t, dir;
    E *gates, *cst, *tcst, *rst, *yl, *hcur, *ccur;
    const E *hg, *bx, *bh;
    HD void operator()(int64_t i) const
    {
        const int64_t H = g.H, n = i / H, j = i % H, row = t * g.N + n;
        E *gt = gates + row * g.GS, *yrow = yl + row * g.YW + dir * g.R;
        if (!valid(lens, t, n)) {
            for (int64_t q = j; q < g.GS; q += H) gt[q] = 0;
            if (cst) cst[row * H + j] = ccur[n * H + j], tcst[row * H + j] = 0;
            if (rst) rst[row * H + j] = 0;
            else yrow[j] = 0;
            return;
        }
        const bool lstm = g.mode == HG_RNN_LSTM;
        const E hprev = g.mode == HG_RNN_GRU ? hcur[n * g.R + j] : (E)0;
        const E h = fwd_unit(g, j, gt, hg + n * g.GH, bx, bh, hprev, lstm ? ccur + n * H + j : NULL,
                             lstm ? cst + row * H + j : NULL, lstm ? tcst + row * H + j : NULL);
        if (rst) {
            rst[row * H + j] = h;
        } else {
            yrow[j] = h;
            hcur[n * g.R + j] = h;
        }
    }
};

/* After the projection's GEMM (hp = W_hr r_t), index n * R + j: the valid rows take it as
 * output and state; the others output zeros. */
template <typename E> struct pstep_f {
    geo g;
    const int64_t *lens;
    int64_t t, dir;
    const E *hp;
    E *hcur, *yl;
    HD void operator()(int64_t i) const
    {
        const int64_t n = i / g.R, j = i % g.R;
        E *yrow = yl + (t * g.N + n) * g.YW + dir * g.R;
        if (valid(lens, t, n)) yrow[j] = hcur[i] = hp[i];
        else yrow[j] = 0;
    }
};

/* h_{t-1} of every step and row (index (t * N + n) * R + j), for the recurrent weights'
 * gradient and GRU's gates. */
template <typename E> struct prev_f {
    geo g;
    const int64_t *lens;
    int64_t dir, k;
    const E *h0, *yl;
    E *hp;
    HD void operator()(int64_t i) const
    {
        const int64_t R = g.R, N = g.N, j = i % R, n = i / R % N, t = i / R / N;
        const int64_t p = prev_step(lens, g.T, dir, t, n);
        hp[i] = p < 0 ? h0[(k * N + n) * R + j] : yl[(p * N + n) * g.YW + dir * R + j];
    }
};

/* The start of a backward step, index n * W + j (W = max(GH, R)): dh += dy for the valid rows
 * (kept in dhall with a projection); zero gate gradients (and dhall) for the others. */
template <typename E> struct accum_f {
    geo g;
    const int64_t *lens;
    int64_t t, dir, W;
    const E *dyl;
    E *dh, *dg, *dgh, *dhall;
    HD void operator()(int64_t i) const
    {
        const int64_t n = i / W, j = i % W, row = t * g.N + n, R = g.R, GH = g.GH;
        if (!valid(lens, t, n)) {
            if (j < GH) dg[row * GH + j] = dgh[row * GH + j] = 0;
            if (dhall && j < R) dhall[row * R + j] = 0;
            return;
        }
        if (j >= R) return;
        const E v = dh[n * R + j] + dyl[row * g.YW + dir * R + j];
        dh[n * R + j] = v;
        if (dhall) dhall[row * R + j] = v;
    }
};

/* One backward step's gate gradients, index n * W + j (W = max(H, R)). din: dL/dh_t (dh) or,
 * with a projection, dL/dr_t (dr), rows din_ld apart; with a projection dh is then cleared (it
 * fed the projection only; the recurrent GEMM gives dh_{t-1}). */
template <typename E> struct bgate_f {
    geo g;
    const int64_t *lens;
    int64_t t, dir, k, W, din_ld;
    const E *c0, *gates, *cst, *tcst, *hp;
    E *din, *dc, *dg, *dgh, *dh;
    bool proj;
    HD void operator()(int64_t i) const
    {
        const int64_t n = i / W, j = i % W, row = t * g.N + n, H = g.H, N = g.N;
        if (!valid(lens, t, n)) return;
        if (j < H) {
            const bool lstm = g.mode == HG_RNN_LSTM;
            E c = 0, tc = 0, cprev = 0, hprev = 0;
            if (lstm) {
                const int64_t p = prev_step(lens, g.T, dir, t, n);
                cprev = p < 0 ? c0[(k * N + n) * H + j] : cst[(p * N + n) * H + j];
                c = cst[row * H + j], tc = tcst[row * H + j];
            }
            if (g.mode == HG_RNN_GRU) hprev = hp[row * g.R + j];
            bwd_unit(g, j, gates + row * g.GS, c, tc, cprev, hprev, din + n * din_ld + j,
                     lstm ? dc + n * H + j : NULL, dg + row * g.GH, dgh + row * g.GH);
        }
        if (proj && j < g.R) dh[n * g.R + j] = 0;
    }
};

/* dh += tmp (dG_h W_hh) for the rows valid at step t, index n * R + j. */
template <typename E> struct addv_f {
    geo g;
    const int64_t *lens;
    int64_t t;
    const E *tmp;
    E *dh;
    HD void operator()(int64_t i) const
    {
        if (valid(lens, t, i / g.R)) dh[i] += tmp[i];
    }
};

/* out[j] = the sum of column j of a (rows, cols), in row order. */
template <typename E> struct colsum_f {
    const E *a;
    int64_t rows, cols;
    E *out;
    HD void operator()(int64_t j) const
    {
        E s = 0;
        for (int64_t r = 0; r < rows; r++) s += a[r * cols + j];
        out[j] = s;
    }
};

/* ---- the algorithm, over an executor X: X.each(n, f) calls f(i) for i in [0, n) in stream
 * order; X.gemm is hg_gemm_rm with alpha 1 (row-major; t*: transposed operand). ---------------- */

/* C = op(A) op(B) + beta C; k == 0 gives beta C (zeros for beta 0), as the CPU's GEMM. */
template <typename E, class X>
hg_status mm(const X &x, int ta, int tb, int64_t m, int64_t n, int64_t k, const E *a, int64_t lda,
             const E *b, int64_t ldb, double beta, E *c, int64_t ldc)
{
    if (m == 0 || n == 0) return HG_OK;
    if (k == 0) {
        if (beta == 0) x.each(m * n, zero_f<E>{c, n, ldc});
        return HG_OK;
    }
    return x.gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

template <typename E> struct fwd_args {
    const E *x, *w, *h0, *c0; /* c0, cy: LSTM only */
    const int64_t *lens;      /* per-row valid steps, or NULL */
    E *y, *hy, *cy, *res;
    E *ws; /* fwd_scratch() elements */
    uint64_t seed;
    bool train;
};

int64_t fwd_scratch(const hg_rnn_dims *d)
{
    const int64_t R = hg_rnn_R(d);
    return d->N * (2 * R + d->H + hg_rnn_gates(d) * d->H);
}

/* One direction of one layer (rnn_tmpl.h's fwd_dir). in: (T*N, Iin); yl: (T*N, D*R). */
template <typename E, class X>
hg_status fwd_dir(const X &x, const hg_rnn_dims *d, const geo &g, int64_t l, int64_t dir,
                  const E *in, const fwd_args<E> &a, E *yl)
{
    const int64_t N = g.N, H = g.H, R = g.R, GH = g.GH, k = l * d->D + dir;
    const int64_t Iin = hg_rnn_layer_in(d, l);
    const hg_rnn_poff po = hg_rnn_param_offsets(d, l, dir);
    const hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
    const bool lstm = d->mode == HG_RNN_LSTM;
    E *hcur = a.ws, *ccur = hcur + N * R, *hg = ccur + N * H, *hp = hg + N * GH;
    E *gates = a.res + ro.gates[dir], *rst = d->P ? a.res + ro.r[dir] : NULL;
    E *cst = lstm ? a.res + ro.c[dir] : NULL, *tcst = lstm ? a.res + ro.tc[dir] : NULL;
    HG_TRY(mm(x, 0, 1, g.T * N, GH, Iin, in, Iin, a.w + po.wx, Iin, 0.0, gates, g.GS));
    x.each(N * R, copy_f<E>{hcur, a.h0 + k * N * R});
    if (lstm) x.each(N * H, copy_f<E>{ccur, a.c0 + k * N * H});
    for (int64_t s = 0; s < g.T; s++) {
        const int64_t t = dir == 0 ? s : g.T - 1 - s;
        HG_TRY(mm(x, 0, 1, N, GH, R, hcur, R, a.w + po.wh, R, 0.0, hg, GH));
        x.each(N * H, fstep_f<E>{g, a.lens, t, dir, gates, cst, tcst, rst, yl, hcur, ccur, hg,
                                 a.w + po.bx, a.w + po.bh});
        if (rst) { /* h = W_hr r for the valid rows */
            HG_TRY(mm(x, 0, 1, N, R, H, rst + t * N * H, H, a.w + po.wr, H, 0.0, hp, R));
            x.each(N * R, pstep_f<E>{g, a.lens, t, dir, hp, hcur, yl});
        }
    }
    x.each(N * R, copy_f<E>{a.hy + k * N * R, hcur});
    if (lstm) x.each(N * H, copy_f<E>{a.cy + k * N * H, ccur});
    return HG_OK;
}

template <typename E, class X> hg_status forward(const X &x, const hg_rnn_dims *d, fwd_args<E> a)
{
    const geo g = geo_of(d);
    const int64_t YS = g.T * g.N * g.YW;
    const E *in = a.x;
    for (int64_t l = 0; l < d->L; l++) {
        const hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
        E *yl = l == d->L - 1 ? a.y : a.res + ro.y;
        for (int64_t dir = 0; dir < d->D; dir++) HG_TRY(fwd_dir(x, d, g, l, dir, in, a, yl));
        in = yl;
        if (l < d->L - 1 && d->drop > 0) {
            /* The mask always exists; the masked copy feeds the next layer in training only. */
            E *m = a.res + ro.mask, *xd = a.res + ro.xd;
            x.each(YS, mask_f<E>{m, a.seed, (uint64_t)(l * YS), 1.0 - d->drop, a.train});
            if (a.train) {
                x.each(YS, mul_f<E>{xd, yl, m});
                in = xd;
            } else {
                x.each(YS, copy_f<E>{xd, yl});
            }
        }
    }
    return HG_OK;
}

template <typename E> struct bwd_args {
    const E *x, *w, *h0, *c0;
    const int64_t *lens;
    const E *y, *res, *dy, *dhy, *dcy;
    E *dx, *dw, *dh0, *dc0; /* dx NULL: not wanted */
    E *ws;                  /* bwd_scratch() elements */
};

template <typename E> struct bwd_bufs {
    E *dh, *dc, *dr, *tmp, *dg, *dgh, *hp, *dhall;
};

int64_t bwd_scratch(const hg_rnn_dims *d)
{
    const int64_t N = d->N, H = d->H, R = hg_rnn_R(d), TN = d->T * N;
    const int64_t GH = hg_rnn_gates(d) * H;
    int64_t n = N * (2 * R + 2 * H) + TN * GH * (d->mode == HG_RNN_GRU ? 2 : 1);
    n += TN * R * (d->P ? 2 : 1);
    if (d->L > 1) n += 2 * TN * d->D * R;
    return n;
}

/* One direction of one layer, backward (rnn_tmpl.h's bwd_dir); dxl accumulates over the
 * directions (dir 0 writes it). */
template <typename E, class X>
hg_status bwd_dir(const X &x, const hg_rnn_dims *d, const geo &g, int64_t l, int64_t dir,
                  const E *in, const bwd_args<E> &a, const E *yl, const E *dyl, E *dxl,
                  const bwd_bufs<E> &b)
{
    const int64_t N = g.N, H = g.H, R = g.R, GH = g.GH, TN = g.T * N, k = l * d->D + dir;
    const int64_t Iin = hg_rnn_layer_in(d, l);
    const bool lstm = d->mode == HG_RNN_LSTM, gru = d->mode == HG_RNN_GRU;
    const hg_rnn_poff po = hg_rnn_param_offsets(d, l, dir);
    const hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
    const E *gates = a.res + ro.gates[dir], *rst = d->P ? a.res + ro.r[dir] : NULL;
    const E *cst = lstm ? a.res + ro.c[dir] : NULL, *tcst = lstm ? a.res + ro.tc[dir] : NULL;
    const E *wh = a.w + po.wh;
    E *dgh = gru ? b.dgh : b.dg;
    const int64_t Wa = GH > R ? GH : R, Wg = H > R ? H : R;
    x.each(TN * R, prev_f<E>{g, a.lens, dir, k, a.h0, yl, b.hp});
    x.each(N * R, copy_f<E>{b.dh, a.dhy + k * N * R});
    if (lstm) x.each(N * H, copy_f<E>{b.dc, a.dcy + k * N * H});
    for (int64_t s = g.T - 1; s >= 0; s--) {
        const int64_t t = dir == 0 ? s : g.T - 1 - s;
        x.each(N * Wa, accum_f<E>{g, a.lens, t, dir, Wa, dyl, b.dh, b.dg, dgh, b.dhall});
        E *din = b.dh;
        int64_t din_ld = R;
        if (rst) { /* r_t's gradient through the projection: dr = dh W_hr */
            HG_TRY(mm(x, 0, 0, N, H, R, b.dh, R, a.w + po.wr, H, 0.0, b.dr, H));
            din = b.dr;
            din_ld = H;
        }
        x.each(N * Wg, bgate_f<E>{g, a.lens, t, dir, k, Wg, din_ld, a.c0, gates, cst, tcst, b.hp,
                                  din, b.dc, b.dg, dgh, b.dh, rst != NULL});
        /* dh_{t-1} = dG_h W_hh (+ GRU's bypass, already in dh) for the valid rows; rows past
         * their length pass dh through (their gate gradients are zero, but 0 * inf is not). */
        if (a.lens) {
            HG_TRY(mm(x, 0, 0, N, R, GH, dgh + t * N * GH, GH, wh, R, 0.0, b.tmp, R));
            x.each(N * R, addv_f<E>{g, a.lens, t, b.tmp, b.dh});
        } else {
            HG_TRY(mm(x, 0, 0, N, R, GH, dgh + t * N * GH, GH, wh, R, 1.0, b.dh, R));
        }
    }
    x.each(N * R, copy_f<E>{a.dh0 + k * N * R, b.dh});
    if (lstm) x.each(N * H, copy_f<E>{a.dc0 + k * N * H, b.dc});
    HG_TRY(mm(x, 1, 0, GH, Iin, TN, b.dg, GH, in, Iin, 0.0, a.dw + po.wx, Iin));
    HG_TRY(mm(x, 1, 0, GH, R, TN, (const E *)dgh, GH, (const E *)b.hp, R, 0.0, a.dw + po.wh, R));
    if (rst) HG_TRY(mm(x, 1, 0, R, H, TN, (const E *)b.dhall, R, rst, H, 0.0, a.dw + po.wr, H));
    x.each(GH, colsum_f<E>{b.dg, TN, GH, a.dw + po.bx});
    if (gru) x.each(GH, colsum_f<E>{dgh, TN, GH, a.dw + po.bh});
    else x.each(GH, copy_f<E>{a.dw + po.bh, a.dw + po.bx}); /* both biases enter one sum */
    if (dxl)
        HG_TRY(mm(x, 0, 0, TN, Iin, GH, (const E *)b.dg, GH, a.w + po.wx, Iin, dir == 0 ? 0.0 : 1.0,
                  dxl, Iin));
    return HG_OK;
}

/* The backward of every layer, top down (rnn_tmpl.h's hg_rnn_backward with train true: the
 * forward left the masked layer outputs, and masks of ones outside training). */
template <typename E, class X> hg_status backward(const X &x, const hg_rnn_dims *d, bwd_args<E> a)
{
    const geo g = geo_of(d);
    const int64_t N = g.N, TN = g.T * N, YS = TN * g.YW;
    bwd_bufs<E> b;
    E *p = a.ws;
    b.dh = p, p += N * g.R;
    b.dc = p, p += N * g.H;
    b.dr = p, p += N * g.H;
    b.tmp = p, p += N * g.R;
    b.dg = p, p += TN * g.GH;
    b.dgh = NULL;
    if (d->mode == HG_RNN_GRU) b.dgh = p, p += TN * g.GH;
    b.hp = p, p += TN * g.R;
    b.dhall = NULL;
    if (d->P) b.dhall = p, p += TN * g.R;
    E *dyb = NULL, *dxb = NULL;
    if (d->L > 1) dyb = p, p += YS, dxb = p;
    const E *dyl = a.dy;
    for (int64_t l = d->L - 1; l >= 0; l--) {
        const hg_rnn_roff ro = hg_rnn_reserve_offsets(d, l);
        const E *yl = l == d->L - 1 ? a.y : a.res + ro.y, *in = a.x;
        hg_rnn_roff pr = ro;
        if (l > 0) {
            pr = hg_rnn_reserve_offsets(d, l - 1);
            in = a.res + (d->drop > 0 ? pr.xd : pr.y);
        }
        E *dxl = l == 0 ? a.dx : dxb;
        for (int64_t dir = 0; dir < d->D; dir++)
            HG_TRY(bwd_dir(x, d, g, l, dir, in, a, yl, dyl, dxl, b));
        if (l > 0) { /* the lower layer's output gradient, through its dropout mask */
            if (d->drop > 0) x.each(YS, mul_f<E>{dxb, dxb, a.res + pr.mask});
            E *t = dyb;
            dyb = dxb;
            dxb = t;
            dyl = dyb;
        }
    }
    return HG_OK;
}

/* ---- on the GPU ----------------------------------------------------------------------------- */

template <class F> __global__ void each_kernel(F f, int64_t n) { GRID_LOOP(i, n) f(i); }

struct gpu_exec {
    int dev;
    cudaStream_t s;
    const char *op;
    hg_dtype dt;
    template <class F> void each(int64_t n, const F &f) const
    {
        if (n > 0) each_kernel<F><<<hg_cuda_blocks(n), HG_CUDA_THREADS, 0, s>>>(f, n);
    }
    hg_status gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                   const void *b, int64_t ldb, double beta, void *c, int64_t ldc) const
    {
        return hg_gemm_rm(dev, op, dt, ta, tb, m, n, k, 1.0, a, lda, 0, b, ldb, 0, beta, c, ldc, 0,
                          1);
    }
};

/* The sequence lengths as int64, clamped to [0, T] as ops/rnn.c's load_lens. */
struct lens_f {
    const void *p;
    int dt;
    int64_t T;
    int64_t *out;
    __device__ void operator()(int64_t i) const
    {
        double v;
        switch (dt) {
        case HG_DTYPE_F32: v = ((const float *)p)[i]; break;
        case HG_DTYPE_F64: v = ((const double *)p)[i]; break;
        case HG_DTYPE_F16: v = h2f(((const uint16_t *)p)[i]); break;
        case HG_DTYPE_I32: v = ((const int32_t *)p)[i]; break;
        case HG_DTYPE_I64: v = (double)((const int64_t *)p)[i]; break;
        case HG_DTYPE_I8: v = ((const int8_t *)p)[i]; break;
        case HG_DTYPE_U8: v = ((const uint8_t *)p)[i]; break;
        default: v = ((const bool *)p)[i]; break;
        }
        out[i] = !(v > 0) ? 0 : v >= (double)T ? T : (int64_t)v;
    }
};

/* Device scratch of the call: the lengths (int64, when used) then `elems` values of esz bytes. */
struct scratch {
    int dev;
    void *p;
    size_t bytes;
};

hg_status scratch_get(const hg_op_def *op, int dev, int64_t nlens, int64_t elems, size_t esz,
                      scratch *sc)
{
    sc->dev = dev, sc->p = NULL, sc->bytes = 0;
    if (nlens < 0 || elems < 0 || (uint64_t)nlens > SIZE_MAX / 16 ||
        (uint64_t)elems > (SIZE_MAX / 2 - (size_t)nlens * 8) / esz)
        return hg_error(HG_ERR_VALUE, "%s: sizes too large for the GPU's scratch", op->name);
    sc->bytes = (size_t)nlens * 8 + (size_t)elems * esz;
    return sc->bytes ? hg_device_alloc(dev, sc->bytes, &sc->p) : HG_OK;
}

void scratch_put(scratch *sc)
{
    if (sc->p) hg_device_free(sc->dev, sc->p, sc->bytes);
}

/* The lengths of input `k` into the scratch (NULL when sequence_length is not used). */
const int64_t *load_lens(const gpu_exec &x, const scratch &sc, bool use, const hg_tensor *len,
                         int64_t T, int64_t N)
{
    if (!use) return NULL;
    int64_t *lens = (int64_t *)sc.p;
    x.each(N, lens_f{hg_data(len), (int)len->dtype, T, lens});
    return lens;
}

template <typename E> E *ptr(const hg_tensor *t) { return t ? (E *)hg_data(t) : NULL; }

template <typename E>
hg_status rnn_fwd_typed(const gpu_exec &x, const hg_rnn_dims *d, const hg_exec_ctx *ctx,
                        hg_tensor *const *in, hg_tensor *const *out, const int64_t *lens, E *ws,
                        uint64_t seed)
{
    const bool lstm = d->mode == HG_RNN_LSTM;
    fwd_args<E> a = {ptr<E>(in[0]),  ptr<E>(in[1]),
                     ptr<E>(in[2]),  lstm ? ptr<E>(in[3]) : NULL,
                     lens,           ptr<E>(out[0]),
                     ptr<E>(out[1]), lstm ? ptr<E>(out[2]) : NULL,
                     ptr<E>(out[3]), ws,
                     seed,           ctx->is_train};
    return forward(x, d, a);
}

GPU_FWD(rnn_gpu)
{
    STREAM;
    hg_rnn_dims d;
    const hg_meta xm = hg_meta_of(in[0]);
    HG_TRY(hg_rnn_dims_of(op->name, a, &xm, &d));
    const hg_dtype dt = in[0]->dtype;
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64) return bad_dtype(op, dt);
    const bool use_seq = a->v[RNN_USE_SEQ].b;
    const int seq = d.mode == HG_RNN_LSTM ? 4 : 3;
    uint64_t seed = 0;
    if (ctx->is_train && d.drop > 0 && d.L > 1) hg_rng_u64(&seed, 1);
    scratch sc;
    HG_TRY(scratch_get(op, ctx->device_id, use_seq ? d.N : 0, fwd_scratch(&d), hg_dtype_size(dt),
                       &sc));
    const gpu_exec x = {ctx->device_id, s, op->name, dt};
    const int64_t *lens = load_lens(x, sc, use_seq, use_seq ? in[seq] : NULL, d.T, d.N);
    char *ws = (char *)sc.p + (use_seq ? sizeof(int64_t) * (size_t)d.N : 0);
    hg_status st = dt == HG_DTYPE_F32
                       ? rnn_fwd_typed<float>(x, &d, ctx, in, out, lens, (float *)ws, seed)
                       : rnn_fwd_typed<double>(x, &d, ctx, in, out, lens, (double *)ws, seed);
    if (st == HG_OK) st = hg_cuda_launched(op->name);
    scratch_put(&sc);
    return st;
}

template <typename E>
hg_status rnn_bwd_typed(const gpu_exec &x, const hg_rnn_dims *d, bool want_dx, hg_tensor *const *in,
                        hg_tensor *const *out, const int64_t *lens, E *ws)
{
    const bool lstm = d->mode == HG_RNN_LSTM;
    bwd_args<E> a;
    a.x = ptr<E>(in[RNN_B_X]), a.w = ptr<E>(in[RNN_B_W]), a.h0 = ptr<E>(in[RNN_B_H0]);
    a.c0 = lstm ? ptr<E>(in[RNN_B_FIXED]) : NULL;
    a.lens = lens;
    a.y = ptr<E>(in[RNN_B_Y]), a.res = ptr<E>(in[RNN_B_RES]);
    a.dy = ptr<E>(in[RNN_B_DY]), a.dhy = ptr<E>(in[RNN_B_DHY]);
    a.dcy = lstm ? ptr<E>(in[RNN_B_DCY]) : NULL;
    a.dx = want_dx ? ptr<E>(out[0]) : NULL, a.dw = ptr<E>(out[1]), a.dh0 = ptr<E>(out[2]);
    a.dc0 = lstm ? ptr<E>(out[3]) : NULL;
    a.ws = ws;
    return backward(x, d, a);
}

GPU_FWD(rnn_bwd_gpu)
{
    STREAM;
    hg_rnn_dims d;
    const hg_meta xm = hg_meta_of(in[RNN_B_X]);
    HG_TRY(hg_rnn_dims_of(op->name, a, &xm, &d));
    const hg_dtype dt = in[RNN_B_X]->dtype;
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64) return bad_dtype(op, dt);
    const bool use_seq = a->v[RNN_USE_SEQ].b, want_dx = a->v[RNN_DATA_GRAD].b;
    const int seq = RNN_B_FIXED + (d.mode == HG_RNN_LSTM ? 1 : 0);
    if (!want_dx) HG_TRY(zero_fill(op, s, out[0])); /* defined, though nobody reads it */
    scratch sc;
    HG_TRY(scratch_get(op, ctx->device_id, use_seq ? d.N : 0, bwd_scratch(&d), hg_dtype_size(dt),
                       &sc));
    const gpu_exec x = {ctx->device_id, s, op->name, dt};
    const int64_t *lens = load_lens(x, sc, use_seq, use_seq ? in[seq] : NULL, d.T, d.N);
    char *ws = (char *)sc.p + (use_seq ? sizeof(int64_t) * (size_t)d.N : 0);
    hg_status st = dt == HG_DTYPE_F32
                       ? rnn_bwd_typed<float>(x, &d, want_dx, in, out, lens, (float *)ws)
                       : rnn_bwd_typed<double>(x, &d, want_dx, in, out, lens, (double *)ws);
    if (st == HG_OK) st = hg_cuda_launched(op->name);
    scratch_put(&sc);
    return st;
}

/* _rnn_param_concat is Concat (ops/rnn.c: the same schema, index for index). */
GPU_FWD(rnn_param_concat_gpu)
{
    const hg_op_def *cat = hg_registry_find("Concat");
    hg_kernel_fn fn = cat ? hg_gpu_kernel_of(cat) : NULL;
    if (!fn) return hg_error(HG_ERR_INTERNAL, "%s: Concat has no GPU kernel", op->name);
    return fn(op, a, ctx, nin, in, nout, out);
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_rnn[] = {
    {"RNN", rnn_gpu},
    {"_backward_RNN", rnn_bwd_gpu},
    {"_rnn_param_concat", rnn_param_concat_gpu},
    {NULL, NULL},
};
