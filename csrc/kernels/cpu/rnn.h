/* The fused RNN kernels' geometry (MXNet's RNN op, layout TNC): sizes, MXNet's flat parameter
 * layout and the layout of the reserve, the forward's record of what the backward reads.
 *
 * Parameters (MXNet's order, so vectors saved by MXNet give MXNet's numbers): every weight of
 * every layer and direction first, per layer and direction i2h (G*H, in), h2h (G*H, R) and with
 * a projection h2r (P, H); then every bias, per layer and direction i2h (G*H), h2h (G*H).
 * G is 1 (rnn_relu, rnn_tanh), 4 (lstm: gates i, f, g, o) or 3 (gru: r, z, n); R, the size of
 * the recurrent state h, is the projection size P when there is one, H otherwise.
 *
 * Reserve, per layer l: per direction the gates after activation of every step (T*N rows of
 * GS = G*H values; GRU keeps a fourth block, W_hn h + b_hn, which the reset gate multiplies),
 * LSTM's cell states and their tanh (T*N*H each: the backward reads both, and the forward
 * computes the tanh anyway) and with a projection the unprojected outputs (T*N*H); then, for
 * every layer but the last, the layer's output (T*N*D*R: the next layer's input and the source
 * of h_{t-1}) and, with dropout, the mask and the masked output. Every element is written by
 * the forward (steps past a sequence's length hold zeros), so the backward never reads
 * uninitialised memory.
 */
#ifndef HG_KERNELS_CPU_RNN_H
#define HG_KERNELS_CPU_RNN_H

#include <stdbool.h>
#include <stdint.h>

typedef enum hg_rnn_mode { HG_RNN_RELU, HG_RNN_TANH, HG_RNN_LSTM, HG_RNN_GRU } hg_rnn_mode;

typedef struct hg_rnn_dims {
    hg_rnn_mode mode;
    int64_t T, N, I, H, P, L, D; /* P == 0: no projection; D: 1 or 2 directions */
    double drop;                 /* dropout rate between layers (training only) */
    bool clip, clip_nan;         /* LSTM cell-state clipping (cuDNN's semantics) */
    double clip_min, clip_max;
} hg_rnn_dims;

static inline int64_t hg_rnn_gates(const hg_rnn_dims *d)
{
    return d->mode == HG_RNN_LSTM ? 4 : d->mode == HG_RNN_GRU ? 3 : 1;
}
static inline int64_t hg_rnn_R(const hg_rnn_dims *d) { return d->P ? d->P : d->H; }
/* Values per step and batch row in the reserve's gate block. */
static inline int64_t hg_rnn_GS(const hg_rnn_dims *d)
{
    return (d->mode == HG_RNN_GRU ? 4 : hg_rnn_gates(d)) * d->H;
}
static inline int64_t hg_rnn_layer_in(const hg_rnn_dims *d, int64_t l)
{
    return l == 0 ? d->I : d->D * hg_rnn_R(d);
}

/* Where one layer and direction's weights and biases are: in the flat vector, or in the
 * separate arrays the vector would be made of (a plan that never builds it: ops/rnn.c). The
 * forward kernel takes one per layer and direction (index l * D + dir); wr is NULL without a
 * projection. */
typedef struct hg_rnn_wptr {
    const void *wx, *wh, *wr, *bx, *bh;
} hg_rnn_wptr;

/* Offsets (in elements) of one layer and direction's weights and biases in the flat vector. */
typedef struct hg_rnn_poff {
    int64_t wx, wh, wr, bx, bh;
} hg_rnn_poff;

static inline int64_t hg_rnn_weights_of_layer(const hg_rnn_dims *d, int64_t l)
{
    int64_t GH = hg_rnn_gates(d) * d->H, R = hg_rnn_R(d);
    return GH * hg_rnn_layer_in(d, l) + GH * R + d->P * d->H;
}

static inline int64_t hg_rnn_param_size(const hg_rnn_dims *d)
{
    int64_t n = 0, GH = hg_rnn_gates(d) * d->H;
    for (int64_t l = 0; l < d->L; l++) n += d->D * (hg_rnn_weights_of_layer(d, l) + 2 * GH);
    return n;
}

static inline hg_rnn_poff hg_rnn_param_offsets(const hg_rnn_dims *d, int64_t l, int64_t dir)
{
    int64_t GH = hg_rnn_gates(d) * d->H, w = 0, all = 0;
    for (int64_t k = 0; k < d->L; k++) {
        if (k < l) w += d->D * hg_rnn_weights_of_layer(d, k);
        all += d->D * hg_rnn_weights_of_layer(d, k);
    }
    hg_rnn_poff o;
    o.wx = w + dir * hg_rnn_weights_of_layer(d, l);
    o.wh = o.wx + GH * hg_rnn_layer_in(d, l);
    o.wr = o.wh + GH * hg_rnn_R(d);
    o.bx = all + (l * d->D + dir) * 2 * GH;
    o.bh = o.bx + GH;
    return o;
}

/* Offsets of one layer's blocks in the reserve (-1: the block does not exist). */
typedef struct hg_rnn_roff {
    int64_t gates[2], c[2], tc[2], r[2]; /* per direction */
    int64_t y, mask, xd;          /* per layer */
} hg_rnn_roff;

static inline int64_t hg_rnn_reserve_layer(const hg_rnn_dims *d, int64_t l)
{
    int64_t TN = d->T * d->N, per_dir = TN * hg_rnn_GS(d);
    if (d->mode == HG_RNN_LSTM) per_dir += TN * d->H * (d->P ? 3 : 2);
    int64_t n = d->D * per_dir;
    if (l < d->L - 1) n += TN * d->D * hg_rnn_R(d) * (d->drop > 0 ? 3 : 1);
    return n;
}

static inline int64_t hg_rnn_reserve_size(const hg_rnn_dims *d)
{
    int64_t n = 0;
    for (int64_t l = 0; l < d->L; l++) n += hg_rnn_reserve_layer(d, l);
    return n;
}

static inline hg_rnn_roff hg_rnn_reserve_offsets(const hg_rnn_dims *d, int64_t l)
{
    int64_t off = 0, TN = d->T * d->N, YS = TN * d->D * hg_rnn_R(d);
    for (int64_t k = 0; k < l; k++) off += hg_rnn_reserve_layer(d, k);
    hg_rnn_roff o;
    for (int64_t dir = 0; dir < 2; dir++) {
        o.gates[dir] = o.c[dir] = o.tc[dir] = o.r[dir] = -1;
        if (dir >= d->D) continue;
        o.gates[dir] = off;
        off += TN * hg_rnn_GS(d);
        if (d->mode == HG_RNN_LSTM) {
            o.c[dir] = off;
            o.tc[dir] = off + TN * d->H;
            off += 2 * TN * d->H;
            if (d->P) {
                o.r[dir] = off;
                off += TN * d->H;
            }
        }
    }
    o.y = o.mask = o.xd = -1;
    if (l < d->L - 1) {
        o.y = off;
        off += YS;
        if (d->drop > 0) {
            o.mask = off;
            o.xd = off + YS;
        }
    }
    return o;
}

/* Scratch (in elements of the data type) of the forward and backward kernels; the recurrent
 * product's output rows and its packed weights are sized for 32-wide panels (rnn_gemm.h). */
static inline int64_t hg_rnn_pad32(int64_t n) { return (n + 31) / 32 * 32; }

static inline int64_t hg_rnn_fwd_scratch(const hg_rnn_dims *d)
{
    int64_t R = hg_rnn_R(d), GHp = hg_rnn_pad32(hg_rnn_gates(d) * d->H);
    return d->N * (2 * R + d->H + GHp) + GHp * R;
}

static inline int64_t hg_rnn_bwd_scratch(const hg_rnn_dims *d)
{
    int64_t R = hg_rnn_R(d), TN = d->T * d->N, GH = hg_rnn_gates(d) * d->H;
    int64_t n = d->N * (R + hg_rnn_pad32(R) + 2 * d->H) + hg_rnn_pad32(R) * GH;
    n += TN * GH * (d->mode == HG_RNN_GRU ? 2 : 1) + TN * R * (d->P ? 2 : 1);
    if (d->L > 1) n += 2 * TN * d->D * R;
    return n;
}

/* The kernels (rnn_tmpl.h, instantiated in ops/rnn.c). lens: per batch row the number of valid
 * steps (0..T), or NULL for all T. Forward writes y (T, N, D*R), hy (L*D, N, R), cy (LSTM:
 * L*D, N, H) and the reserve; `train` applies the dropout mask the caller drew into the
 * reserve; wp: the weights of every layer and direction (hg_rnn_wptr). Backward reads the
 * forward's inputs, y and the reserve, and writes every gradient
 * (dx, dw, dh0, dc0: none accumulates; dx NULL: the data's gradient is not computed). ws: the scratch above. Thread-safe: they touch only
 * their arguments. */
void hg_rnn_forward_f32(const hg_rnn_dims *d, bool train, const float *x, const hg_rnn_wptr *wp,
                        const float *h0, const float *c0, const int64_t *lens, float *y, float *hy,
                        float *cy, float *res, float *ws);
void hg_rnn_forward_f64(const hg_rnn_dims *d, bool train, const double *x, const hg_rnn_wptr *wp,
                        const double *h0, const double *c0, const int64_t *lens, double *y,
                        double *hy, double *cy, double *res, double *ws);
void hg_rnn_backward_f32(const hg_rnn_dims *d, bool train, const float *x, const float *w,
                         const float *h0, const float *c0, const int64_t *lens, const float *y,
                         const float *res, const float *dy, const float *dhy, const float *dcy,
                         float *dx, float *dw, float *dh0, float *dc0, float *ws);
void hg_rnn_backward_f64(const hg_rnn_dims *d, bool train, const double *x, const double *w,
                         const double *h0, const double *c0, const int64_t *lens, const double *y,
                         const double *res, const double *dy, const double *dhy, const double *dcy,
                         double *dx, double *dw, double *dh0, double *dc0, double *ws);

#endif
