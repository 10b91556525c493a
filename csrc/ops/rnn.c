/* The fused recurrent layer: MXNet's RNN op (modes rnn_relu, rnn_tanh, lstm, gru; layers,
 * directions, LSTM projection and cell clipping, dropout between layers, per-row sequence
 * lengths), its _backward_RNN, and _rnn_param_concat, the Concat gluon's layers join their
 * parameters with. Kernels: kernels/cpu/rnn_tmpl.h (instances in rnn_kernels.c); on a GPU,
 * kernels/cuda/rnn.cu, which keeps the same reserve.
 *
 * Outputs: output, state_output, statecell_output and the reserve; state_outputs decides how
 * many are visible (MXNet's count), the rest are hidden. The reserve always exists and the
 * forward always fills it: it is the buffer the gate loop computes in (the gates of all steps
 * come from one input GEMM written there), so keeping it for the backward costs memory, not
 * time, and a backward never meets a forward that skipped it (a forward recorded in predict
 * mode is still differentiable, as in MXNet).
 *
 * Sequence lengths and cell clipping follow cuDNN's semantics (steps past a row's length give
 * zeros and leave the state as it was; the backward direction starts at the row's last valid
 * step); MXNet 1.9.1's CPU kernel ignores both. float16 is refused, as MXNet's CPU refuses it.
 */
#include "ops/rnn.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/rnn.h"
#include "ops/ops_util.h"

static const char *const k_modes[] = {"rnn_relu", "rnn_tanh", "lstm", "gru", NULL};

/* The schema; _backward_RNN's adds data_grad (whether the data's gradient is wanted: the
 * input projection's adjoint is a GEMM as large as the forward's, skipped when nobody reads it). */
#define RNN_ATTR_SPECS                                                                             \
    [RNN_STATE_SIZE] = {"state_size", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,                         \
                        "size of the state for each layer", NULL},                                 \
    [RNN_NUM_LAYERS] = {"num_layers", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL,                         \
                        "number of stacked layers", NULL},                                         \
    [RNN_BIDIR] = {"bidirectional", HG_ATTR_BOOL, 0, "False",                                      \
                   "whether to use bidirectional recurrent layers", NULL},                         \
    [RNN_MODE] = {"mode", HG_ATTR_ENUM, HG_ATTR_REQUIRED, NULL, "the type of RNN to compute",      \
                  k_modes},                                                                        \
    [RNN_P] = {"p", HG_ATTR_FLOAT, 0, "0",                                                         \
               "drop rate of the dropout on the outputs of each RNN layer, except the last layer", \
               NULL},                                                                              \
    [RNN_STATE_OUTPUTS] = {"state_outputs", HG_ATTR_BOOL, 0, "False",                              \
                           "Whether to have the states as symbol outputs.", NULL},                 \
    [RNN_PROJ] = {"projection_size", HG_ATTR_INT, HG_ATTR_OPTIONAL, "None",                        \
                  "size of the LSTM's projection of h", NULL},                                     \
    [RNN_CLIP_MIN] = {"lstm_state_clip_min", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",              \
                      "Minimum clip value of LSTM states (with lstm_state_clip_max)", NULL},       \
    [RNN_CLIP_MAX] = {"lstm_state_clip_max", HG_ATTR_FLOAT, HG_ATTR_OPTIONAL, "None",              \
                      "Maximum clip value of LSTM states (with lstm_state_clip_min)", NULL},       \
    [RNN_CLIP_NAN] = {"lstm_state_clip_nan", HG_ATTR_BOOL, 0, "False",                             \
                      "clip NaN cell states to the range instead of propagating them", NULL},      \
    [RNN_USE_SEQ] = {"use_sequence_length", HG_ATTR_BOOL, 0, "False",                              \
                     "take a sequence_length input: valid steps per batch row", NULL},

static const hg_attr_spec k_rnn_attrs[] = {RNN_ATTR_SPECS};
_Static_assert(HG_COUNT(k_rnn_attrs) == RNN_NATTRS, "k_rnn_attrs must match its enum");
static const hg_attr_spec k_rnn_bwd_attrs[] = {
    RNN_ATTR_SPECS[RNN_DATA_GRAD] = {"data_grad", HG_ATTR_BOOL, 0, "True",
                                     "compute the gradient of data", NULL},
};

static bool is_lstm(const hg_attrs *a) { return a->v[RNN_MODE].i == HG_RNN_LSTM; }
static int seq_input(const hg_attrs *a) { return is_lstm(a) ? 4 : 3; }
static int rnn_num_inputs(const hg_attrs *a)
{
    return seq_input(a) + (a->v[RNN_USE_SEQ].b ? 1 : 0);
}
static int rnn_visible(const hg_attrs *a)
{
    return a->v[RNN_STATE_OUTPUTS].b ? (is_lstm(a) ? 3 : 2) : 1;
}

/* Checks the attributes and fills the geometry from data's (T, N, I). */
static hg_status rnn_dims(const char *name, const hg_attrs *a, const hg_meta *x, hg_rnn_dims *d)
{
    char s[HG_SHAPE_STR];
    memset(d, 0, sizeof *d);
    d->mode = (hg_rnn_mode)a->v[RNN_MODE].i;
    d->H = a->v[RNN_STATE_SIZE].i;
    d->L = a->v[RNN_NUM_LAYERS].i;
    d->D = a->v[RNN_BIDIR].b ? 2 : 1;
    d->drop = a->v[RNN_P].f;
    if (d->H < 1 || d->L < 1)
        return hg_error(HG_ERR_VALUE,
                        "%s: state_size and num_layers must be positive, got %lld "
                        "and %lld",
                        name, (long long)d->H, (long long)d->L);
    if (!(d->drop >= 0 && d->drop < 1))
        return hg_error(HG_ERR_VALUE, "%s: p (dropout) must be in [0, 1), got %g", name, d->drop);
    if (!a->v[RNN_PROJ].is_none) {
        d->P = a->v[RNN_PROJ].i;
        if (d->mode != HG_RNN_LSTM)
            return hg_error(HG_ERR_VALUE,
                            "%s: projection_size is only supported with mode "
                            "'lstm', got mode '%s'",
                            name, k_modes[d->mode]);
        if (d->P < 1)
            return hg_error(HG_ERR_VALUE, "%s: projection_size must be positive, got %lld", name,
                            (long long)d->P);
    }
    bool has_min = !a->v[RNN_CLIP_MIN].is_none, has_max = !a->v[RNN_CLIP_MAX].is_none;
    if (has_min != has_max)
        return hg_error(HG_ERR_VALUE,
                        "%s: lstm_state_clip_min and lstm_state_clip_max must be "
                        "given together",
                        name);
    if (has_min) {
        d->clip = d->mode == HG_RNN_LSTM;
        d->clip_min = a->v[RNN_CLIP_MIN].f;
        d->clip_max = a->v[RNN_CLIP_MAX].f;
        d->clip_nan = a->v[RNN_CLIP_NAN].b;
        if (!(d->clip_min <= d->clip_max))
            return hg_error(HG_ERR_VALUE,
                            "%s: lstm_state_clip_min (%g) must not exceed "
                            "lstm_state_clip_max (%g)",
                            name, d->clip_min, d->clip_max);
    }
    if (x->ndim != 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 3-D (sequence, batch, feature) in layout "
                        "TNC, got %s",
                        name, hg_shape_str(s, x->ndim, x->shape));
    d->T = x->shape[0], d->N = x->shape[1], d->I = x->shape[2];
    /* Every GEMM's sizes (at most T*N rows of G*H, D*R or I columns) must reach the BLAS. */
    int64_t R = hg_rnn_R(d), GH = hg_rnn_gates(d) * d->H, wide = GH + d->H;
    if (d->I > wide) wide = d->I;
    if (d->D * R > wide) wide = d->D * R;
    if (d->H > INT32_MAX / 8 || R > INT32_MAX / 8 || d->L > INT32_MAX ||
        !hg_gemm_fits(d->T * d->N, wide, wide) || (d->T > 0 && d->N > INT32_MAX / d->T))
        return hg_error(HG_ERR_VALUE, "%s: sizes too large (data %s, state_size %lld)", name,
                        hg_shape_str(s, x->ndim, x->shape), (long long)d->H);
    return HG_OK;
}

hg_status hg_rnn_dims_of(const char *name, const hg_attrs *a, const hg_meta *x, hg_rnn_dims *d)
{
    return rnn_dims(name, a, x, d);
}

static bool meta_known(const hg_meta *m)
{
    if (m->ndim < 0) return false;
    for (int i = 0; i < m->ndim; i++)
        if (m->shape[i] < 0) return false;
    return true;
}

static hg_status fill_input(const hg_op_def *op, const char *what, hg_meta *m, hg_dtype dt, int nd,
                            const int64_t *want, bool check_dtype)
{
    char s0[HG_SHAPE_STR], s1[HG_SHAPE_STR];
    if (check_dtype && m->ndim >= 0 && m->dtype != dt)
        return hg_error(HG_ERR_TYPE, "%s: %s has dtype %s, data %s (must match)", op->name, what,
                        hg_dtype_name(m->dtype), hg_dtype_name(dt));
    hg_meta before = *m;
    if (!hg_meta_merge(m, dt, nd, want))
        return hg_error(HG_ERR_VALUE, "%s: %s must have shape %s, got %s", op->name, what,
                        hg_shape_str(s0, nd, want), hg_shape_str(s1, before.ndim, before.shape));
    return HG_OK;
}

static hg_status rnn_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nout;
    for (int k = 0; k < 4; k++) out[k].dtype = in[0].dtype;
    if (!meta_known(&in[0])) {
        for (int k = 0; k < 4; k++) out[k].ndim = -1;
        return HG_OK;
    }
    hg_dtype dt = in[0].dtype;
    if (dt == HG_DTYPE_F16)
        return hg_error(HG_ERR_TYPE,
                        "%s: float16 is not supported on the CPU (MXNet's CPU RNN "
                        "refuses it too); use float32 or float64",
                        op->name);
    if (dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "%s: data must be float32 or float64, got %s", op->name,
                        hg_dtype_name(dt));
    hg_rnn_dims d;
    HG_TRY(rnn_dims(op->name, a, &in[0], &d));
    const int64_t R = hg_rnn_R(&d), LD = d.L * d.D, np = hg_rnn_param_size(&d);
    HG_TRY(fill_input(op, "parameters", &in[1], dt, 1, &np, true));
    HG_TRY(fill_input(op, "state", &in[2], dt, 3, (int64_t[]){LD, d.N, R}, true));
    if (is_lstm(a))
        HG_TRY(fill_input(op, "state_cell", &in[3], dt, 3, (int64_t[]){LD, d.N, d.H}, true));
    if (a->v[RNN_USE_SEQ].b) {
        if (seq_input(a) >= nin)
            return hg_error(HG_ERR_VALUE, "%s: use_sequence_length needs a sequence_length input",
                            op->name);
        HG_TRY(fill_input(op, "sequence_length", &in[seq_input(a)], dt, 1, &d.N, false));
    }
    out[0] = (hg_meta){.ndim = 3, .dtype = dt, .shape = {d.T, d.N, d.D * R}};
    out[1] = (hg_meta){.ndim = 3, .dtype = dt, .shape = {LD, d.N, R}};
    out[2] = is_lstm(a) ? (hg_meta){.ndim = 3, .dtype = dt, .shape = {LD, d.N, d.H}}
                        : (hg_meta){.ndim = 1, .dtype = dt, .shape = {0}};
    out[3] = (hg_meta){.ndim = 1, .dtype = dt, .shape = {hg_rnn_reserve_size(&d)}};
    for (int k = 0; k < 4; k++) HG_TRY(hg_shape_check(out[k].ndim, out[k].shape, dt));
    return HG_OK;
}

/* Workspace: per-row lengths (int64) first, then the kernel's scratch. */
static size_t ws_bytes(const hg_attrs *a, const hg_meta *x, bool backward)
{
    hg_rnn_dims d;
    if (!meta_known(x) || x->ndim != 3 || rnn_dims("RNN", a, x, &d) != HG_OK) {
        hg_error_clear();
        return 0;
    }
    int64_t n = backward ? hg_rnn_bwd_scratch(&d) : hg_rnn_fwd_scratch(&d);
    return sizeof(int64_t) * (size_t)d.N + hg_dtype_size(x->dtype) * (size_t)n;
}

static size_t rnn_ws(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    return ws_bytes(a, &in[0], false);
}

/* The sequence lengths as int64, clamped to [0, T] (a length is a count of steps). */
static int64_t *load_lens(const hg_tensor *s, int64_t T, int64_t *lens)
{
    for (int64_t n = 0; n < s->size; n++) {
        double v;
        switch (s->dtype) {
        case HG_DTYPE_F32: v = HG_DATA(s, float)[n]; break;
        case HG_DTYPE_F64: v = HG_DATA(s, double)[n]; break;
        case HG_DTYPE_F16: v = hg_half_to_float(HG_DATA(s, uint16_t)[n]); break;
        case HG_DTYPE_I32: v = HG_DATA(s, int32_t)[n]; break;
        case HG_DTYPE_I64: v = (double)HG_DATA(s, int64_t)[n]; break;
        case HG_DTYPE_I8: v = HG_DATA(s, int8_t)[n]; break;
        case HG_DTYPE_U8: v = HG_DATA(s, uint8_t)[n]; break;
        default: v = HG_DATA(s, bool)[n]; break;
        }
        lens[n] = !(v > 0) ? 0 : v >= (double)T ? T : (int64_t)v;
    }
    return lens;
}

/* The dropout masks between layers: (u < keep) / keep in training, ones otherwise (so the
 * backward, which always applies them, sees the identity). */
static void draw_masks(const hg_rnn_dims *d, bool train, hg_tensor *res)
{
    const int64_t YS = d->T * d->N * d->D * hg_rnn_R(d);
    const double keep = 1.0 - d->drop;
    double u[256];
    for (int64_t l = 0; l + 1 < d->L; l++) {
        int64_t off = hg_rnn_reserve_offsets(d, l).mask;
        for (int64_t i0 = 0; i0 < YS; i0 += 256) {
            int64_t n = YS - i0 < 256 ? YS - i0 : 256;
            if (train) hg_rng_uniform(u, n);
            for (int64_t i = 0; i < n; i++) {
                double m = !train ? 1.0 : u[i] < keep ? 1.0 / keep : 0.0;
                if (res->dtype == HG_DTYPE_F32) HG_DATA(res, float)[off + i0 + i] = (float)m;
                else HG_DATA(res, double)[off + i0 + i] = m;
            }
        }
    }
}

/* The weight table of a flat parameter vector w (elements of esz bytes). */
static void table_of_flat(const hg_rnn_dims *d, const char *w, size_t esz, hg_rnn_wptr *wp)
{
    for (int64_t l = 0; l < d->L; l++)
        for (int64_t dir = 0; dir < d->D; dir++) {
            hg_rnn_poff o = hg_rnn_param_offsets(d, l, dir);
            wp[l * d->D + dir] = (hg_rnn_wptr){w + o.wx * esz, w + o.wh * esz,
                                               d->P ? w + o.wr * esz : NULL, w + o.bx * esz,
                                               w + o.bh * esz};
        }
}

/* The forward with the weights at wp (in: the op's inputs; in[1], the flat vector, unread). */
static hg_status run_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             const hg_rnn_dims *d, const hg_rnn_wptr *wp, hg_tensor *const *in,
                             hg_tensor *const *out)
{
    (void)op;
    int64_t *lens = ctx->workspace;
    void *scratch = lens ? (void *)(lens + d->N) : NULL;
    if (a->v[RNN_USE_SEQ].b) load_lens(in[seq_input(a)], d->T, lens);
    else lens = NULL;
    if (d->drop > 0 && d->L > 1) draw_masks(d, ctx->is_train, out[3]);
    const bool lstm = is_lstm(a);
    if (in[0]->dtype == HG_DTYPE_F32)
        hg_rnn_forward_f32(d, ctx->is_train, HG_DATA(in[0], float), wp, HG_DATA(in[2], float),
                           lstm ? HG_DATA(in[3], float) : NULL, lens, HG_DATA(out[0], float),
                           HG_DATA(out[1], float), lstm ? HG_DATA(out[2], float) : NULL,
                           HG_DATA(out[3], float), scratch);
    else
        hg_rnn_forward_f64(d, ctx->is_train, HG_DATA(in[0], double), wp, HG_DATA(in[2], double),
                           lstm ? HG_DATA(in[3], double) : NULL, lens, HG_DATA(out[0], double),
                           HG_DATA(out[1], double), lstm ? HG_DATA(out[2], double) : NULL,
                           HG_DATA(out[3], double), scratch);
    return HG_OK;
}

/* Layers x directions whose weight table lives on the stack; more take the heap. */
#define WP_STACK 16

static hg_status rnn_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_rnn_dims d;
    hg_meta x = hg_meta_of(in[0]);
    HG_TRY(rnn_dims(op->name, a, &x, &d));
    hg_rnn_wptr stack[WP_STACK], *wp = stack;
    if (d.L * d.D > WP_STACK && !(wp = malloc(sizeof *wp * (size_t)(d.L * d.D))))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    table_of_flat(&d, hg_data(in[1]), hg_dtype_size(in[1]->dtype), wp);
    hg_status st = run_forward(op, a, ctx, &d, wp, in, out);
    if (wp != stack) free(wp);
    return st;
}

/* ---- the forward from the parameter arrays themselves -------------------------------------
 * Gluon's layers build the flat vector at every call (_rnn_param_concat of every weight and
 * bias, reshaped to 1-D) and the RNN op reads it; a plan in which nothing else reads the vector
 * runs the RNN on the arrays instead (exec/lower.c), sparing a copy of all the weights per call
 * (27 MB for a 2-layer LSTM of 650 units: about 6% of its batch-1 latency). */

/* Whether pieces (in order, the concat's inputs) are exactly the flat vector's blocks: per
 * layer and direction i2h, h2h and h2r weights, then per layer and direction i2h and h2h
 * biases, each 1-D, of x's dtype and of its block's size. */
static bool split_blocks(const hg_rnn_dims *d, int npieces, const hg_meta *pieces, hg_dtype dt)
{
    const int64_t GH = hg_rnn_gates(d) * d->H, R = hg_rnn_R(d), LD = d->L * d->D;
    const int per = d->P ? 3 : 2;
    if (npieces != LD * (per + 2)) return false;
    int k = 0;
    for (int64_t l = 0; l < d->L; l++)
        for (int64_t dir = 0; dir < d->D; dir++) {
            int64_t sz[3] = {GH * hg_rnn_layer_in(d, l), GH * R, d->P * d->H};
            for (int j = 0; j < per; j++, k++)
                if (pieces[k].ndim != 1 || pieces[k].dtype != dt || pieces[k].shape[0] != sz[j])
                    return false;
        }
    for (; k < npieces; k++)
        if (pieces[k].ndim != 1 || pieces[k].dtype != dt || pieces[k].shape[0] != GH) return false;
    return true;
}

bool hg_rnn_split_ok(const hg_attrs *a, const hg_meta *x, int64_t concat_dim, int npieces,
                     const hg_meta *pieces)
{
    hg_rnn_dims d;
    if (concat_dim != 0 && concat_dim != -1) return false;
    if (!meta_known(x) || (x->dtype != HG_DTYPE_F32 && x->dtype != HG_DTYPE_F64) ||
        rnn_dims("RNN", a, x, &d) != HG_OK) {
        hg_error_clear();
        return false;
    }
    return split_blocks(&d, npieces, pieces, x->dtype);
}

hg_status hg_rnn_forward_split(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int npieces, hg_tensor *const *pieces, hg_tensor *const *in,
                               hg_tensor *const *out)
{
    hg_rnn_dims d;
    hg_meta x = hg_meta_of(in[0]);
    HG_TRY(rnn_dims(op->name, a, &x, &d));
    hg_meta pm_stack[4 * WP_STACK] = {{0}}, *pm = pm_stack;
    if (npieces > 4 * WP_STACK && !(pm = malloc(sizeof *pm * (size_t)npieces)))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    for (int k = 0; k < npieces; k++) pm[k] = hg_meta_of(pieces[k]);
    bool ok = split_blocks(&d, npieces, pm, x.dtype);
    if (pm != pm_stack) free(pm);
    if (!ok) /* the plan checked the same metas: only a broken caller gets here */
        return hg_error(HG_ERR_INTERNAL, "%s: the parameter arrays do not match the layer",
                        op->name);
    hg_rnn_wptr stack[WP_STACK], *wp = stack;
    if (d.L * d.D > WP_STACK && !(wp = malloc(sizeof *wp * (size_t)(d.L * d.D))))
        return hg_error(HG_ERR_MEMORY, "out of memory");
    const int per = d.P ? 3 : 2;
    const int64_t LD = d.L * d.D;
    for (int64_t k = 0; k < LD; k++)
        wp[k] = (hg_rnn_wptr){hg_data(pieces[k * per]), hg_data(pieces[k * per + 1]),
                              d.P ? hg_data(pieces[k * per + 2]) : NULL,
                              hg_data(pieces[LD * per + 2 * k]),
                              hg_data(pieces[LD * per + 2 * k + 1])};
    hg_status st = run_forward(op, a, ctx, &d, wp, in, out);
    if (wp != stack) free(wp);
    return st;
}

/* ---- backward --------------------------------------------------------------------------------
 * _backward_RNN inputs: ograd output, ograd state_output, ograd statecell_output, data,
 * parameters, state, output, reserve, then state_cell (lstm) and sequence_length (when used).
 * Outputs: the gradients of data, parameters, state and (lstm) state_cell. */
static int bwd_num_inputs(const hg_attrs *a)
{
    return RNN_B_FIXED + (is_lstm(a) ? 1 : 0) + (a->v[RNN_USE_SEQ].b ? 1 : 0);
}
static int bwd_num_outputs(const hg_attrs *a) { return is_lstm(a) ? 4 : 3; }

static hg_status bwd_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    (void)nin;
    hg_rnn_dims d;
    HG_TRY(rnn_dims(op->name, a, &in[RNN_B_X], &d));
    out[0] = in[RNN_B_X];
    out[1] = in[RNN_B_W];
    out[2] = in[RNN_B_H0];
    if (nout > 3) out[3] = in[RNN_B_FIXED];
    return HG_OK;
}

static size_t bwd_ws(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)nin;
    return ws_bytes(a, &in[RNN_B_X], true);
}

static hg_status rnn_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    (void)nout;
    hg_rnn_dims d;
    hg_meta x = hg_meta_of(in[RNN_B_X]);
    HG_TRY(rnn_dims(op->name, a, &x, &d));
    const bool lstm = is_lstm(a);
    int64_t *lens = ctx->workspace;
    void *scratch = lens ? (void *)(lens + d.N) : NULL;
    if (a->v[RNN_USE_SEQ].b) load_lens(in[RNN_B_FIXED + (lstm ? 1 : 0)], d.T, lens);
    else lens = NULL;
    const bool want_dx = a->v[RNN_DATA_GRAD].b;
    if (!want_dx) hg_ops_zero_fill(out[0]); /* defined, though nobody reads it */
    /* train: the forward left the masked layer outputs in the reserve (also in predict mode,
     * where the mask is ones), so the backward always reads them. */
#define BWD(RT, SFX)                                                                           \
    hg_rnn_backward_##SFX(&d, true, HG_DATA(in[RNN_B_X], RT), HG_DATA(in[RNN_B_W], RT),        \
                          HG_DATA(in[RNN_B_H0], RT),                                           \
                          lstm ? HG_DATA(in[RNN_B_FIXED], RT) : NULL, lens,                    \
                          HG_DATA(in[RNN_B_Y], RT), HG_DATA(in[RNN_B_RES], RT),                \
                          HG_DATA(in[RNN_B_DY], RT), HG_DATA(in[RNN_B_DHY], RT),               \
                          lstm ? HG_DATA(in[RNN_B_DCY], RT) : NULL,                            \
                          want_dx ? HG_DATA(out[0], RT) : NULL, HG_DATA(out[1], RT),           \
                          HG_DATA(out[2], RT), lstm ? HG_DATA(out[3], RT) : NULL, scratch)
    if (in[RNN_B_X]->dtype == HG_DTYPE_F32) BWD(float, f32);
    else BWD(double, f64);
#undef BWD
    return HG_OK;
}

static hg_status rnn_grad(hg_grad_ctx *g)
{
    const hg_attrs *a = hg_g_attrs(g);
    const bool lstm = is_lstm(a);
    hg_sentry in[RNN_B_FIXED + 2], outs[4];
    int n = 0;
    in[n++] = hg_g_ograd(g, 0);
    in[n++] = hg_g_ograd(g, 1);
    in[n++] = hg_g_ograd(g, 2);
    in[n++] = hg_g_in(g, 0);
    in[n++] = hg_g_in(g, 1);
    in[n++] = hg_g_in(g, 2);
    in[n++] = hg_g_out(g, 0);
    in[n++] = hg_g_out(g, 3);
    if (lstm) in[n++] = hg_g_in(g, 3);
    if (a->v[RNN_USE_SEQ].b) in[n++] = hg_g_in(g, seq_input(a));
    int nout = lstm ? 4 : 3;
    hg_g_op_fwd_attrs(g, "_backward_RNN", n, in,
                      hg_g_needs(g, 0) ? NULL : HG_KV("data_grad", "False"), nout, outs);
    for (int k = 0; k < nout; k++) hg_g_set(g, k, outs[k]);
    return hg_g_status(g);
}

/* ---- _rnn_param_concat ------------------------------------------------------------------------
 * MXNet's Concat variant for the fused layers' flat parameter vector. Its point is the inference
 * of a single unknown input size from the known output (the RNN op fills the vector's size from
 * data, which then decides the deferred l0_i2h_weight), which Concat's rule here already does:
 * the schema is Concat's, index for index, and so are the rules. */
static const hg_op_def *concat_def(void)
{
    /* Looked up once; threads racing here store the same pointer (atomically: no data race). */
    static _Atomic(const hg_op_def *) def;
    const hg_op_def *d = atomic_load_explicit(&def, memory_order_acquire);
    if (!d) {
        d = hg_registry_find("Concat");
        atomic_store_explicit(&def, d, memory_order_release);
    }
    return d;
}

static hg_status pc_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    /* MXNet's rule also decides an input of unknown rank (a deferred weight flattened by
     * reshape(-1)): it has the rank of the others, every size unknown, until the sum decides. */
    int nd = out[0].ndim;
    for (int i = 0; i < nin && nd < 0; i++) nd = in[i].ndim;
    for (int i = 0; i < nin && nd >= 0; i++) {
        if (in[i].ndim >= 0) continue;
        in[i].ndim = nd;
        for (int k = 0; k < nd; k++) in[i].shape[k] = -1;
    }
    /* Several unknown sizes on the axis (a bidirectional layer's two first-layer weights) share
     * what the output leaves, equally, as MXNet's rule does: the directions' weights are of one
     * size. Concat's rule then checks the result. */
    int64_t axis = a->v[1].i;
    if (nd > 0 && out[0].ndim == nd && axis >= -nd && axis < nd) {
        if (axis < 0) axis += nd;
        int64_t total = out[0].shape[axis], sum = 0, nmissing = 0;
        for (int i = 0; i < nin; i++) {
            if (in[i].ndim != nd) return concat_def()->infer(op, a, nin, in, nout, out);
            if (in[i].shape[axis] < 0) nmissing++;
            else sum += in[i].shape[axis];
        }
        if (total >= 0 && nmissing > 1 && total >= sum && (total - sum) % nmissing == 0)
            for (int i = 0; i < nin; i++)
                if (in[i].shape[axis] < 0) in[i].shape[axis] = (total - sum) / nmissing;
    }
    return concat_def()->infer(op, a, nin, in, nout, out);
}

static hg_status pc_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    return concat_def()->forward(op, a, ctx, nin, in, nout, out);
}

static hg_status pc_grad(hg_grad_ctx *g) { return concat_def()->grad(g); }

static const hg_attr_spec k_pc_attrs[] = {
    {"num_args", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "Number of inputs to be concated.", NULL},
    {"dim", HG_ATTR_INT, 0, "1", "the dimension to be concated.", NULL},
};

const hg_op_def hg_ops_rnn[] = {
    {.name = "RNN",
     .doc = "Applies recurrent layers to input data (layout TNC): vanilla RNN with relu or tanh, "
            "LSTM (with optional projection and cell clipping) and GRU (cuDNN's variant), "
            "stacked and optionally bidirectional, from one flat parameter vector in MXNet's "
            "layout",
     .input_names = HG_NAMES("data", "parameters", "state", "state_cell", "sequence_length"),
     .output_names = HG_NAMES("output", "state_output", "statecell_output", "reserve"),
     .attrs = k_rnn_attrs,
     .num_attrs = RNN_NATTRS,
     .num_inputs = 5, /* the most: positional slots; the count comes from get_num_inputs */
     .flags = HG_OP_RANDOM, /* dropout between layers draws masks in training */
     .num_outputs = 4,
     .get_num_inputs = rnn_num_inputs,
     .get_num_visible_outputs = rnn_visible,
     .infer = rnn_infer,
     .forward = rnn_forward,
     .workspace = rnn_ws,
     .grad = rnn_grad},
    {.name = "_backward_RNN",
     .doc = "gradient of RNN (BPTT) from the output gradients, the forward's inputs, its output "
            "and its reserve",
     .input_names = HG_NAMES("ograd", "ograd_state", "ograd_statecell", "data", "parameters",
                             "state", "output", "reserve", "state_cell", "sequence_length"),
     .output_names = HG_NAMES("data_grad", "parameters_grad", "state_grad", "state_cell_grad"),
     .attrs = k_rnn_bwd_attrs,
     .num_attrs = RNN_NATTRS + 1,
     .num_inputs = RNN_B_FIXED + 2,
     .num_outputs = 4,
     .get_num_inputs = bwd_num_inputs,
     .get_num_outputs = bwd_num_outputs,
     .infer = bwd_infer,
     .forward = rnn_backward,
     .workspace = bwd_ws},
    {.name = "_rnn_param_concat",
     .doc = "Concat for the fused RNN layers' parameter vector: joins inputs along dim and "
            "infers a single unknown input size from the output",
     .input_names = HG_NAMES("data"),
     .attrs = k_pc_attrs,
     .num_attrs = 2,
     .flags = HG_OP_VARARGS,
     .infer = pc_infer,
     .forward = pc_forward,
     .grad = pc_grad},
    {.name = NULL},
};
