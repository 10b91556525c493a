/* An activation a kernel applies to its own output while the output is still in cache (a
 * "post-op"): the plan hands it to a convolution whose result only a ReLU or a clip reads
 * (exec/lower.c, find_posts), which then never runs as a pass of its own.
 *
 * The formulas are the element-wise ops' own, so a fused result equals the unfused one bit for
 * bit: relu keeps NaN and turns -0 into +0 (ops/ew_list.h), clip keeps NaN and tests the upper
 * bound first (ops/indexing.c). Kernels that cannot apply it in place of their output writes
 * call hg_post_f32 / hg_post_f64 on the finished range. */
#ifndef HG_CORE_POST_H
#define HG_CORE_POST_H

#include <stdint.h>

enum {
    HG_POST_NONE = 0, /* the zero of a hg_post: no activation */
    HG_POST_RELU = 1, /* Activation(act_type='relu') and relu */
    HG_POST_CLIP = 2, /* clip(a_min = lo, a_max = hi) */
};

typedef struct hg_post {
    int kind;
    float lo, hi; /* HG_POST_CLIP's bounds, as float32 (the clip of a float32 value) */
} hg_post;

/* y[0..n) = post(y[0..n)); nothing when po is NULL or its kind HG_POST_NONE. */
static inline void hg_post_f32(const hg_post *po, float *y, int64_t n)
{
    if (!po || po->kind == HG_POST_NONE) return;
    if (po->kind == HG_POST_RELU) {
        for (int64_t i = 0; i < n; i++) {
            float v = y[i];
            y[i] = (v > 0 || v != v) ? v : 0;
        }
        return;
    }
    const float lo = po->lo, hi = po->hi;
    for (int64_t i = 0; i < n; i++) {
        float v = y[i];
        y[i] = v > hi ? hi : (v < lo ? lo : v);
    }
}

static inline void hg_post_f64(const hg_post *po, double *y, int64_t n)
{
    if (!po || po->kind == HG_POST_NONE) return;
    if (po->kind == HG_POST_RELU) {
        for (int64_t i = 0; i < n; i++) {
            double v = y[i];
            y[i] = (v > 0 || v != v) ? v : 0;
        }
        return;
    }
    const double lo = po->lo, hi = po->hi;
    for (int64_t i = 0; i < n; i++) {
        double v = y[i];
        y[i] = v > hi ? hi : (v < lo ? lo : v);
    }
}

#endif
