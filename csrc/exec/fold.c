/* BatchNorm folded into the convolution before it: in inference (or with use_global_stats)
 * BN(conv(x, W) + b) = conv(x, W * s) + (b - mean) * s + beta with s = gamma / sqrt(var + eps),
 * so the step scales the weights (small) instead of normalising the activations (large). The
 * step keeps the convolution's output buffer so training runs the two ops unchanged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "exec/plan_impl.h"
#include "kernels/cpu/pwdw.h"
#include "ops/conv_common.h"

#define ALIGN 64

static int attr(const hg_op_def *op, const char *name) { return hg_attr_index(op, name); }

static int in_entry(const hg_plan *p, int i, int k)
{
    return p->entry[p->in_idx[p->off[i] + k]] + p->nodes[i]->in[k].index;
}

bool hg_fold_match(const hg_plan *p, int bn, int conv)
{
    const hg_snode *b = p->nodes[bn], *c = p->nodes[conv];
    if (!b->op || !c->op || strcmp(b->op->name, "BatchNorm") != 0 ||
        strcmp(c->op->name, "Convolution") != 0 || c->nout != 1)
        return false;
    int e = p->entry[conv];
    if (in_entry(p, bn, 0) != e || p->uses[e] != 1 || p->fed_slot[e] >= 0) return false;
    if (p->meta[e].dtype != HG_DTYPE_F32 || p->meta[e].ndim < 3) return false;
    int ax = attr(b->op, "axis");
    if (ax < 0 || b->attrs->v[ax].i != 1) return false;
    /* The batch statistics outputs (output_mean_var) must be unread: folding computes none. */
    int eb = p->entry[bn];
    if (p->uses[eb + 1] || p->uses[eb + 2]) return false;
    int lay = attr(c->op, "layout");
    if (lay < 0) return false;
    const hg_attr_value *lv = &c->attrs->v[lay];
    if (!lv->is_none) { /* channel-first layouts only: NCW, NCHW, NCDHW */
        const char *name = c->op->attrs[lay].choices[lv->i];
        if (name[1] != 'C') return false;
    }
    for (int k = 1; k < 5; k++) /* gamma, beta, moving mean and var: float32 vectors */
        if (p->meta[in_entry(p, bn, k)].dtype != HG_DTYPE_F32) return false;
    return true;
}

static size_t round_up(size_t b) { return (b + ALIGN - 1) / ALIGN * ALIGN; }

static size_t conv_ws(const hg_plan *p, int conv)
{
    const hg_op_def *op = p->nodes[conv]->op;
    if (!op->workspace) return 0;
    hg_meta im[3];
    for (int k = 0; k < p->nodes[conv]->nin; k++) im[k] = p->meta[in_entry(p, conv, k)];
    /* the folded call always has a bias: its workspace needs do not depend on it */
    return round_up(op->workspace(p->nodes[conv]->attrs, p->nodes[conv]->nin, im));
}

/* Whether the folded step scales the convolution's output rather than its weights, where the
 * plan cannot keep folded weights (prep_weights): whichever has fewer elements. Weights folded
 * at every call cost, at batch 1 in a deep layer (7x7 outputs, 4608 weights per filter), far
 * more than the output. Either way the result is BN(conv(x, W) + b) up to rounding. */
static bool scales_output(int64_t out_size, int64_t weight_size) { return out_size < weight_size; }

/* Workspace: the convolution's, the scales and shifts (F each), then the scaled weights when
 * the step scales the weights. */
size_t hg_fold_workspace(const hg_plan *p, int conv)
{
    const hg_meta *w = &p->meta[in_entry(p, conv, 1)], *y = &p->meta[p->entry[conv]];
    int64_t wsize = hg_shape_size(w->ndim, w->shape);
    bool out = scales_output(hg_shape_size(y->ndim, y->shape), wsize);
    return conv_ws(p, conv) + 2 * round_up((size_t)w->shape[0] * 4) +
           (out ? 0 : round_up((size_t)wsize * 4));
}

/* rows [b, e) of dst = post(src * scale[row % F] + shift[row % F]) (shift NULL: 0), `per`
 * each. */
typedef struct {
    float *dst;
    const float *src, *scale, *shift;
    int64_t per, F;
    const hg_post *post;
} affine_job;

static void affine_rows(void *ctx, int64_t b, int64_t e)
{
    const affine_job *j = ctx;
    for (int64_t r = b; r < e; r++) {
        int64_t f = r % j->F;
        float s = j->scale ? j->scale[f] : 1.0f, t = j->shift ? j->shift[f] : 0.0f;
        const float *x = j->src + r * j->per;
        float *y = j->dst + r * j->per;
        if (j->scale)
            for (int64_t i = 0; i < j->per; i++) y[i] = x[i] * s + t;
        hg_post_f32(j->post, y, j->per);
    }
}

/* scale NULL: post only (dst == src). */
static void affine(float *dst, const float *src, const float *scale, const float *shift,
                   int64_t rows, int64_t per, int64_t F, const hg_post *post)
{
    affine_job j = {dst, src, scale, shift, per, F, post};
    int64_t grain = per ? (HG_GRAIN_ELEMWISE + per - 1) / per : rows;
    hg_parallel_for(rows, grain, affine_rows, &j);
}

/* sc[f] = gamma[f] / sqrt(var[f] + eps) (gamma 1 with fix_gamma). */
static void fold_scales(const float *gamma, const float *var, double eps, bool fix_gamma, int64_t F,
                        float *sc)
{
    for (int64_t f = 0; f < F; f++)
        sc[f] = (float)((fix_gamma ? 1.0 : gamma[f]) / sqrt((double)var[f] + eps));
}

/* The folded bias for weights scaled by sc: (b - mean) * sc + beta (b NULL: 0). */
static void fold_bias(const float *bias, const float *mean, const float *beta, const float *sc,
                      int64_t F, float *bf)
{
    for (int64_t f = 0; f < F; f++) bf[f] = ((bias ? bias[f] : 0.0f) - mean[f]) * sc[f] + beta[f];
}

/* prep: input 1 in the op's prepared form (prep_bytes long), or NULL. */
static hg_status run_node(hg_plan *p, int node, hg_tensor **in, int nin, hg_tensor **out, int nout,
                          const hg_attrs *a, void *ws, size_t ws_bytes, bool is_train,
                          const hg_post *post, const void *prep, size_t prep_bytes)
{
    hg_snode *nd = p->nodes[node];
    hg_exec_ctx ctx = {is_train, ws, ws_bytes, 0, {HG_POST_NONE, 0, 0}, prep, prep_bytes};
    if (post) ctx.post = *post;
    hg_status st = nd->op->forward(nd->op, a ? a : nd->attrs, &ctx, nin, in, nout, out);
    if (st != HG_OK) hg_error_prefix(st, "node '%s' (%s): ", nd->name, nd->op->name);
    return st;
}

/* ---- folded weights kept between runs ----------------------------------------------------
 * The folded weights W * s (s from gamma and the moving variance) are a pass over all of W. A
 * run keeps them per step, keyed on the write versions (core/tensor.h) and addresses of W,
 * gamma and the variance, and later runs take them while none of the three was written: the
 * pass then runs once, not at every call. The folded bias and the scales (F values each) are
 * still made at every call. A source that is untracked (version 0: memory whose writes are not
 * all seen) keeps nothing: the step folds at every call, as it always did. Runs hold the
 * plan's lock, which guards the kept copies. */
#define PREP_SRC 3

typedef struct hg_prep {
    uint64_t version[PREP_SRC];
    const void *addr[PREP_SRC];
    float *wf; /* the folded weights, `bytes` long (NULL: none kept) */
    size_t bytes;
    void *u; /* wf in the convolution's prepared form (core/op.h), ubytes long (NULL: none) */
    size_t ubytes;
    bool none; /* a plain step whose op prepares nothing for the plan's shapes */
} hg_prep;

void hg_fold_prep_free(hg_plan *p)
{
    for (int i = 0; p->prep && i < p->nsteps; i++) {
        hg_free(p->prep[i].wf, p->prep[i].bytes);
        hg_free(p->prep[i].u, p->prep[i].ubytes);
    }
    free(p->prep);
    p->prep = NULL;
}

size_t hg_plan_prep_bytes(const hg_plan *p, int s)
{
    return p->prep && s >= 0 && s < p->nsteps && p->prep[s].u ? p->prep[s].ubytes : 0;
}

/* Entry e's new folded weights in the convolution's prepared form (core/op.h; conv.c packs
 * them for its deep direct kernel), made here once instead of at every call. None where the op
 * has no use for one on this layer, or without memory for it: the call then takes the weights
 * as they are. */
/* e->u = node c's prepared form (ub bytes, > 0) of weights w, its memory reused when the size
 * is the same; false (none kept) without memory or when the op refuses. */
static bool make_prep(hg_prep *e, const hg_snode *c, int nin, const hg_meta *im, const void *w,
                      size_t ub)
{
    if (e->ubytes != ub) {
        hg_free(e->u, e->ubytes);
        e->ubytes = 0;
        if (!(e->u = hg_alloc(ub))) return false;
        e->ubytes = ub;
    }
    if (c->op->prep(c->attrs, nin, im, w, e->u, ub) == HG_OK) return true;
    hg_free(e->u, e->ubytes);
    e->u = NULL;
    e->ubytes = 0;
    return false;
}

static void prep_conv(hg_plan *p, const hg_pstep *s, hg_prep *e)
{
    const hg_snode *c = p->nodes[s->producer];
    size_t ub = 0;
    hg_meta im[3];
    if (c->op->prep_bytes && c->op->prep && c->nin <= 3) {
        for (int k = 0; k < c->nin; k++) im[k] = p->meta[in_entry(p, s->producer, k)];
        ub = c->op->prep_bytes(c->attrs, c->nin, im);
    }
    if (ub) {
        make_prep(e, c, c->nin, im, e->wf, ub);
        return;
    }
    hg_free(e->u, e->ubytes);
    e->u = NULL;
    e->ubytes = 0;
}

const void *hg_plan_prep(hg_plan *p, const hg_pstep *s, int node, hg_tensor *const *in, int nin,
                         size_t *bytes)
{
    const hg_snode *nd = p->nodes[node];
    *bytes = 0;
    if (!nd->op->prep_bytes || !nd->op->prep || nin < 2 || nin > 3) return NULL;
    /* weights the graph computes (a variable's only: those change at every call) */
    if (nd->nin != nin || nd->in[1].node->op) return NULL;
    if (!p->prep && !(p->prep = calloc((size_t)p->nsteps, sizeof *p->prep))) return NULL;
    hg_prep *e = &p->prep[s - p->steps];
    if (e->none) return NULL;
    const uint64_t version = hg_storage_version(in[1]->storage);
    const void *addr = hg_data(in[1]);
    if (version && e->u && e->version[0] == version && e->addr[0] == addr) {
        *bytes = e->ubytes; /* made for this plan's shapes: the forward checks the size */
        return e->u;
    }
    hg_meta im[3];
    for (int k = 0; k < nin; k++) im[k] = hg_meta_of(in[k]);
    size_t ub = nd->op->prep_bytes(nd->attrs, nin, im);
    if (!ub) { /* the shapes are the plan's: so for all its calls, not asked again */
        e->none = true;
        return NULL;
    }
    if (!version) return NULL; /* memory whose writes are not all seen */
    memset(e->version, 0, sizeof e->version); /* nothing valid until it is made */
    if (!make_prep(e, nd, nin, im, addr, ub)) return NULL;
    e->version[0] = version;
    e->addr[0] = addr;
    *bytes = ub;
    return e->u;
}

/* Step s's kept weights for these sources (w, gamma, var), scaled by sc now if they were not
 * kept or a source was written since; NULL when they cannot be kept (the caller folds into
 * its workspace). */
static float *prep_weights(hg_plan *p, const hg_pstep *s, const hg_tensor *const src[PREP_SRC],
                           const float *sc, int64_t F, int64_t per)
{
    size_t bytes = (size_t)(F * per) * sizeof(float);
    if (!bytes) return NULL;
    uint64_t version[PREP_SRC];
    const void *addr[PREP_SRC];
    /* the versions before the values: a write in between leaves an old version on new values,
     * which the next run's versions no longer match */
    for (int k = 0; k < PREP_SRC; k++) {
        if (!(version[k] = hg_storage_version(src[k]->storage))) return NULL;
        addr[k] = hg_data(src[k]);
    }
    if (!p->prep && !(p->prep = calloc((size_t)p->nsteps, sizeof *p->prep))) return NULL;
    hg_prep *e = &p->prep[s - p->steps];
    if (e->wf && e->bytes == bytes && !memcmp(e->version, version, sizeof version) &&
        !memcmp(e->addr, addr, sizeof addr))
        return e->wf;
    if (e->bytes != bytes) {
        hg_free(e->wf, e->bytes);
        e->bytes = 0;
        if (!(e->wf = hg_alloc(bytes))) return NULL;
        e->bytes = bytes;
    }
    memset(e->version, 0, sizeof e->version); /* nothing valid until the pass is done */
    affine(e->wf, hg_data(src[0]), sc, NULL, F, per, F, NULL);
    prep_conv(p, s, e);
    memcpy(e->version, version, sizeof version);
    memcpy(e->addr, addr, sizeof addr);
    return e->wf;
}

/* Step s's folded parameters: scales and bias into area, the weights kept by the plan
 * (prep_weights) or, where they cannot be kept and `room` says area has space for them, into
 * area after the bias. Returns the weights (NULL: not kept and no room) and sets *bias. */
static float *fold_params(hg_plan *p, const hg_pstep *s, hg_tensor **cur, char *area, bool room,
                          float **bias)
{
    const int *sin = p->sin + s->in_base;
    const hg_snode *b = p->nodes[s->node];
    const hg_tensor *w = cur[sin[1]];
    int64_t F = w->shape[0], per = F ? w->size / F : 0;
    float *sc = (float *)area, *bf = (float *)(area + round_up((size_t)F * 4));
    const float *cb = s->pnin == 3 ? hg_data(cur[sin[2]]) : NULL;
    const float *gamma = hg_data(cur[sin[s->pnin]]), *beta = hg_data(cur[sin[s->pnin + 1]]);
    const float *mean = hg_data(cur[sin[s->pnin + 2]]), *var = hg_data(cur[sin[s->pnin + 3]]);
    fold_scales(gamma, var, b->attrs->v[attr(b->op, "eps")].f,
                b->attrs->v[attr(b->op, "fix_gamma")].b, F, sc);
    fold_bias(cb, mean, beta, sc, F, bf);
    *bias = bf;
    const hg_tensor *src[PREP_SRC] = {w, cur[sin[s->pnin]], cur[sin[s->pnin + 3]]};
    float *wf = prep_weights(p, s, src, sc, F, per);
    if (wf || !room) return wf;
    wf = (float *)((char *)bf + round_up((size_t)F * 4));
    affine(wf, hg_data(w), sc, NULL, F, per, F, NULL);
    return wf;
}

/* Step s as its two ops: folded in inference, as they are in training with batch statistics.
 * ws: the step's workspace (hg_fold_workspace). */
static hg_status fold_one(hg_plan *p, const hg_pstep *s, hg_tensor **cur, bool is_train, char *ws)
{
    int conv = s->producer, bn = s->node;
    const hg_snode *b = p->nodes[bn], *c = p->nodes[conv];
    const int *sin = p->sin + s->in_base, *sout = p->sout + s->out_base;
    hg_tensor *cin[3], *bin[5], *bout[3];
    for (int k = 0; k < s->pnin; k++) cin[k] = cur[sin[k]];
    hg_tensor *conv_out = cur[sout[0]];
    bin[0] = conv_out;
    for (int k = 1; k < 5; k++) bin[k] = cur[sin[s->pnin + k - 1]];
    for (int k = 0; k < 3; k++) bout[k] = cur[sout[1 + k]];
    size_t cws = conv_ws(p, conv);
    bool global = b->attrs->v[attr(b->op, "use_global_stats")].b;
    const hg_post *post = &s->post;
    if (is_train && !global) { /* batch statistics: the two ops as they are, then the post */
        HG_TRY(
            run_node(p, conv, cin, s->pnin, &conv_out, 1, NULL, ws, cws, is_train, NULL, NULL, 0));
        HG_TRY(run_node(p, bn, bin, 5, bout, 3, NULL, NULL, 0, is_train, NULL, NULL, 0));
        if (post->kind != HG_POST_NONE) {
            hg_tensor *y = bout[0];
            int64_t rows = y->shape[0] * y->shape[1];
            affine(hg_data(y), hg_data(y), NULL, NULL, rows, rows ? y->size / rows : 0, 1, post);
        }
        return HG_OK;
    }
    const hg_tensor *w = cin[1];
    int64_t F = w->shape[0];
    hg_tensor *y = bout[0];
    float *bf, *wf = fold_params(p, s, cur, ws + cws, !scales_output(y->size, w->size), &bf);
    if (!wf) { /* y = conv(x, W) + b, then (y - mean) * s + beta */
        float *sc = (float *)(ws + cws), *sh = (float *)(ws + cws + round_up((size_t)F * 4));
        const float *beta = hg_data(bin[2]), *mean = hg_data(bin[3]);
        fold_scales(hg_data(bin[1]), hg_data(bin[4]), b->attrs->v[attr(b->op, "eps")].f,
                    b->attrs->v[attr(b->op, "fix_gamma")].b, F, sc);
        HG_TRY(run_node(p, conv, cin, s->pnin, &y, 1, NULL, ws, cws, is_train, NULL, NULL, 0));
        for (int64_t f = 0; f < F; f++) sh[f] = beta[f] - mean[f] * sc[f];
        float *yd = hg_data(y);
        int64_t rows = y->shape[0] * F;
        affine(yd, yd, sc, sh, rows, rows ? y->size / rows : 0, F, post);
        return HG_OK;
    }
    /* the folded weights and bias as tensors over their memory */
    hg_storage st_w = {0}, st_b = {0};
    atomic_init(&st_w.refcount, 1);
    atomic_init(&st_b.refcount, 1);
    st_w.data = wf;
    st_b.data = bf;
    hg_meta mw = hg_meta_of(w), mb = {1, HG_DTYPE_F32, {F}};
    hg_tensor *tw = NULL, *tb = NULL;
    hg_status st = hg_tensor_on_storage(&st_w, 0, &mw, &tw);
    if (st == HG_OK) st = hg_tensor_on_storage(&st_b, 0, &mb, &tb);
    hg_attrs a = *c->attrs;
    a.v[attr(c->op, "no_bias")].b = false;
    hg_tensor *fin[3] = {cin[0], tw, tb};
    /* the convolution's own form of the kept weights, made with them (prep_conv) */
    const hg_prep *e = p->prep ? &p->prep[s - p->steps] : NULL;
    const void *u = e && e->wf == wf ? e->u : NULL;
    if (st == HG_OK)
        st = run_node(p, conv, fin, 3, &bout[0], 1, &a, ws, cws, is_train, post, u,
                      u ? e->ubytes : 0);
    /* The headers go; the storages (this frame's, count back at 1) are never released. */
    hg_tensor_free(tw);
    hg_tensor_free(tb);
    return st;
}

/* ---- a pointwise fold and the depthwise fold after it, in one pass ---------------------------
 * MobileNetV2's expansion (1x1 convolution, BatchNorm, clip) and the depthwise layer that alone
 * reads it: in inference the depthwise step runs both (kernels/cpu/pwdw.h), and the pointwise
 * step runs nothing, its output never being made (lower.c, find_pairs, checks that nothing else
 * reads it). In training with batch statistics the two steps run as they are. */

/* Whether fold step s runs folded (inference, or use_global_stats). */
static bool folds_in(const hg_plan *p, const hg_pstep *s, bool is_train)
{
    const hg_snode *b = p->nodes[s->node];
    return !is_train || b->attrs->v[attr(b->op, "use_global_stats")].b;
}

/* A fold step's part of the pair's workspace: its own step's workspace (for the separate run
 * when the fused one finds no buffer), or its folded scales, bias and weights if more. */
static size_t region(const hg_plan *p, int conv)
{
    const hg_meta *w = &p->meta[in_entry(p, conv, 1)];
    size_t params = 2 * round_up((size_t)w->shape[0] * 4) +
                    round_up((size_t)hg_shape_size(w->ndim, w->shape) * 4);
    size_t own = hg_fold_workspace(p, conv);
    return own > params ? own : params;
}

/* Pairs fold the pointwise weights at every call: where the fold alone would scale the
 * output instead (fewer elements: a deep layer at batch 1, whose expanded tensor stays in
 * cache anyway), the two steps stay apart. */
bool hg_fold_pair_match(const hg_plan *p, const hg_pstep *a, const hg_pstep *b)
{
    hg_dw_geom dw;
    const hg_meta *w = &p->meta[in_entry(p, a->producer, 1)], *y = &p->meta[p->entry[a->producer]];
    if (scales_output(hg_shape_size(y->ndim, y->shape), hg_shape_size(w->ndim, w->shape)))
        return false;
    return a->fold && b->fold &&
           hg_conv_pwdw_geom(p->nodes[a->producer]->attrs, p->nodes[b->producer]->attrs,
                             &p->meta[in_entry(p, a->producer, 0)], &dw);
}

size_t hg_fold_pair_workspace(const hg_plan *p, const hg_pstep *a, const hg_pstep *b)
{
    return region(p, b->producer) + region(p, a->producer);
}

/* The pair (a, s) fused; false when pwdw found no buffer (the output then is partly written). */
static bool run_pair(hg_plan *p, const hg_pstep *a, const hg_pstep *s, hg_tensor **cur, char *ws)
{
    const hg_tensor *x = cur[p->sin[a->in_base]];
    hg_meta mx = hg_meta_of(x);
    hg_dw_geom dw;
    if (!hg_conv_pwdw_geom(p->nodes[a->producer]->attrs, p->nodes[s->producer]->attrs, &mx, &dw))
        return false;
    float *b1, *b2, *w1 = fold_params(p, a, cur, ws + region(p, s->producer), true, &b1);
    float *w2 = fold_params(p, s, cur, ws, true, &b2);
    const hg_tensor *wt = cur[p->sin[a->in_base + 1]];
    hg_tensor *y = cur[p->sout[s->out_base + 1]];
    return hg_pwdw_fwd_f32(mx.shape[0], mx.shape[1], wt->shape[0], &dw, hg_data(x), w1, b1,
                           &a->post, w2, b2, &s->post, hg_data(y));
}

hg_status hg_fold_run(hg_plan *p, const hg_pstep *s, hg_tensor **cur, bool is_train)
{
    char *ws = (char *)p->arena + s->ws_off;
    if (s->dw_step >= 0 && folds_in(p, s, is_train) && folds_in(p, &p->steps[s->dw_step], is_train))
        return HG_OK; /* the depthwise step makes this output's values where it reads them */
    if (s->pw_step >= 0) {
        const hg_pstep *a = &p->steps[s->pw_step];
        if (folds_in(p, a, is_train) && folds_in(p, s, is_train)) {
            if (run_pair(p, a, s, cur, ws)) return HG_OK;
            /* no buffer for the fused pass: the pointwise step's work, in this step's workspace */
            HG_TRY(fold_one(p, a, cur, is_train, ws + region(p, s->producer)));
        }
    }
    return fold_one(p, s, cur, is_train, ws);
}
