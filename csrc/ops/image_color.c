/* MXNet 1.9.1's colour augmentation ops (nd.image.random_brightness ... adjust_lighting) on one
 * (H, W, C) image, C in {1, 3}, RGB order. Arithmetic is MXNet's: float per pixel, integer
 * results clamped to the dtype's range and truncated. Where MXNet's kernel has a quirk that
 * changes numbers, it is kept and said so (saturation mixes in 0.114 * blue only); where MXNet
 * leaves memory unwritten (hue and lighting of a one-channel image) the image passes through.
 * The factors are drawn from the global generator (core/rng.c). No gradient flows: MXNet's
 * passes the output gradient through unscaled, which is not the derivative. */
#include <math.h>

#include "core/rng.h"
#include "ops/contrib_util.h"
#include "ops/ops_util.h"

static const float R2Y = 0.299f, G2Y = 0.587f, B2Y = 0.114f;

enum { MF_MIN, MF_MAX, MF_NATTRS };
static const hg_attr_spec k_factor_attrs[] = {
    [MF_MIN] = {"min_factor", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "minimum factor", NULL},
    [MF_MAX] = {"max_factor", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "maximum factor", NULL},
};
_Static_assert(HG_COUNT(k_factor_attrs) == MF_NATTRS, "k_factor_attrs must match its enum");

enum { CJ_B, CJ_C, CJ_S, CJ_H, CJ_NATTRS };
static const hg_attr_spec k_jitter_attrs[] = {
    [CJ_B] = {"brightness", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "how much to jitter brightness",
              NULL},
    [CJ_C] = {"contrast", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "how much to jitter contrast",
              NULL},
    [CJ_S] = {"saturation", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "how much to jitter saturation",
              NULL},
    [CJ_H] = {"hue", HG_ATTR_FLOAT, HG_ATTR_REQUIRED, NULL, "how much to jitter hue", NULL},
};
_Static_assert(HG_COUNT(k_jitter_attrs) == CJ_NATTRS, "k_jitter_attrs must match its enum");

static const hg_attr_spec k_adjl_attrs[] = {
    {"alpha", HG_ATTR_STRING, HG_ATTR_REQUIRED, NULL,
     "the lighting alphas for the R, G, B channels (3 numbers)", NULL},
};
static const hg_attr_spec k_randl_attrs[] = {
    {"alpha_std", HG_ATTR_FLOAT, 0, "0.05", "standard deviation of the lighting alphas", NULL},
};

/* An (H, W, C) image, C in {1, 3}, of a number dtype. */
static hg_status color_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)nin, (void)nout;
    char s[HG_SHAPE_STR];
    if (op->attrs == k_factor_attrs)
        for (int k = 0; k < MF_NATTRS; k++)
            if (!(a->v[k].f >= 0))
                return hg_error(HG_ERR_VALUE, "%s: %s must be >= 0, got %g", op->name,
                                op->attrs[k].name, a->v[k].f);
    if (op->attrs == k_adjl_attrs) {
        float al[4];
        int n = hg_ops_parse_floats(op, "alpha", a->v[0].s, al, 4, true);
        if (n < 0) return HG_ERR_VALUE; /* the message is set */
        if (n != 3)
            return hg_error(HG_ERR_VALUE, "%s: alpha must hold 3 numbers (R, G, B), got %d",
                            op->name, n);
    }
    out[0].dtype = in[0].dtype;
    if (in[0].dtype == HG_DTYPE_BOOL)
        return hg_error(HG_ERR_TYPE, "%s: data must be a number dtype, got bool", op->name);
    if (in[0].ndim < 0) return HG_OK;
    if (in[0].ndim != 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: input image must have shape (height, width, channels), got %s",
                        op->name, hg_shape_str(s, in[0].ndim, in[0].shape));
    if (in[0].shape[2] != 1 && in[0].shape[2] != 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: the last dimension (channels) must have 1 or 3 elements, got %s",
                        op->name, hg_shape_str(s, in[0].ndim, in[0].shape));
    out[0] = in[0];
    return HG_OK;
}

/* The value a float result becomes in dtype dt (MXNet's saturate_cast, kept as a double). */
static double saturate(double v, hg_dtype dt)
{
    switch (dt) {
    case HG_DTYPE_F64: return v;
    case HG_DTYPE_F32:
    case HG_DTYPE_F16: return (double)(float)v;
    case HG_DTYPE_U8: v = v < 0 ? 0 : v > 255 ? 255 : v; break;
    case HG_DTYPE_I8: v = v < -128 ? -128 : v > 127 ? 127 : v; break;
    case HG_DTYPE_I32:
        v = v < -2147483648.0 ? -2147483648.0 : v > 2147483647.0 ? 2147483647.0 : v;
        break;
    default: v = v < -9.2e18 ? -9.2e18 : v > 9.2e18 ? 9.2e18 : v; break;
    }
    return trunc(v);
}

typedef struct {
    double *v; /* the image as doubles, (npix, nch) */
    int64_t npix, nch;
    hg_dtype dt;
} img_t;

static void brightness(img_t *im, float alpha)
{
    for (int64_t i = 0; i < im->npix * im->nch; i++)
        im->v[i] = saturate((double)((float)im->v[i] * alpha), im->dt);
}

static void contrast(img_t *im, float alpha)
{
    float sum = 0.f;
    for (int64_t p = 0; p < im->npix; p++) {
        const double *x = im->v + p * im->nch;
        sum += im->nch == 3 ? R2Y * (float)x[0] + G2Y * (float)x[1] + B2Y * (float)x[2]
                            : (float)x[0];
    }
    float beta = (1.f - alpha) * (sum / (float)im->npix);
    for (int64_t i = 0; i < im->npix * im->nch; i++)
        im->v[i] = saturate((double)((float)im->v[i] * alpha + beta), im->dt);
}

static void saturation(img_t *im, float alpha)
{
    if (im->nch != 3) return; /* a grey image has no saturation (MXNet leaves it as is) */
    for (int64_t p = 0; p < im->npix; p++) {
        double *x = im->v + p * 3;
        /* MXNet's kernel overwrites its grey sum channel by channel: only blue remains. */
        float gray = B2Y * (float)x[2] * (1.f - alpha);
        for (int k = 0; k < 3; k++) x[k] = saturate((double)((float)x[k] * alpha + gray), im->dt);
    }
}

/* RGB (0..255) <-> hue (degrees), lightness and saturation (0..1), OpenCV's HLS formulas. */
static void rgb_to_hls(float r, float g, float b, float *h, float *l, float *s)
{
    r /= 255.f, g /= 255.f, b /= 255.f;
    float vmax = fmaxf(fmaxf(r, g), b), vmin = fminf(fminf(r, g), b), diff = vmax - vmin;
    *h = 0.f, *s = 0.f, *l = (vmax + vmin) * 0.5f;
    if (diff > 1.1920929e-07f) {
        *s = *l < 0.5f ? diff / (vmax + vmin) : diff / (2.f - vmax - vmin);
        diff = 60.f / diff;
        if (vmax == r) *h = (g - b) * diff;
        else if (vmax == g) *h = (b - r) * diff + 120.f;
        else *h = (r - g) * diff + 240.f;
        if (*h < 0.f) *h += 360.f;
    }
}

static void hls_to_rgb(float h, float l, float s, float *rgb)
{
    static const int sector_tab[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1},
                                         {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};
    float b = l, g = l, r = l;
    if (s != 0.f) {
        float p2 = l <= 0.5f ? l * (1.f + s) : l + s - l * s, p1 = 2.f * l - p2;
        h *= 1.f / 60.f;
        h = fmodf(h, 6.f);
        if (h < 0.f) h += 6.f;
        int sector = (int)h;
        if (sector > 5) sector = 5;
        h -= (float)sector;
        float tab[4] = {p2, p1, p1 + (p2 - p1) * (1.f - h), p1 + (p2 - p1) * h};
        b = tab[sector_tab[sector][0]];
        g = tab[sector_tab[sector][1]];
        r = tab[sector_tab[sector][2]];
    }
    rgb[0] = r * 255.f, rgb[1] = g * 255.f, rgb[2] = b * 255.f;
}

/* Rotates the hue by alpha turns (alpha * 360 degrees). */
static void hue(img_t *im, float alpha)
{
    if (im->nch != 3) return;
    for (int64_t p = 0; p < im->npix; p++) {
        double *x = im->v + p * 3;
        float h, l, s, rgb[3];
        rgb_to_hls((float)x[0], (float)x[1], (float)x[2], &h, &l, &s);
        hls_to_rgb(h + alpha * 360.f, l, s, rgb);
        for (int k = 0; k < 3; k++) x[k] = saturate((double)rgb[k], im->dt);
    }
}

/* AlexNet's PCA lighting: eigenvectors scaled by eigenvalues of ImageNet's RGB covariance. */
static void lighting(img_t *im, const float *alpha)
{
    static const float eig[3][3] = {{55.46f * -0.5675f, 4.794f * 0.7192f, 1.148f * 0.4009f},
                                    {55.46f * -0.5808f, 4.794f * -0.0045f, 1.148f * -0.8140f},
                                    {55.46f * -0.5836f, 4.794f * -0.6948f, 1.148f * 0.4203f}};
    if (im->nch != 3) return;
    float pca[3];
    for (int k = 0; k < 3; k++)
        pca[k] = eig[k][0] * alpha[0] + eig[k][1] * alpha[1] + eig[k][2] * alpha[2];
    for (int64_t p = 0; p < im->npix; p++)
        for (int k = 0; k < 3; k++) {
            double *x = im->v + p * 3 + k;
            *x = saturate((double)((float)*x + pca[k]), im->dt);
        }
}

static float uniform(double lo, double hi)
{
    double u;
    hg_rng_uniform(&u, 1);
    return (float)(lo + (hi - lo) * u);
}

enum { K_BRIGHT, K_CONTRAST, K_SAT, K_HUE, K_JITTER, K_ADJL, K_RANDL };

static hg_status color_run(const hg_op_def *op, const hg_attrs *a, const hg_tensor *x, hg_tensor *y,
                           int kind)
{
    img_t im = {hg_c_load(x), x->shape[0] * x->shape[1], x->shape[2], x->dtype};
    if (!im.v) return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    switch (kind) {
    case K_BRIGHT: brightness(&im, uniform(a->v[MF_MIN].f, a->v[MF_MAX].f)); break;
    case K_CONTRAST: contrast(&im, uniform(a->v[MF_MIN].f, a->v[MF_MAX].f)); break;
    case K_SAT: saturation(&im, uniform(a->v[MF_MIN].f, a->v[MF_MAX].f)); break;
    case K_HUE: hue(&im, uniform(a->v[MF_MIN].f, a->v[MF_MAX].f)); break;
    case K_JITTER: {
        /* The four adjustments in a random order (Fisher-Yates), each with its own factor. */
        int order[4] = {0, 1, 2, 3};
        for (int i = 3; i > 0; i--) {
            double u;
            hg_rng_uniform(&u, 1);
            int j = (int)(u * (i + 1)), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int i = 0; i < 4; i++) {
            double amount = a->v[order[i]].f;
            if (!(amount > 0)) continue;
            if (order[i] == CJ_H) hue(&im, uniform(-amount, amount));
            else {
                float f = 1.f + uniform(-amount, amount);
                if (order[i] == CJ_B) brightness(&im, f);
                else if (order[i] == CJ_C) contrast(&im, f);
                else saturation(&im, f);
            }
        }
        break;
    }
    case K_ADJL: {
        float al[4];
        hg_ops_parse_floats(op, "alpha", a->v[0].s, al, 4, true); /* checked by infer */
        lighting(&im, al);
        break;
    }
    default: {
        double z[3];
        hg_rng_normal(z, 3);
        float al[3];
        for (int k = 0; k < 3; k++) al[k] = (float)(z[k] * a->v[0].f);
        lighting(&im, al);
        break;
    }
    }
    hg_c_store(y, im.v);
    hg_c_free(im.v, x->size);
    return HG_OK;
}

#define COLOR_FWD(NAME, KIND)                                                                   \
    static hg_status NAME(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,       \
                          int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)       \
    {                                                                                           \
        (void)ctx, (void)nin, (void)nout;                                                       \
        return color_run(op, a, in[0], out[0], KIND);                                           \
    }
COLOR_FWD(bright_fwd, K_BRIGHT)
COLOR_FWD(contrast_fwd, K_CONTRAST)
COLOR_FWD(sat_fwd, K_SAT)
COLOR_FWD(hue_fwd, K_HUE)
COLOR_FWD(jitter_fwd, K_JITTER)
COLOR_FWD(adjl_fwd, K_ADJL)
COLOR_FWD(randl_fwd, K_RANDL)

#define COLOR_DEF(NAME, DOC, ATTRS, NATTRS, FWD, FLAGS)                                         \
    {.name = NAME, .doc = DOC, .input_names = HG_NAMES("data"), .attrs = ATTRS,                 \
     .num_attrs = NATTRS, .num_inputs = 1, .num_outputs = 1, .infer = color_infer,             \
     .forward = FWD, .flags = HG_OP_NO_GRAD | (FLAGS)}

const hg_op_def hg_ops_image_color[] = {
    COLOR_DEF("_image_random_brightness",
              "x * alpha, alpha uniform in [min_factor, max_factor), of an (H, W, C) image",
              k_factor_attrs, MF_NATTRS, bright_fwd, HG_OP_RANDOM),
    COLOR_DEF("_image_random_contrast",
              "x * alpha + (1 - alpha) * mean grey of an (H, W, C) image, alpha uniform in "
              "[min_factor, max_factor)",
              k_factor_attrs, MF_NATTRS, contrast_fwd, HG_OP_RANDOM),
    COLOR_DEF("_image_random_saturation",
              "x * alpha + (1 - alpha) * 0.114 * blue (MXNet's grey), alpha uniform in "
              "[min_factor, max_factor)",
              k_factor_attrs, MF_NATTRS, sat_fwd, HG_OP_RANDOM),
    COLOR_DEF("_image_random_hue",
              "the hue of an RGB (H, W, C) image rotated by alpha * 360 degrees, alpha uniform "
              "in [min_factor, max_factor)",
              k_factor_attrs, MF_NATTRS, hue_fwd, HG_OP_RANDOM),
    COLOR_DEF("_image_random_color_jitter",
              "brightness, contrast, saturation (1 + uniform(-v, v)) and hue (uniform(-v, v)) "
              "adjustments in a random order; a value <= 0 skips its adjustment",
              k_jitter_attrs, CJ_NATTRS, jitter_fwd, HG_OP_RANDOM),
    COLOR_DEF("_image_adjust_lighting",
              "AlexNet-style PCA lighting noise with the given R, G, B alphas", k_adjl_attrs, 1,
              adjl_fwd, 0),
    COLOR_DEF("_image_random_lighting",
              "adjust_lighting with alphas drawn from normal(0, alpha_std)", k_randl_attrs, 1,
              randl_fwd, HG_OP_RANDOM),
    {.name = NULL},
};
