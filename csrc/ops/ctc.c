/* CTCLoss (MXNet 1.x's CTCLoss / ctc_loss / _contrib_CTCLoss): connectionist temporal
 * classification loss of unnormalised activations data (T, N, C) against label sequences
 * label (N, L), one loss per sequence: -log p(label | data), with softmax over C.
 *
 * blank_label='first': class 0 is the blank, labels are 1..C-1 and a label row ends at its
 * first 0; 'last': class C-1 is the blank, labels are 0..C-2 and a row ends at its first -1.
 * use_data_lengths / use_label_lengths add inputs data_lengths (N,) / label_lengths (N,)
 * (in that order) giving each sequence's time steps and label count instead.
 *
 * The forward pass runs the alpha and beta recursions in log space, in double, one sequence
 * per task, and writes the gradient of each loss with respect to the activations into the
 * hidden second output: softmax(data) - posterior occupancy of each class, zero past the
 * sequence's length. The gradient rule is that output times the head gradient (broadcast over
 * T and C), as in MXNet. A sequence no alignment can produce (too short for its labels) gets
 * a loss of 0 and a zero gradient, as MXNet 1.9.1 gives (it drops such sequences).
 */
#include <math.h>
#include <string.h>

#include "core/parallel.h"
#include "graph/grad.h"

enum { CTC_USE_DATA_LEN, CTC_USE_LABEL_LEN, CTC_BLANK, CTC_NATTRS };
enum { BLANK_FIRST, BLANK_LAST, BLANK_NCHOICES };

static const char *const k_blank_choices[] = {
    [BLANK_FIRST] = "first",
    [BLANK_LAST] = "last",
    [BLANK_NCHOICES] = NULL,
};
_Static_assert(HG_COUNT(k_blank_choices) == BLANK_NCHOICES + 1,
               "k_blank_choices must match its enum");

static const hg_attr_spec k_ctc_attrs[] = {
    [CTC_USE_DATA_LEN] = {"use_data_lengths", HG_ATTR_BOOL, 0, "False",
                          "take data_lengths (N,): the time steps of each sequence", NULL},
    [CTC_USE_LABEL_LEN] =
        {"use_label_lengths", HG_ATTR_BOOL, 0, "False",
         "take label_lengths (N,): the labels of each sequence (else a row ends at the padding: 0 "
         "with blank_label='first', -1 with 'last')",
         NULL},
    [CTC_BLANK] = {"blank_label", HG_ATTR_ENUM, 0, "first",
                   "the blank class: first (0) or last (C - 1)", k_blank_choices},
};
_Static_assert(HG_COUNT(k_ctc_attrs) == CTC_NATTRS, "k_ctc_attrs must match its enum");

static int ctc_num_inputs(const hg_attrs *a)
{
    return 2 + (a->v[CTC_USE_DATA_LEN].b ? 1 : 0) + (a->v[CTC_USE_LABEL_LEN].b ? 1 : 0);
}

static bool known(const hg_meta *m) { return m->ndim >= 0; }

static hg_status check_lengths(const hg_op_def *op, const hg_meta *len, const char *what, int64_t n)
{
    char s[HG_SHAPE_STR];
    if (known(len) && (len->ndim != 1 || (n >= 0 && len->shape[0] != n)))
        return hg_error(HG_ERR_VALUE, "%s: %s must have shape [%lld] (one per sequence), got %s",
                        op->name, what, (long long)n, hg_shape_str(s, len->ndim, len->shape));
    return HG_OK;
}

static hg_status ctc_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                           hg_meta *out)
{
    char s1[HG_SHAPE_STR], s2[HG_SHAPE_STR];
    const hg_meta *x = &in[0], *lab = &in[1];
    if (x->dtype != HG_DTYPE_F32 && x->dtype != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "%s: data must be float32 or float64, got %s", op->name,
                        hg_dtype_name(x->dtype));
    if (known(lab) && (lab->dtype == HG_DTYPE_F16 || lab->dtype == HG_DTYPE_BOOL))
        return hg_error(HG_ERR_TYPE, "%s: label dtype %s is not supported", op->name,
                        hg_dtype_name(lab->dtype));
    out[0].dtype = x->dtype;
    if (nout > 1) out[1].dtype = x->dtype;
    if (!known(x)) return HG_OK;
    if (x->ndim != 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: data must be 3-D (sequence length, batch, classes), "
                        "got shape %s",
                        op->name, hg_shape_str(s1, x->ndim, x->shape));
    int64_t n = x->shape[1];
    if (x->shape[2] < 2)
        return hg_error(HG_ERR_VALUE,
                        "%s: data needs at least 2 classes (one is the blank), "
                        "got shape %s",
                        op->name, hg_shape_str(s1, x->ndim, x->shape));
    if (known(lab) && (lab->ndim != 2 || lab->shape[0] != n))
        return hg_error(HG_ERR_VALUE,
                        "%s: label must have shape [%lld, max label length] for "
                        "data of shape %s, got %s",
                        op->name, (long long)n, hg_shape_str(s1, x->ndim, x->shape),
                        hg_shape_str(s2, lab->ndim, lab->shape));
    int k = 2;
    if (a->v[CTC_USE_DATA_LEN].b) HG_TRY(check_lengths(op, &in[k++], "data_lengths", n));
    if (a->v[CTC_USE_LABEL_LEN].b) HG_TRY(check_lengths(op, &in[k++], "label_lengths", n));
    (void)nin;
    out[0].ndim = 1;
    out[0].shape[0] = n;
    if (nout > 1) out[1] = *x;
    return HG_OK;
}

/* Layout of the workspace per sequence, in doubles: log-softmax (T*C), alpha and beta
 * (T*S each), the extended label (S) and one step's class occupancies (C), with
 * S = 2 * L + 1. */
static int64_t per_seq(const hg_meta *x, const hg_meta *lab)
{
    int64_t t = x->shape[0], c = x->shape[2], s = 2 * lab->shape[1] + 1;
    return t * c + 2 * t * s + s + c;
}

static size_t ctc_ws(const hg_attrs *a, int nin, const hg_meta *in)
{
    (void)a;
    (void)nin;
    return (size_t)(in[0].shape[1] * per_seq(&in[0], &in[1])) * sizeof(double);
}

static double load_num(const hg_tensor *t, int64_t i)
{
    const void *p = hg_data(t);
    switch (t->dtype) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_U8: return ((const uint8_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    default: return 0; /* rejected by ctc_infer */
    }
}

typedef struct {
    const hg_tensor *x, *lab, *dlen, *llen;
    hg_tensor *loss, *grad;
    double *ws;
    int64_t t_max, n, c, l_max, stride;
    int64_t blank;
    double pad;
} ctc_job;

static double lse2(double a, double b)
{
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* Labels and lengths are read as integers, truncating, as MXNet's IndexTensorToVector does
 * (so a label of 2.001 is class 2). */
static double load_trunc(const hg_tensor *t, int64_t i) { return trunc(load_num(t, i)); }

/* The number of labels of sequence b and its time steps (validated by ctc_check). */
static int64_t seq_labels(const ctc_job *j, int64_t b)
{
    if (j->llen) return (int64_t)load_trunc(j->llen, b);
    int64_t l = 0;
    while (l < j->l_max && load_trunc(j->lab, b * j->l_max + l) != j->pad) l++;
    return l;
}

static int64_t seq_steps(const ctc_job *j, int64_t b)
{
    return j->dlen ? (int64_t)load_trunc(j->dlen, b) : j->t_max;
}

static void store(hg_tensor *t, int64_t i, double v)
{
    if (t->dtype == HG_DTYPE_F32) HG_DATA(t, float)[i] = (float)v;
    else HG_DATA(t, double)[i] = v;
}

static void ctc_one(const ctc_job *j, int64_t b)
{
    const int64_t tb = seq_steps(j, b), lb = seq_labels(j, b), c = j->c, n = j->n;
    const int64_t s_len = 2 * lb + 1, s_max = 2 * j->l_max + 1;
    double *lp = j->ws + b * j->stride, *al = lp + j->t_max * c, *be = al + j->t_max * s_max;
    double *ext = be + j->t_max * s_max, *occ = ext + s_max;
    for (int64_t t = tb; t < j->t_max; t++)
        for (int64_t k = 0; k < c; k++) store(j->grad, (t * n + b) * c + k, 0.0);
    for (int64_t t = 0; t < tb; t++) { /* log-softmax of each step */
        double m = -INFINITY, sum = 0;
        for (int64_t k = 0; k < c; k++) {
            lp[t * c + k] = load_num(j->x, (t * n + b) * c + k);
            if (lp[t * c + k] > m) m = lp[t * c + k];
        }
        for (int64_t k = 0; k < c; k++) sum += exp(lp[t * c + k] - m);
        for (int64_t k = 0; k < c; k++) lp[t * c + k] -= m + log(sum);
    }
    for (int64_t s = 0; s < s_len; s++)
        ext[s] = s % 2 ? load_trunc(j->lab, b * j->l_max + s / 2) : (double)j->blank;
    if (tb == 0) {
        store(j->loss, b, 0.0); /* nothing to align: 0 as an empty label, or infeasible */
        return;
    }
#define LP(t, s) lp[(t) * c + (int64_t)ext[s]]
#define SKIP_OK(s, d) (ext[s] != (double)j->blank && ext[s] != ext[(s) + (d)])
    for (int64_t s = 0; s < s_len; s++) al[s] = s < 2 ? LP(0, s) : -INFINITY;
    for (int64_t t = 1; t < tb; t++)
        for (int64_t s = 0; s < s_len; s++) {
            const double *p = al + (t - 1) * s_max;
            double v = p[s];
            if (s >= 1) v = lse2(v, p[s - 1]);
            if (s >= 2 && SKIP_OK(s, -2)) v = lse2(v, p[s - 2]);
            al[t * s_max + s] = v + LP(t, s);
        }
    double *last = be + (tb - 1) * s_max;
    for (int64_t s = 0; s < s_len; s++) last[s] = s >= s_len - 2 ? LP(tb - 1, s) : -INFINITY;
    for (int64_t t = tb - 2; t >= 0; t--)
        for (int64_t s = 0; s < s_len; s++) {
            const double *q = be + (t + 1) * s_max;
            double v = q[s];
            if (s + 1 < s_len) v = lse2(v, q[s + 1]);
            if (s + 2 < s_len && SKIP_OK(s, 2)) v = lse2(v, q[s + 2]);
            be[t * s_max + s] = v + LP(t, s);
        }
    const double *fin = al + (tb - 1) * s_max;
    double logp = s_len > 1 ? lse2(fin[s_len - 1], fin[s_len - 2]) : fin[0];
    store(j->loss, b, logp == -INFINITY ? 0.0 : -logp); /* infeasible: dropped, as MXNet */
    for (int64_t t = 0; t < tb; t++) {
        /* occupancy of class k at t: sum over positions s labelled k of alpha * beta / y */
        for (int64_t k = 0; k < c; k++) occ[k] = -INFINITY;
        for (int64_t s = 0; s < s_len; s++) {
            int64_t k = (int64_t)ext[s];
            occ[k] = lse2(occ[k], al[t * s_max + s] + be[t * s_max + s] - LP(t, s));
        }
        for (int64_t k = 0; k < c; k++) {
            double g = logp == -INFINITY ? 0.0 : exp(lp[t * c + k]) - exp(occ[k] - logp);
            store(j->grad, (t * n + b) * c + k, g);
        }
    }
#undef LP
#undef SKIP_OK
}

static void ctc_range(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t b = begin; b < end; b++) ctc_one(ctx, b);
}

/* Value checks the shape rule cannot make: lengths within the arrays, labels within the
 * classes and not the blank. */
static hg_status ctc_check(const hg_op_def *op, const ctc_job *j)
{
    for (int64_t b = 0; b < j->n; b++) {
        double dl = j->dlen ? load_trunc(j->dlen, b) : 0, ll = j->llen ? load_trunc(j->llen, b) : 0;
        if (!(dl >= 0 && dl <= (double)j->t_max))
            return hg_error(HG_ERR_VALUE, "%s: data_lengths[%lld] = %g is not in [0, %lld]",
                            op->name, (long long)b, load_num(j->dlen, b), (long long)j->t_max);
        if (!(ll >= 0 && ll <= (double)j->l_max))
            return hg_error(HG_ERR_VALUE, "%s: label_lengths[%lld] = %g is not in [0, %lld]",
                            op->name, (long long)b, load_num(j->llen, b), (long long)j->l_max);
        int64_t lb = seq_labels(j, b);
        for (int64_t l = 0; l < lb; l++) {
            double v = load_trunc(j->lab, b * j->l_max + l);
            if (!(v >= 0 && v < (double)j->c) || v == (double)j->blank)
                return hg_error(HG_ERR_VALUE,
                                "%s: label[%lld, %lld] = %g is not a class in "
                                "[0, %lld] other than the blank %lld",
                                op->name, (long long)b, (long long)l, v, (long long)j->c - 1,
                                (long long)j->blank);
        }
    }
    return HG_OK;
}

static hg_status ctc_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)nin;
    if (nout < 2)
        return hg_error(HG_ERR_INTERNAL, "%s: called without its gradient output", op->name);
    const hg_tensor *x = in[0];
    int k = 2;
    ctc_job j = {.x = x,
                 .lab = in[1],
                 .loss = out[0],
                 .grad = out[1],
                 .ws = ctx->workspace,
                 .t_max = x->shape[0],
                 .n = x->shape[1],
                 .c = x->shape[2],
                 .l_max = in[1]->shape[1]};
    if (a->v[CTC_USE_DATA_LEN].b) j.dlen = in[k++];
    if (a->v[CTC_USE_LABEL_LEN].b) j.llen = in[k++];
    bool last = a->v[CTC_BLANK].i == BLANK_LAST;
    j.blank = last ? j.c - 1 : 0;
    j.pad = last ? -1.0 : 0.0;
    hg_meta mx = {.ndim = 3, .shape = {j.t_max, j.n, j.c}};
    hg_meta ml = {.ndim = 2, .shape = {j.n, j.l_max}};
    j.stride = per_seq(&mx, &ml);
    HG_TRY(ctc_check(op, &j));
    if (j.n > 0) hg_parallel_for(j.n, 1, ctc_range, &j);
    return HG_OK;
}

/* d loss_b / d data[t, b, :] is the hidden output; the head gradient scales each sequence. */
static hg_status ctc_grad(hg_grad_ctx *g)
{
    hg_sentry dy = hg_g_op(g, "Reshape", HG_GIN(hg_g_ograd(g, 0)), HG_KV("shape", "(1, -1, 1)"));
    hg_g_set(g, 0, hg_g_op(g, "broadcast_mul", HG_GIN(dy, hg_g_out(g, 1)), NULL));
    return hg_g_status(g);
}

const hg_op_def hg_ops_ctc[] = {
    {.name = "CTCLoss",
     .aliases = HG_NAMES("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
     .doc = "connectionist temporal classification loss of activations (T, N, C) against "
            "label sequences (N, L); one loss per sequence",
     .input_names = HG_NAMES("data", "label", "data_lengths", "label_lengths"),
     .output_names = HG_NAMES("output", "grad"),
     .attrs = k_ctc_attrs,
     .num_attrs = HG_COUNT(k_ctc_attrs),
     .num_inputs = 4,
     .get_num_inputs = ctc_num_inputs,
     .num_outputs = 2,
     .num_visible_outputs = 1,
     .infer = ctc_infer,
     .forward = ctc_forward,
     .workspace = ctc_ws,
     .grad = ctc_grad},
    {.name = NULL},
};
