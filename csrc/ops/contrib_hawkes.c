/* hawkesll: the log likelihood of marked event sequences under a multivariate Hawkes process
 * with exponential kernels, as MXNet 1.9.1's contrib/hawkes_ll. Per sequence i and mark k:
 * intensity lda[i, k] + alpha[k] beta[k] s_k(t) where the state s_k decays as
 * exp(-beta[k] dt) and jumps by one at each event of mark k. Returns the log likelihood of
 * each sequence up to max_time[i] and the states at max_time. The gradient (for lda, alpha
 * and beta, of the likelihood output only: MXNet's rule) runs the same recursion with the
 * states' derivatives in _backward_contrib_hawkesll. Sums run in the data's dtype as MXNet's,
 * by one macro per float type. */
#include <math.h>
#include <string.h>

#include "ops/contrib_util.h"
#include "ops/ops_util.h"

enum { H_LDA, H_ALPHA, H_BETA, H_STATE, H_LAGS, H_MARKS, H_VLEN, H_MAXT, H_NIN };

static bool known(const hg_meta *m) { return m->ndim >= 0; }

static hg_status hk_check(const hg_op_def *op, const hg_meta *in, int64_t *n, int64_t *k)
{
    char s[HG_SHAPE_STR];
    static const int nd[H_NIN] = {2, 1, 1, 2, 2, 2, 1, 1};
    static const char *const names[H_NIN] = {"lda",  "alpha", "beta",         "state",
                                             "lags", "marks", "valid_length", "max_time"};
    for (int i = 0; i < H_NIN; i++)
        if (in[i].ndim != nd[i])
            return hg_error(HG_ERR_VALUE, "%s: %s must be %d-D, got %s", op->name, names[i], nd[i],
                            hg_shape_str(s, in[i].ndim, in[i].shape));
    *n = in[H_LAGS].shape[0], *k = in[H_LDA].shape[1];
    int64_t t = in[H_LAGS].shape[1];
    int64_t want[H_NIN][2] = {{*n, *k}, {*k, 0}, {*k, 0}, {*n, *k},
                              {*n, t},  {*n, t}, {*n, 0}, {*n, 0}};
    for (int i = 0; i < H_NIN; i++)
        for (int d = 0; d < nd[i]; d++)
            if (in[i].shape[d] != want[i][d])
                return hg_error(HG_ERR_VALUE,
                                "%s: %s has shape %s; with lags (N=%lld, T=%lld) and lda "
                                "(N, K=%lld) it must be %s",
                                op->name, names[i], hg_shape_str(s, in[i].ndim, in[i].shape),
                                (long long)*n, (long long)t, (long long)*k,
                                nd[i] == 1 ? (i == H_ALPHA || i == H_BETA ? "(K,)" : "(N,)")
                                           : (i == H_LAGS || i == H_MARKS ? "(N, T)" : "(N, K)"));
    return HG_OK;
}

static hg_status hk_types(const hg_op_def *op, const hg_meta *in, int off)
{
    hg_dtype dt = in[off + H_LDA].dtype;
    hg_status st = hg_c_check_float(op, "lda", dt);
    if (st) return st;
    for (int i = 0; i < H_NIN; i++) {
        const hg_meta *m = &in[off + i];
        if (!known(m)) continue;
        if (i == H_MARKS ? m->dtype != HG_DTYPE_I32 : m->dtype != dt)
            return hg_error(HG_ERR_TYPE, "%s: input %d has dtype %s, expected %s", op->name,
                            off + i, hg_dtype_name(m->dtype),
                            i == H_MARKS ? "int32 (marks)" : hg_dtype_name(dt));
    }
    return HG_OK;
}

static hg_status hk_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                          hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    hg_status st = hk_types(op, in, 0);
    if (st) return st;
    out[0].dtype = out[1].dtype = in[H_LDA].dtype;
    for (int i = 0; i < H_NIN; i++)
        if (!known(&in[i])) return HG_OK;
    int64_t n, k;
    if ((st = hk_check(op, in, &n, &k))) return st;
    out[0].ndim = 1, out[0].shape[0] = n;
    out[1].ndim = 2, out[1].shape[0] = n, out[1].shape[1] = k;
    return HG_OK;
}

typedef struct {
    int64_t n, k, t;
    const double *lda, *alpha, *beta, *state, *lags, *vlen, *maxt;
    const int32_t *marks;
} hk_in;

/* Marks in [0, K) and valid lengths in [0, T]: MXNet would index out of bounds otherwise. */
static hg_status hk_validate(const hg_op_def *op, const hk_in *h)
{
    for (int64_t i = 0; i < h->n; i++) {
        if (!(h->vlen[i] >= 0 && h->vlen[i] <= (double)h->t))
            return hg_error(HG_ERR_VALUE, "%s: valid_length[%lld] = %g is outside [0, %lld]",
                            op->name, (long long)i, h->vlen[i], (long long)h->t);
        for (int64_t j = 0; j < h->t && (double)j < h->vlen[i]; j++) {
            int32_t m = h->marks[i * h->t + j];
            if (m < 0 || m >= h->k)
                return hg_error(HG_ERR_INDEX, "%s: marks[%lld, %lld] = %d is outside [0, %lld)",
                                op->name, (long long)i, (long long)j, (int)m, (long long)h->k);
        }
    }
    return HG_OK;
}

/* Forward: ll (n) and the final states (n * k). Backward (g != NULL): the gradients of
 * sum_i g[i] * ll[i] for lda (n * k), alpha (k) and beta (k). last/phig: n * k scratch. */
#define HK_IMPL(SUF, T, EXP, LOG)                                                              \
    static void hk_##SUF(const hk_in *h, double *ll, double *sout, const double *g,            \
                         double *dmu, double *dal, double *dbe, double *last, double *phig)    \
    {                                                                                          \
        int64_t K = h->k;                                                                      \
        for (int64_t i = 0; i < h->n; i++) {                                                   \
            T acc = 0, t = 0;                                                                  \
            double *ls = last + i * K, *st = sout + i * K, *ps = phig + i * K;                 \
            for (int64_t m = 0; m < K; m++) ls[m] = 0, st[m] = h->state[i * K + m], ps[m] = 0; \
            for (int64_t j = 0; (double)j < h->vlen[i]; j++) {                                 \
                int32_t c = h->marks[i * h->t + j];                                            \
                T mu = (T)h->lda[i * K + c], al = (T)h->alpha[c], be = (T)h->beta[c];          \
                T s = (T)st[c], ds = (T)ps[c];                                                 \
                t += (T)h->lags[i * h->t + j];                                                 \
                T d = t - (T)ls[c], ed = EXP(-be * d);                                         \
                T lda = mu + al * be * s * ed;                                                 \
                if (!g) {                                                                      \
                    acc += LOG(lda) - (mu * d + al * s * ((T)1 - ed));                         \
                } else {                                                                       \
                    dmu[i * K + c] += (double)((T)1 / lda - d);                                \
                    dal[i * K + c] += (double)((be * s * ed) / lda - s * ((T)1 - ed));         \
                    dbe[i * K + c] += (double)(al * ed * (s * ((T)1 - be * d) + be * ds) / lda \
                                               - al * (ds * ((T)1 - ed) + s * d * ed));        \
                    ps[c] = (double)(ed * (-d * s + ds));                                      \
                }                                                                              \
                st[c] = (double)((T)1 + s * ed);                                               \
                ls[c] = (double)t;                                                             \
            }                                                                                  \
            for (int64_t m = 0; m < K; m++) { /* the compensator up to max_time */             \
                T al = (T)h->alpha[m], be = (T)h->beta[m], s = (T)st[m];                       \
                T d = (T)h->maxt[i] - (T)ls[m], ed = EXP(-be * d);                             \
                if (!g) {                                                                      \
                    acc -= (T)h->lda[i * K + m] * d + al * s * ((T)1 - ed);                    \
                    st[m] = (double)(ed * s);                                                  \
                } else {                                                                       \
                    T gi = (T)g[i];                                                            \
                    dmu[i * K + m] = (double)(gi * ((T)dmu[i * K + m] - d));                   \
                    dal[i * K + m] = (double)(gi * ((T)dal[i * K + m] - s * ((T)1 - ed)));     \
                    dbe[i * K + m] = (double)(gi * ((T)dbe[i * K + m] -                        \
                                                    al * ((T)ps[m] * ((T)1 - ed) + s * d * ed))); \
                }                                                                              \
            }                                                                                  \
            if (!g) ll[i] = (double)acc;                                                       \
        }                                                                                      \
    }
HK_IMPL(f, float, expf, logf)
HK_IMPL(d, double, exp, log)

typedef struct {
    hk_in h;
    double *v[H_NIN];
    int64_t sz[H_NIN];
} hk_loaded;

static hg_status hk_load(const hg_op_def *op, hg_tensor *const *in, hk_loaded *L)
{
    memset(L, 0, sizeof(*L));
    bool ok = true;
    for (int i = 0; i < H_NIN; i++) {
        if (i == H_MARKS) continue;
        L->sz[i] = in[i]->size;
        ok = (L->v[i] = hg_c_load(in[i])) && ok;
    }
    if (!ok) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    L->h = (hk_in){.n = in[H_LAGS]->shape[0],
                   .k = in[H_LDA]->shape[1],
                   .t = in[H_LAGS]->shape[1],
                   .lda = L->v[H_LDA],
                   .alpha = L->v[H_ALPHA],
                   .beta = L->v[H_BETA],
                   .state = L->v[H_STATE],
                   .lags = L->v[H_LAGS],
                   .vlen = L->v[H_VLEN],
                   .maxt = L->v[H_MAXT],
                   .marks = hg_data(in[H_MARKS])};
    return hk_validate(op, &L->h);
}

static void hk_unload(hk_loaded *L)
{
    for (int i = 0; i < H_NIN; i++) hg_c_free(L->v[i], L->sz[i]);
}

static hg_status hk_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                            hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    hk_loaded L;
    hg_status st = hk_load(op, in, &L);
    int64_t nk = in[H_LDA]->size;
    double *ll = hg_c_alloc(out[0]->size), *so = hg_c_alloc(nk), *last = hg_c_alloc(nk),
           *phig = hg_c_alloc(nk);
    if (!st && (!ll || !so || !last || !phig))
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    if (!st) {
        if (in[H_LDA]->dtype == HG_DTYPE_F64)
            hk_d(&L.h, ll, so, NULL, NULL, NULL, NULL, last, phig);
        else hk_f(&L.h, ll, so, NULL, NULL, NULL, NULL, last, phig);
        hg_c_store(out[0], ll);
        hg_c_store(out[1], so);
    }
    hk_unload(&L);
    hg_c_free(ll, out[0]->size);
    hg_c_free(so, nk);
    hg_c_free(last, nk);
    hg_c_free(phig, nk);
    return st;
}

/* _backward_contrib_hawkesll (MXNet: _contrib_backward_hawkesll)(ograd, lda, alpha, beta, state, lags, marks, valid_length,
 * max_time) -> (d lda, d alpha, d beta) */
static hg_status hk_bw_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)a;
    (void)nin;
    (void)nout;
    char s[HG_SHAPE_STR];
    hg_status st = hk_types(op, in, 1);
    if (st) return st;
    for (int i = 1; i <= H_NIN; i++)
        if (!known(&in[i])) return hg_error(HG_ERR_VALUE, "%s: input shapes unknown", op->name);
    int64_t n, k;
    if ((st = hk_check(op, in + 1, &n, &k))) return st;
    if (known(&in[0]) && (in[0].ndim != 1 || in[0].shape[0] != n))
        return hg_error(HG_ERR_VALUE, "%s: ograd must have shape (%lld,), got %s", op->name,
                        (long long)n, hg_shape_str(s, in[0].ndim, in[0].shape));
    for (int i = 0; i < 3; i++) out[i] = in[1 + i];
    return HG_OK;
}

static hg_status hk_backward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                             int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)a;
    (void)ctx;
    (void)nin;
    (void)nout;
    hk_loaded L;
    hg_status st = hk_load(op, in + 1, &L);
    int64_t nk = in[1 + H_LDA]->size, k = in[1 + H_LDA]->shape[1], n = k ? nk / k : 0;
    double *g = hg_c_load(in[0]), *dmu = hg_c_alloc(nk), *dal = hg_c_alloc(nk),
           *dbe = hg_c_alloc(nk), *so = hg_c_alloc(nk), *last = hg_c_alloc(nk),
           *phig = hg_c_alloc(nk), *ra = hg_c_alloc(k), *rb = hg_c_alloc(k);
    if (!st && (!g || !dmu || !dal || !dbe || !so || !last || !phig || !ra || !rb))
        st = hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    if (!st) {
        for (int64_t i = 0; i < nk; i++) dmu[i] = dal[i] = dbe[i] = 0;
        if (in[1]->dtype == HG_DTYPE_F64) hk_d(&L.h, NULL, so, g, dmu, dal, dbe, last, phig);
        else hk_f(&L.h, NULL, so, g, dmu, dal, dbe, last, phig);
        for (int64_t m = 0; m < k; m++) { /* alpha and beta are shared by the sequences */
            ra[m] = rb[m] = 0;
            for (int64_t i = 0; i < n; i++) ra[m] += dal[i * k + m], rb[m] += dbe[i * k + m];
        }
        hg_c_store(out[0], dmu);
        hg_c_store(out[1], ra);
        hg_c_store(out[2], rb);
    }
    hk_unload(&L);
    hg_c_free(g, in[0]->size);
    double *bufs[] = {dmu, dal, dbe, so, last, phig};
    for (int i = 0; i < 6; i++) hg_c_free(bufs[i], nk);
    hg_c_free(ra, k);
    hg_c_free(rb, k);
    return st;
}

/* MXNet's rule: the likelihood output's gradient for lda, alpha and beta; none for the state
 * output, the initial state or the data. */
static hg_status hk_grad(hg_grad_ctx *g)
{
    hg_sentry in[1 + H_NIN], d[3];
    in[0] = hg_g_ograd(g, 0);
    for (int i = 0; i < H_NIN; i++) in[1 + i] = hg_g_in(g, i);
    hg_g_opn(g, "_backward_contrib_hawkesll", 1 + H_NIN, in, NULL, 3, d);
    for (int i = 0; i < 3; i++) hg_g_set(g, i, d[i]);
    return hg_g_status(g);
}

#define HK_INPUTS "lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"

const hg_op_def hg_ops_contrib_hawkes[] = {
    {.name = "_contrib_hawkesll",
     .doc = "log likelihood (N,) of marked event sequences under a multivariate Hawkes process "
            "with exponential kernels, and the states (N, K) at max_time",
     .input_names = HG_NAMES(HK_INPUTS),
     .output_names = HG_NAMES("output", "out_state"),
     .num_inputs = H_NIN,
     .num_outputs = 2,
     .infer = hk_infer,
     .forward = hk_forward,
     .grad = hk_grad},
    {.name = "_backward_contrib_hawkesll",
     .doc = "hawkesll's gradient for lda, alpha and beta (of the likelihood output)",
     .input_names = HG_NAMES("ograd", HK_INPUTS),
     .num_inputs = 1 + H_NIN,
     .num_outputs = 3,
     .infer = hk_bw_infer,
     .forward = hk_backward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
