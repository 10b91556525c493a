/* What Convolution (conv.c) and Deconvolution (deconv.c) share: the layout and cuDNN choices,
 * the shape-free checks of their kernel/stride/dilate/pad/... attributes (each op passes the
 * schema positions of its attributes: their orders differ), the normalised geometry, and one
 * backward (hg_conv_bw_*) for both.
 *
 * The backward is Convolution's, y = W . im2col(x) per image and group, with any of
 *     dx  = col2im(W^T . dy)          (Convolution's data gradient)
 *     y   = W . im2col(x)             (the forward itself, no bias: Deconvolution's data gradient)
 *     dW  = sum over images of dy . im2col(x)^T
 *     db  = sums of dy, or of x, per channel
 * Deconvolution's forward is Convolution's data gradient, so its backward is this one with the
 * roles swapped: x is its output gradient, dy its data (deconv.c, bw_geom). */
#ifndef HG_OPS_CONV_COMMON_H
#define HG_OPS_CONV_COMMON_H

#include "core/op.h"
#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/im2col.h"

enum { HG_LAYOUT_NCW, HG_LAYOUT_NCHW, HG_LAYOUT_NCDHW, HG_LAYOUT_NHWC, HG_LAYOUT_NDHWC };

extern const char *const hg_conv_tune_choices[];
extern const char *const hg_conv_layout_choices[];

typedef struct hg_conv_attr_index {
    const char *op;
    int kernel, num_filter, num_group, layout;
    int ntuples;            /* tuple attributes checked against the kernel's length */
    int tuples[5];          /* their schema positions */
    const char *names[5];   /* their names */
    bool positive[5];       /* entries >= 1 (stride, dilate) rather than >= 0 */
} hg_conv_attr_index;

/* Entry i of tuple attribute idx, or def when the tuple is empty ("()" means the default). */
static inline int64_t hg_conv_tuple_at(const hg_attrs *a, int idx, int i, int64_t def)
{
    return a->v[idx].t.n == 0 ? def : a->v[idx].t.v[i];
}

/* Checks: 1-3 spatial dims, tuple lengths and signs, num_filter/num_group, a channel-first
 * layout matching the kernel. Messages start with ix->op. */
hg_status hg_conv_check_attrs(const hg_attrs *a, const hg_conv_attr_index *ix);

/* Channel-last layouts (NHWC, NDHWC): MXNet 1.9.1 infers their shapes (data (N, *spatial, C),
 * Convolution's weight (F, *kernel, C/g), Deconvolution's (C, *kernel, F/g), output
 * (N, *spatial, F)) but its CPU build runs neither op on them. hg_conv_infer_layout runs the
 * channel-first rule `cf` on the metas moved to channel-first and moves the results back;
 * hg_conv_refuse_layout is the forward's refusal (HG_OK for channel-first layouts). */
static inline bool hg_conv_channel_last(const hg_attrs *a, int layout)
{
    return !a->v[layout].is_none &&
           (a->v[layout].i == HG_LAYOUT_NHWC || a->v[layout].i == HG_LAYOUT_NDHWC);
}
typedef hg_status (*hg_conv_infer_fn)(const hg_op_def *, const hg_attrs *, int, hg_meta *, int,
                                      hg_meta *);
hg_status hg_conv_infer_layout(const hg_op_def *op, const hg_attrs *a, int layout, int nin,
                               hg_meta *in, int nout, hg_meta *out, hg_conv_infer_fn cf);
hg_status hg_conv_refuse_layout(const hg_op_def *op, const hg_attrs *a, int layout);

/* The shape rule of _backward_Convolution / _backward_Deconvolution (ograd, data, weight) ->
 * (data grad, weight grad[, bias grad]): the forward's rule `fwd` run on (data, weight[, bias])
 * must give ograd's shape and dtype; the gradients take their inputs' metas. */
hg_status hg_conv_bw_infer(const hg_op_def *op, const hg_attrs *a, bool has_bias, hg_meta *in,
                           int nout, hg_meta *out,
                           hg_status (*fwd)(const hg_op_def *, const hg_attrs *, int, hg_meta *,
                                            int, hg_meta *));

/* A convolution's geometry normalised to 3 spatial dims (index 0 = depth, 2 = width): missing
 * leading dims have size 1, kernel 1, stride 1, dilation 1 and pad 0. */
typedef struct hg_conv_geom {
    int nsp;                      /* spatial dims of the call: 1, 2 or 3 */
    int64_t N, C, F, G;           /* batch, input channels, filters, groups */
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    int64_t Cg, Fg, K, P, I;      /* C/G, F/G, C/G*prod(k), prod(out), prod(in) */
} hg_conv_geom;

/* The im2col view of one group of one image: Cg channels of size in, windows on the out grid. */
static inline hg_im2col_geom hg_conv_col_geom(const hg_conv_geom *g)
{
    hg_im2col_geom c = {.C = g->Cg};
    for (int i = 0; i < 3; i++) {
        c.im[i] = g->in[i];
        c.out[i] = g->out[i];
        c.k[i] = g->k[i];
        c.s[i] = g->s[i];
        c.d[i] = g->d[i];
        c.p[i] = g->p[i];
    }
    return c;
}

/* A 1x1 kernel with stride 1 and no pad: the image itself is the col matrix. */
static inline bool hg_conv_is_pointwise(const hg_conv_geom *g)
{
    for (int i = 0; i < 3; i++)
        if (g->k[i] != 1 || g->s[i] != 1 || g->p[i] != 0) return false;
    return true;
}

/* Packed 2-D images with stride 1 and no pad take "extended" columns: an output row is given
 * the input's width (the last I2 - O2 columns of each row are computed and dropped), so that
 * the col row of tap (c, k1, k2) is one contiguous run of the image, (O1 - 1) * I2 + O2 long,
 * one copy instead of O1 short ones (LeNet's rows are 8 and 24 wide: the copies' overhead cost
 * more than the wasted GEMM columns). hg_conv_pack_cols: the columns per packed image, that
 * run's length when extended, else P. */
static inline bool hg_conv_is_ext(const hg_conv_geom *g)
{
    if (hg_conv_is_pointwise(g) || g->k[0] != 1 || g->in[0] != 1 || g->s[1] != 1 || g->s[2] != 1 ||
        g->p[1] != 0 || g->p[2] != 0)
        return false;
    return (g->out[1] - 1) * g->in[2] + g->out[2] <= 2 * g->P; /* at most 2x the columns */
}

static inline int64_t hg_conv_pack_cols(const hg_conv_geom *g)
{
    return hg_conv_is_ext(g) ? (g->out[1] - 1) * g->in[2] + g->out[2] : g->P;
}

/* Packed col blocks (images side by side, conv.c's small images): image's columns written at
 * col (row length ld), hg_conv_pack_cols of them. */
void hg_conv_pack_im2col_f32(const hg_conv_geom *g, const float *x, float *col, int64_t ld);
void hg_conv_pack_im2col_f64(const hg_conv_geom *g, const double *x, double *col, int64_t ld);

/* How the backward walks a call; the op fills it. Images run in nslots slots, in parallel when
 * more than one, each with its col buffer and (slots t > 0) its own partial sums of dW and db,
 * added in slot order at the end (so the sums are deterministic for a given slot count). */
typedef struct hg_conv_bw_plan {
    int64_t nslots; /* image slots */
    int64_t rows;   /* output rows (o0, o1) per tile: a tile's col block stays in cache */
    int64_t col_e; /* elements of a slot's col buffer; 0: pointwise, the image is the col matrix */
    int64_t nb; /* > 1: images packed nb to a block (col_e then holds the block and a dy
                     * block); needs y == NULL */
    bool whole; /* one tile per image, im2col split over the pool, slot t takes images t,
                     * t + nslots, ... (else a contiguous run) */
    bool bias_of_x; /* db sums x (C channels) rather than dy (F channels) */
} hg_conv_bw_plan;

/* Elements of workspace the backward needs: the slots' col buffers, then the partial sums. */
int64_t hg_conv_bw_area(const hg_conv_geom *g, const hg_conv_bw_plan *pl, bool grad_w, bool bias);

/* The gradients named above; NULL outputs are not computed (dW and db are zeroed first, dx per
 * image, y is overwritten). ws holds hg_conv_bw_area elements. Runs on the thread pool. */
void hg_conv_bw_f32(const hg_conv_geom *g, const hg_conv_bw_plan *pl, float *ws, const float *dy,
                    const float *x, const float *w, float *dx, float *y, float *dw, float *db);
void hg_conv_bw_f64(const hg_conv_geom *g, const hg_conv_bw_plan *pl, double *ws, const double *dy,
                    const double *x, const double *w, double *dx, double *y, double *dw,
                    double *db);

/* Whether Convolution a1 on x (1x1, stride 1, no pad, one group) and the depthwise Convolution
 * a2 (one filter per channel) on a1's output can run as one pass (kernels/cpu/pwdw.h): float32,
 * channel-first, a plane within pwdw's buffer. *dw: a2's geometry (conv.c). */
bool hg_conv_pwdw_geom(const hg_attrs *a1, const hg_attrs *a2, const hg_meta *x, hg_dw_geom *dw);

#endif
