/* MXNet 1.9.1's geometric image ops (nd.image / sym.image) on (H, W, C) images, channels last:
 * flip_left_right, flip_top_bottom and their random forms (3-D only, as in MXNet), crop and
 * resize (3-D or a 4-D batch). Flips and crop move elements of any dtype; resize runs
 * OpenCV's arithmetic (nearest, bilinear, bicubic, area, Lanczos) (kernels/cpu/image_resize.c) for uint8, float32 and float64. */
#include <string.h>

#include "core/rng.h"
#include "kernels/cpu/image_resize.h"
#include "ops/ops_util.h"

static bool known(const hg_meta *m) { return m->ndim >= 0; }

/* MXNet's check for the flips: an (H, W, C) image with C in {1, 3}. */
static hg_status hwc3_check(const hg_op_def *op, const hg_meta *m)
{
    char s[HG_SHAPE_STR];
    if (m->ndim != 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: input image must have shape (height, width, channels), got %s",
                        op->name, hg_shape_str(s, m->ndim, m->shape));
    if (m->shape[2] != 1 && m->shape[2] != 3)
        return hg_error(HG_ERR_VALUE,
                        "%s: the last dimension (channels) must have 1 or 3 elements, got %s",
                        op->name, hg_shape_str(s, m->ndim, m->shape));
    return HG_OK;
}

static hg_status flip_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)a;
    (void)nin;
    out[0].dtype = in[0].dtype;
    if (nout > 1) { /* the random flips' hidden flag: 1 when the image was flipped */
        out[1].dtype = HG_DTYPE_F32;
        out[1].ndim = 1;
        out[1].shape[0] = 1;
    }
    if (!known(&in[0])) return HG_OK;
    HG_TRY(hwc3_check(op, &in[0]));
    out[0] = in[0];
    return HG_OK;
}

/* Reverses axis 0 (top_bottom) or axis 1 (left_right) of an (H, W, C) tensor, or copies. */
static void flip_hwc(const hg_tensor *x, hg_tensor *y, bool left_right, bool flip)
{
    int64_t h = x->shape[0], w = x->shape[1];
    size_t pix = hg_dtype_size(x->dtype) * (size_t)x->shape[2], row = pix * (size_t)w;
    const char *s = hg_data(x);
    char *d = hg_data(y);
    if (!flip) {
        if (d != s) memmove(d, s, row * (size_t)h);
        return;
    }
    for (int64_t i = 0; i < h; i++) {
        if (!left_right) {
            memcpy(d + row * (size_t)i, s + row * (size_t)(h - 1 - i), row);
            continue;
        }
        const char *sr = s + row * (size_t)i;
        char *dr = d + row * (size_t)i;
        for (int64_t j = 0; j < w; j++)
            memcpy(dr + pix * (size_t)j, sr + pix * (size_t)(w - 1 - j), pix);
    }
}

static hg_status flip_lr_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)a, (void)ctx, (void)nin, (void)nout;
    flip_hwc(in[0], out[0], true, true);
    return HG_OK;
}

static hg_status flip_tb_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                 int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)a, (void)ctx, (void)nin, (void)nout;
    flip_hwc(in[0], out[0], false, true);
    return HG_OK;
}

/* A flip is its own inverse: the gradient is the flipped output gradient. */
static hg_status flip_lr_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_image_flip_left_right", HG_GIN(hg_g_ograd(g, 0)), NULL));
    return hg_g_status(g);
}

static hg_status flip_tb_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0, hg_g_op(g, "_image_flip_top_bottom", HG_GIN(hg_g_ograd(g, 0)), NULL));
    return hg_g_status(g);
}

/* One draw for the image, p = 1/2; the hidden flag output lets the gradient flip the same way. */
static hg_status random_flip(hg_tensor *const *in, hg_tensor *const *out, bool left_right)
{
    double u;
    hg_rng_uniform(&u, 1);
    bool flip = u < 0.5;
    flip_hwc(in[0], out[0], left_right, flip);
    HG_DATA(out[1], float)[0] = flip ? 1.f : 0.f;
    return HG_OK;
}

static hg_status rflip_lr_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)a, (void)ctx, (void)nin, (void)nout;
    return random_flip(in, out, true);
}

static hg_status rflip_tb_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)a, (void)ctx, (void)nin, (void)nout;
    return random_flip(in, out, false);
}

/* Backward of a random flip: inputs (ograd, flag); flips ograd when the forward did. */
static hg_status bflip_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)op, (void)a, (void)nin, (void)nout;
    out[0] = in[0];
    return HG_OK;
}

static hg_status bflip_lr_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)a, (void)ctx, (void)nin, (void)nout;
    flip_hwc(in[0], out[0], true, HG_DATA(in[1], float)[0] != 0.f);
    return HG_OK;
}

static hg_status bflip_tb_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                  int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)a, (void)ctx, (void)nin, (void)nout;
    flip_hwc(in[0], out[0], false, HG_DATA(in[1], float)[0] != 0.f);
    return HG_OK;
}

static hg_status rflip_lr_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0,
             hg_g_op(g, "_backward_image_random_flip_left_right",
                     HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 1)), NULL));
    return hg_g_status(g);
}

static hg_status rflip_tb_grad(hg_grad_ctx *g)
{
    hg_g_set(g, 0,
             hg_g_op(g, "_backward_image_random_flip_top_bottom",
                     HG_GIN(hg_g_ograd(g, 0), hg_g_out(g, 1)), NULL));
    return hg_g_status(g);
}

/* ---- crop --------------------------------------------------------------------------------- */

enum { CR_X, CR_Y, CR_W, CR_H, CR_NATTRS };
static const hg_attr_spec k_crop_attrs[] = {
    [CR_X] = {"x", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "left boundary of the cropping area", NULL},
    [CR_Y] = {"y", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "top boundary of the cropping area", NULL},
    [CR_W] = {"width", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "width of the cropping area", NULL},
    [CR_H] = {"height", HG_ATTR_INT, HG_ATTR_REQUIRED, NULL, "height of the cropping area", NULL},
};
_Static_assert(HG_COUNT(k_crop_attrs) == CR_NATTRS, "k_crop_attrs must match its enum");

/* (H, W, C) or (N, H, W, C) images: both ops below take either. */
static hg_status hwc_check(const hg_op_def *op, const hg_meta *m)
{
    char s[HG_SHAPE_STR];
    if (m->ndim != 3 && m->ndim != 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: input must have shape (height, width, channels) or (N, height, "
                        "width, channels), got %s",
                        op->name, hg_shape_str(s, m->ndim, m->shape));
    return HG_OK;
}

static hg_status crop_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                            hg_meta *out)
{
    (void)nin, (void)nout;
    out[0].dtype = in[0].dtype;
    if (!known(&in[0])) return HG_OK;
    HG_TRY(hwc_check(op, &in[0]));
    int nd = in[0].ndim;
    int64_t h = in[0].shape[nd - 3], w = in[0].shape[nd - 2];
    int64_t x = a->v[CR_X].i, y = a->v[CR_Y].i, cw = a->v[CR_W].i, ch = a->v[CR_H].i;
    if (cw <= 0 || ch <= 0)
        return hg_error(HG_ERR_VALUE, "%s: width and height must be positive, got %lld and %lld",
                        op->name, (long long)cw, (long long)ch);
    if (x < 0 || y < 0 || x > w - cw || y > h - ch)
        return hg_error(HG_ERR_VALUE,
                        "%s: the area x=%lld, y=%lld, width=%lld, height=%lld exceeds the image "
                        "(width %lld, height %lld)",
                        op->name, (long long)x, (long long)y, (long long)cw, (long long)ch,
                        (long long)w, (long long)h);
    out[0] = in[0];
    out[0].shape[nd - 3] = ch;
    out[0].shape[nd - 2] = cw;
    return HG_OK;
}

/* Copies the crop window between an image and its crop: into the crop (forward), or into a
 * zeroed image-shaped tensor (backward: the gradient of a crop is the ograd pasted back). */
static void crop_copy(const hg_attrs *a, hg_tensor *img, hg_tensor *crop, bool paste)
{
    int nd = img->ndim;
    int64_t n = nd == 4 ? img->shape[0] : 1, h = img->shape[nd - 3], w = img->shape[nd - 2];
    int64_t x = a->v[CR_X].i, y = a->v[CR_Y].i, cw = a->v[CR_W].i, ch = a->v[CR_H].i;
    size_t pix = hg_dtype_size(img->dtype) * (size_t)img->shape[nd - 1];
    char *ip = hg_data(img), *cp = hg_data(crop);
    if (paste) memset(ip, 0, pix * (size_t)(n * h * w));
    for (int64_t b = 0; b < n; b++)
        for (int64_t i = 0; i < ch; i++) {
            char *ir = ip + pix * (size_t)((b * h + y + i) * w + x);
            char *cr = cp + pix * (size_t)((b * ch + i) * cw);
            if (paste) memcpy(ir, cr, pix * (size_t)cw);
            else memcpy(cr, ir, pix * (size_t)cw);
        }
}

static hg_status crop_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                              int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)ctx, (void)nin, (void)nout;
    crop_copy(a, in[0], out[0], false);
    return HG_OK;
}

/* Inputs (ograd, data): data gives the shape of the result. */
static hg_status bcrop_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in, int nout,
                             hg_meta *out)
{
    (void)op, (void)a, (void)nin, (void)nout;
    out[0] = in[1];
    out[0].dtype = in[0].dtype;
    return HG_OK;
}

static hg_status bcrop_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                               int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)op, (void)ctx, (void)nin, (void)nout;
    crop_copy(a, out[0], in[0], true);
    return HG_OK;
}

static hg_status crop_grad(hg_grad_ctx *g)
{
    hg_sentry dx;
    hg_g_op_fwd_attrs(g, "_backward_image_crop", HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL, 1,
                      &dx);
    hg_g_set(g, 0, dx);
    return hg_g_status(g);
}

/* ---- resize ------------------------------------------------------------------------------- */

enum { RS_SIZE, RS_KEEP, RS_INTERP, RS_NATTRS };
static const hg_attr_spec k_resize_attrs[] = {
    [RS_SIZE] = {"size", HG_ATTR_TUPLE, 0, "()", "(width, height), or (size,)", NULL},
    [RS_KEEP] = {"keep_ratio", HG_ATTR_BOOL, 0, "False",
                 "with one size: resize the shorter edge to it, keeping the aspect ratio", NULL},
    [RS_INTERP] = {"interp", HG_ATTR_INT, 0, "1",
                   "OpenCV's code: 0 nearest, 1 bilinear, 2 bicubic, 3 pixel area, 4 Lanczos",
                   NULL},
};
_Static_assert(HG_COUNT(k_resize_attrs) == RS_NATTRS, "k_resize_attrs must match its enum");

static hg_status resize_infer(const hg_op_def *op, const hg_attrs *a, int nin, hg_meta *in,
                              int nout, hg_meta *out)
{
    (void)nin, (void)nout;
    const hg_tuple *sz = &a->v[RS_SIZE].t;
    if (sz->n != 1 && sz->n != 2)
        return hg_error(HG_ERR_VALUE, "%s: size must be (width, height) or (size,), got %d values",
                        op->name, sz->n);
    for (int i = 0; i < sz->n; i++)
        if (sz->v[i] <= 0)
            return hg_error(HG_ERR_VALUE, "%s: size must be positive, got %lld", op->name,
                            (long long)sz->v[i]);
    int64_t interp = a->v[RS_INTERP].i;
    if (interp < 0 || interp > 4)
        return hg_error(HG_ERR_VALUE,
                        "%s: interp must be one of OpenCV's codes 0 (nearest), 1 (bilinear), 2 "
                        "(bicubic), 3 (area) and 4 (Lanczos), got %lld",
                        op->name, (long long)interp);
    hg_dtype dt = in[0].dtype;
    out[0].dtype = dt;
    if (dt != HG_DTYPE_U8 && dt != HG_DTYPE_F32 && dt != HG_DTYPE_F64)
        return hg_error(HG_ERR_TYPE, "%s: data must be uint8, float32 or float64, got %s", op->name,
                        hg_dtype_name(dt));
    if (!known(&in[0])) return HG_OK;
    HG_TRY(hwc_check(op, &in[0]));
    int nd = in[0].ndim;
    int64_t h = in[0].shape[nd - 3], w = in[0].shape[nd - 2], ow, oh;
    if (sz->n == 2) ow = sz->v[0], oh = sz->v[1];
    else if (!a->v[RS_KEEP].b) ow = oh = sz->v[0];
    else if (h > w) ow = sz->v[0], oh = h * sz->v[0] / w;
    else oh = sz->v[0], ow = w > 0 && h > 0 ? w * sz->v[0] / h : 0;
    if (h <= 0 || w <= 0 || ow <= 0 || oh <= 0)
        return hg_error(HG_ERR_VALUE,
                        "%s: cannot resize an image of height %lld, width %lld "
                        "to height %lld, width %lld",
                        op->name, (long long)h, (long long)w, (long long)oh, (long long)ow);
    out[0] = in[0];
    out[0].shape[nd - 3] = oh;
    out[0].shape[nd - 2] = ow;
    return HG_OK;
}

static hg_status resize_forward(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                                int nin, hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    (void)ctx, (void)nin, (void)nout;
    const hg_tensor *x = in[0];
    hg_tensor *y = out[0];
    int nd = x->ndim;
    int64_t n = nd == 4 ? x->shape[0] : 1, c = x->shape[nd - 1];
    int64_t sh = x->shape[nd - 3], sw = x->shape[nd - 2], dh = y->shape[nd - 3],
            dw = y->shape[nd - 2];
    hg_img_elem el = x->dtype == HG_DTYPE_U8    ? HG_IMG_U8
                     : x->dtype == HG_DTYPE_F32 ? HG_IMG_F32
                                                : HG_IMG_F64;
    size_t esz = hg_dtype_size(x->dtype);
    const char *s = hg_data(x);
    char *d = hg_data(y);
    for (int64_t b = 0; b < n && c > 0; b++)
        if (hg_image_resize_hwc(el, (hg_img_interp)a->v[RS_INTERP].i,
                                s + esz * (size_t)(b * sh * sw * c), sh, sw, c,
                                d + esz * (size_t)(b * dh * dw * c), dh, dw))
            return hg_error(HG_ERR_MEMORY, "%s: out of memory", op->name);
    return HG_OK;
}

#define FLIP_DEF(NAME, DOC, FWD, GRAD)                                                          \
    {.name = NAME, .doc = DOC, .input_names = HG_NAMES("data"), .num_inputs = 1,               \
     .num_outputs = 1, .infer = flip_infer, .forward = FWD, .grad = GRAD}
#define RFLIP_DEF(NAME, DOC, FWD, GRAD)                                                         \
    {.name = NAME, .doc = DOC, .input_names = HG_NAMES("data"),                                \
     .output_names = HG_NAMES("output", "flipped"), .num_inputs = 1, .num_outputs = 2,         \
     .num_visible_outputs = 1, .flags = HG_OP_RANDOM, .infer = flip_infer,   \
     .forward = FWD, .grad = GRAD}
#define BFLIP_DEF(NAME, FWD)                                                                    \
    {.name = NAME, .doc = "a random flip's gradient: ograd flipped as the forward flipped",    \
     .input_names = HG_NAMES("ograd", "flag"), .num_inputs = 2, .num_outputs = 1,              \
     .infer = bflip_infer, .forward = FWD}

const hg_op_def hg_ops_image_geom[] = {
    FLIP_DEF("_image_flip_left_right", "reverses the width axis of an (H, W, C) image",
             flip_lr_forward, flip_lr_grad),
    FLIP_DEF("_image_flip_top_bottom", "reverses the height axis of an (H, W, C) image",
             flip_tb_forward, flip_tb_grad),
    RFLIP_DEF("_image_random_flip_left_right",
              "flip_left_right with probability 1/2 (one draw for the image)", rflip_lr_forward,
              rflip_lr_grad),
    RFLIP_DEF("_image_random_flip_top_bottom",
              "flip_top_bottom with probability 1/2 (one draw for the image)", rflip_tb_forward,
              rflip_tb_grad),
    BFLIP_DEF("_backward_image_random_flip_left_right", bflip_lr_forward),
    BFLIP_DEF("_backward_image_random_flip_top_bottom", bflip_tb_forward),
    {.name = "_image_crop",
     .doc = "the (height, width) window at (y, x) of an (H, W, C) or (N, H, W, C) image",
     .input_names = HG_NAMES("data"),
     .attrs = k_crop_attrs,
     .num_attrs = CR_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = crop_infer,
     .forward = crop_forward,
     .grad = crop_grad},
    {.name = "_backward_image_crop",
     .doc = "crop's gradient: ograd pasted into zeros shaped as the image",
     .input_names = HG_NAMES("ograd", "data"),
     .attrs = k_crop_attrs,
     .num_attrs = CR_NATTRS,
     .num_inputs = 2,
     .num_outputs = 1,
     .infer = bcrop_infer,
     .forward = bcrop_forward},
    {.name = "_image_resize",
     .doc = "an (H, W, C) or (N, H, W, C) image resized to size with OpenCV's arithmetic "
            "(uint8, float32, float64; no gradient, as in MXNet)",
     .input_names = HG_NAMES("data"),
     .attrs = k_resize_attrs,
     .num_attrs = RS_NATTRS,
     .num_inputs = 1,
     .num_outputs = 1,
     .infer = resize_infer,
     .forward = resize_forward,
     .flags = HG_OP_NO_GRAD},
    {.name = NULL},
};
