/* hg_gpu_kernels_image: GPU kernels of MXNet's image ops (ops/image.c, image_color.c and the
 * flips and crop of image_geom.c; _image_resize is in image_resize.cu).
 *
 * Each kernel does the CPU op's arithmetic in its order and types, so the results are the
 * CPU's bit for bit: the file is compiled with -fmad=false (setup.py), so no product and sum
 * fuse into one FMA; values go through double where the CPU loads them as double
 * (contrib_util.c's hg_c_load) and are stored as hg_c_store stores them (integers through
 * x86-64's double-to-int64 conversion, float16 through float).
 *
 * The random ops draw their factors on the host with the CPU op's calls to the global
 * generator, in its order, and pass them to the kernels by value: the same seed gives the same
 * image on both devices. The colour ops work on a double copy of the image in device memory,
 * one kernel per adjustment, as the CPU's adjustments work on its double copy. Contrast's mean
 * grey is a float sum in pixel order on the CPU; a float sum in another order rounds
 * differently, so one thread adds it up in that order (a pass over the image, small next to the
 * rest of the augmentation). A random flip's hidden flag is written by the flip kernel; its
 * gradient reads that flag on the device, so nothing waits for the GPU. */
#include <math.h>
#include <stdint.h>

#include "kernels/cuda/tensor_common.h"

extern "C" {
#include "core/rng.h"
/* ops/ops_util.h's parser of float-tuple attributes (that header includes C11 atomics, which
 * C++ does not take). */
int hg_ops_parse_floats(const hg_op_def *op, const char *attr, const char *text, float *v, int max,
                        bool min_one);
}

namespace
{

using hg_tx::f2h;
using hg_tx::ld;

/* ---- hg_c_store on the device ----------------------------------------------------------------
 * (int64_t)v as x86-64 converts it: NaN and values outside [-2^63, 2^63) give INT64_MIN. */
__device__ __forceinline__ int64_t d2i_x86(double v)
{
    if (!(v >= -0x1p63 && v < 0x1p63)) return INT64_MIN;
    return (int64_t)v;
}

/* hg_c_store's conversion of one element. */
__device__ __forceinline__ void st_c(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case HG_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case HG_DTYPE_F64: ((double *)p)[i] = v; break;
    case HG_DTYPE_F16: ((uint16_t *)p)[i] = f2h((float)v); break;
    case HG_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)d2i_x86(v); break;
    case HG_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case HG_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)d2i_x86(v); break;
    case HG_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)d2i_x86(v); break;
    case HG_DTYPE_I64: ((int64_t *)p)[i] = d2i_x86(v); break;
    default: break;
    }
}

/* Runs M(T) with T the unsigned type of the element size es; false for another size. */
#define BY_SIZE(es, M)                                                                         \
    ((es) == 1   ? (M(uint8_t), true)                                                          \
     : (es) == 2 ? (M(uint16_t), true)                                                         \
     : (es) == 4 ? (M(uint32_t), true)                                                         \
     : (es) == 8 ? (M(uint64_t), true)                                                         \
                 : false)

/* ---- _image_normalize, _backward_image_normalize ------------------------------------------ */

struct nm_par {
    float mean[3], sd[3];
};

/* image.c's nm_params, on the host: mean and std for channels 0..2 (checked by infer). */
hg_status nm_params(const hg_op_def *op, const hg_attrs *a, int nch, nm_par *p)
{
    float m[5], s[5];
    int nm = hg_ops_parse_floats(op, op->attrs[0].name, a->v[0].s, m, 5, true);
    if (nm < 0) return HG_ERR_VALUE; /* the message is set */
    int ns = hg_ops_parse_floats(op, op->attrs[1].name, a->v[1].s, s, 5, true);
    if (ns < 0) return HG_ERR_VALUE; /* the message is set */
    if ((nm != 1 && nm != nch) || (ns != 1 && ns != nch))
        return hg_error(HG_ERR_VALUE, "%s: mean and std must have 1 or %d elements, got %d, %d",
                        op->name, nch, nm, ns);
    for (int c = 0; c < 3; c++) {
        p->mean[c] = m[nm == 1 ? 0 : c < nm ? c : 0];
        p->sd[c] = s[ns == 1 ? 0 : c < ns ? c : 0];
    }
    return HG_OK;
}

/* y = (x - mean[c]) / std[c], or dx = dy / std[c] (backward): float arithmetic for every dtype
 * but float64, integer results truncated (image.c's nm_run). */
__global__ void nm_kernel(const void *x, void *y, int dt, int64_t n, int64_t plane, int64_t nch,
                          nm_par p, bool backward)
{
    const bool dbl = dt == HG_DTYPE_F64;
    const bool integer = dt != HG_DTYPE_F64 && dt != HG_DTYPE_F32 && dt != HG_DTYPE_F16;
    GRID_LOOP(i, n)
    {
        const int64_t c = (i / plane) % nch;
        const double v = ld(x, dt, i);
        double r;
        if (dbl) r = backward ? v / (double)p.sd[c] : (v - (double)p.mean[c]) / (double)p.sd[c];
        else {
            const float f = (float)v;
            r = (double)(backward ? f / p.sd[c] : (f - p.mean[c]) / p.sd[c]);
        }
        st_c(y, dt, i, integer ? (double)d2i_x86(r) : r);
    }
}

hg_status nm_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, const hg_tensor *x,
                 hg_tensor *y, bool backward)
{
    STREAM;
    const int nd = x->ndim;
    const int64_t nch = x->shape[nd - 3], plane = x->shape[nd - 2] * x->shape[nd - 1];
    nm_par p;
    HG_TRY(nm_params(op, a, (int)nch, &p));
    return hg_tx::launch(op->name, s, x->size, nm_kernel, (const void *)hg_data(x), hg_data(y),
                         (int)x->dtype, x->size, plane, nch, p, backward);
}

GPU_FWD(normalize_gpu) { return nm_run(op, a, ctx, in[0], out[0], false); }
GPU_FWD(normalize_bwd_gpu) { return nm_run(op, a, ctx, in[0], out[0], true); }

/* ---- _image_to_tensor --------------------------------------------------------------------- */

/* y[n, c, i] (float32) = x[n, i, c] / 255, i over the height * width pixels. */
__global__ void tt_kernel(const void *x, int dt, float *y, int64_t ch, int64_t len, int64_t total)
{
    const bool dbl = dt == HG_DTYPE_F64;
    GRID_LOOP(o, total)
    {
        const int64_t i = o % len, c = (o / len) % ch, n = o / (len * ch);
        const double v = ld(x, dt, (n * len + i) * ch + c);
        y[o] = dbl ? (float)(v / 255.0) : (float)v / 255.0f;
    }
}

GPU_FWD(to_tensor_gpu)
{
    STREAM;
    const hg_tensor *x = in[0];
    const int nd = x->ndim;
    const int64_t ch = x->shape[nd - 1], len = x->shape[nd - 3] * x->shape[nd - 2];
    return hg_tx::launch(op->name, s, out[0]->size, tt_kernel, (const void *)hg_data(x),
                         (int)x->dtype, (float *)hg_data(out[0]), ch, len, out[0]->size);
}

/* ---- flips ---------------------------------------------------------------------------------
 * y (h, w, c) = x with axis 0 (top_bottom) or 1 (left_right) reversed, or copied. Whether it
 * flips is `flip`, or the float flag at *flag_in when that is given (a random flip's gradient).
 * flag_out, when given, receives 1 or 0 (a random flip's hidden output). */
template <typename T>
__global__ void flip_kernel(const T *x, T *y, int64_t h, int64_t w, int64_t c, bool left_right,
                            bool flip, const float *flag_in, float *flag_out, int64_t total)
{
    if (flag_in) flip = *flag_in != 0.f;
    if (flag_out && blockIdx.x == 0 && threadIdx.x == 0) *flag_out = flip ? 1.f : 0.f;
    GRID_LOOP(e, total)
    {
        int64_t k = e % c, j = (e / c) % w, i = e / (c * w);
        if (flip && left_right) j = w - 1 - j;
        else if (flip) i = h - 1 - i;
        y[e] = x[(i * w + j) * c + k];
    }
}

hg_status flip_run(const hg_op_def *op, const hg_exec_ctx *ctx, const hg_tensor *x, hg_tensor *y,
                   bool left_right, bool flip, const float *flag_in, float *flag_out)
{
    STREAM;
    const int64_t h = x->shape[0], w = x->shape[1], c = x->shape[2];
    if (x->size == 0 && !flag_out) return HG_OK; /* else the kernel still writes the flag */
    const size_t es = hg_dtype_size(x->dtype);
#define FLIP(T)                                                                                \
    flip_kernel<T><<<hg_cuda_blocks(x->size), HG_CUDA_THREADS, 0, s>>>(                       \
        (const T *)hg_data(x), (T *)hg_data(y), h, w, c, left_right, flip, flag_in, flag_out,  \
        x->size)
    if (!BY_SIZE(es, FLIP)) return bad_dtype(op, x->dtype);
#undef FLIP
    return hg_cuda_launched(op->name);
}

GPU_FWD(flip_lr_gpu) { return flip_run(op, ctx, in[0], out[0], true, true, NULL, NULL); }
GPU_FWD(flip_tb_gpu) { return flip_run(op, ctx, in[0], out[0], false, true, NULL, NULL); }

/* One draw for the image, p = 1/2, as image_geom.c's random_flip. */
bool draw_flip(void)
{
    double u;
    hg_rng_uniform(&u, 1);
    return u < 0.5;
}

GPU_FWD(rflip_lr_gpu)
{
    return flip_run(op, ctx, in[0], out[0], true, draw_flip(), NULL, (float *)hg_data(out[1]));
}
GPU_FWD(rflip_tb_gpu)
{
    return flip_run(op, ctx, in[0], out[0], false, draw_flip(), NULL, (float *)hg_data(out[1]));
}
GPU_FWD(bflip_lr_gpu)
{
    return flip_run(op, ctx, in[0], out[0], true, false, (const float *)hg_data(in[1]), NULL);
}
GPU_FWD(bflip_tb_gpu)
{
    return flip_run(op, ctx, in[0], out[0], false, false, (const float *)hg_data(in[1]), NULL);
}

/* ---- _image_crop, _backward_image_crop -----------------------------------------------------
 * The (ch, cw) window at (y0, x0) of (n, h, w, c) images: crop gathers it; the backward writes
 * the whole image, the window from the crop-shaped ograd and zeros around it. */
struct crop_geom {
    int64_t h, w, c, x0, y0, cw, ch;
};

crop_geom crop_of(const hg_attrs *a, const hg_tensor *img)
{
    const int nd = img->ndim;
    return crop_geom{img->shape[nd - 3], img->shape[nd - 2], img->shape[nd - 1], a->v[0].i,
                     a->v[1].i,          a->v[2].i,          a->v[3].i};
}

template <typename T> __global__ void crop_kernel(const T *img, T *crop, crop_geom g, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t k = e % g.c, j = (e / g.c) % g.cw, i = (e / (g.c * g.cw)) % g.ch,
                      b = e / (g.c * g.cw * g.ch);
        crop[e] = img[((b * g.h + g.y0 + i) * g.w + g.x0 + j) * g.c + k];
    }
}

template <typename T>
__global__ void paste_kernel(const T *crop, T *img, crop_geom g, int64_t total)
{
    GRID_LOOP(e, total)
    {
        const int64_t k = e % g.c, j = (e / g.c) % g.w, i = (e / (g.c * g.w)) % g.h,
                      b = e / (g.c * g.w * g.h);
        const int64_t ci = i - g.y0, cj = j - g.x0;
        img[e] = ci >= 0 && ci < g.ch && cj >= 0 && cj < g.cw
                     ? crop[((b * g.ch + ci) * g.cw + cj) * g.c + k]
                     : (T)0;
    }
}

GPU_FWD(crop_gpu)
{
    STREAM;
    const crop_geom g = crop_of(a, in[0]);
    const int64_t n = out[0]->size;
#define CROP(T)                                                                                \
    crop_kernel<T> LAUNCH(n)((const T *)hg_data(in[0]), (T *)hg_data(out[0]), g, n)
    if (!BY_SIZE(hg_dtype_size(in[0]->dtype), CROP)) return bad_dtype(op, in[0]->dtype);
#undef CROP
    return hg_cuda_launched(op->name);
}

GPU_FWD(crop_bwd_gpu)
{
    STREAM;
    const crop_geom g = crop_of(a, out[0]);
    const int64_t n = out[0]->size;
#define PASTE(T)                                                                               \
    paste_kernel<T> LAUNCH(n)((const T *)hg_data(in[0]), (T *)hg_data(out[0]), g, n)
    if (!BY_SIZE(hg_dtype_size(out[0]->dtype), PASTE)) return bad_dtype(op, out[0]->dtype);
#undef PASTE
    return hg_cuda_launched(op->name);
}

/* ---- colour ops (image_color.c) ------------------------------------------------------------ */

#define R2Y 0.299f
#define G2Y 0.587f
#define B2Y 0.114f

/* image_color.c's saturate: the value a float result becomes in dtype dt, kept as a double. */
__device__ __forceinline__ double saturate(double v, int dt)
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

__global__ void load_kernel(const void *x, int dt, double *v, int64_t n)
{
    GRID_LOOP(i, n) v[i] = ld(x, dt, i);
}

__global__ void store_kernel(const double *v, void *y, int dt, int64_t n)
{
    GRID_LOOP(i, n) st_c(y, dt, i, v[i]);
}

__global__ void brightness_kernel(double *v, int dt, float alpha, int64_t n)
{
    GRID_LOOP(i, n) v[i] = saturate((double)((float)v[i] * alpha), dt);
}

/* The mean grey's share, (1 - alpha) * mean grey, summed in pixel order into *beta (one
 * thread: the CPU's float sum in its order). */
__global__ void contrast_beta_kernel(const double *v, int64_t npix, int64_t nch, float alpha,
                                     float *beta)
{
    float sum = 0.f;
    for (int64_t p = 0; p < npix; p++) {
        const double *x = v + p * nch;
        sum += nch == 3 ? R2Y * (float)x[0] + G2Y * (float)x[1] + B2Y * (float)x[2] : (float)x[0];
    }
    *beta = (1.f - alpha) * (sum / (float)npix);
}

__global__ void contrast_kernel(double *v, int dt, float alpha, const float *beta, int64_t n)
{
    const float b = *beta;
    GRID_LOOP(i, n) v[i] = saturate((double)((float)v[i] * alpha + b), dt);
}

/* MXNet's saturation: only 0.114 * blue stays in its grey (image_color.c says why). */
__global__ void saturation_kernel(double *v, int dt, float alpha, int64_t npix)
{
    GRID_LOOP(p, npix)
    {
        double *x = v + p * 3;
        const float gray = B2Y * (float)x[2] * (1.f - alpha);
        for (int k = 0; k < 3; k++) x[k] = saturate((double)((float)x[k] * alpha + gray), dt);
    }
}

/* RGB (0..255) <-> hue (degrees), lightness and saturation (0..1): image_color.c's. */
__device__ void rgb_to_hls(float r, float g, float b, float *h, float *l, float *s)
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

__device__ void hls_to_rgb(float h, float l, float s, float *rgb)
{
    const int sector_tab[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};
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

__global__ void hue_kernel(double *v, int dt, float alpha, int64_t npix)
{
    GRID_LOOP(p, npix)
    {
        double *x = v + p * 3;
        float h, l, s, rgb[3];
        rgb_to_hls((float)x[0], (float)x[1], (float)x[2], &h, &l, &s);
        hls_to_rgb(h + alpha * 360.f, l, s, rgb);
        for (int k = 0; k < 3; k++) x[k] = saturate((double)rgb[k], dt);
    }
}

struct pca3 {
    float v[3];
};

__global__ void lighting_kernel(double *v, int dt, pca3 pca, int64_t n)
{
    GRID_LOOP(i, n) v[i] = saturate((double)((float)v[i] + pca.v[i % 3]), dt);
}

/* ---- the colour ops' host side: draws, then the adjustments in order -------------------- */

/* image_color.c's uniform: one draw, as a float in [lo, hi). */
float uniform(double lo, double hi)
{
    double u;
    hg_rng_uniform(&u, 1);
    return (float)(lo + (hi - lo) * u);
}

enum { ADJ_BRIGHT, ADJ_CONTRAST, ADJ_SAT, ADJ_HUE, ADJ_LIGHT };

/* An image's double copy on the device and what the adjustments need. */
struct img_job {
    const hg_op_def *op;
    cudaStream_t s;
    double *v;    /* npix * nch values */
    float *beta;  /* one float after them (contrast's grey share) */
    int64_t npix, nch, n;
    int dt;
};

hg_status adjust(const img_job &j, int kind, float alpha, const pca3 *pca)
{
    const char *name = j.op->name;
    switch (kind) {
    case ADJ_BRIGHT: return hg_tx::launch(name, j.s, j.n, brightness_kernel, j.v, j.dt, alpha, j.n);
    case ADJ_CONTRAST:
        if (j.npix == 0) return HG_OK;
        contrast_beta_kernel<<<1, 1, 0, j.s>>>(j.v, j.npix, j.nch, alpha, j.beta);
        HG_TRY(hg_cuda_launched(name));
        return hg_tx::launch(name, j.s, j.n, contrast_kernel, j.v, j.dt, alpha,
                             (const float *)j.beta, j.n);
    case ADJ_SAT:
        if (j.nch != 3) return HG_OK; /* a grey image has no saturation (MXNet leaves it) */
        return hg_tx::launch(name, j.s, j.npix, saturation_kernel, j.v, j.dt, alpha, j.npix);
    case ADJ_HUE:
        if (j.nch != 3) return HG_OK;
        return hg_tx::launch(name, j.s, j.npix, hue_kernel, j.v, j.dt, alpha, j.npix);
    default:
        if (j.nch != 3) return HG_OK;
        return hg_tx::launch(name, j.s, j.n, lighting_kernel, j.v, j.dt, *pca, j.n);
    }
}

/* AlexNet's PCA lighting offsets of image_color.c's lighting, on the host as there. */
pca3 pca_of(const float *alpha)
{
    static const float eig[3][3] = {{55.46f * -0.5675f, 4.794f * 0.7192f, 1.148f * 0.4009f},
                                    {55.46f * -0.5808f, 4.794f * -0.0045f, 1.148f * -0.8140f},
                                    {55.46f * -0.5836f, 4.794f * -0.6948f, 1.148f * 0.4203f}};
    pca3 p;
    for (int k = 0; k < 3; k++)
        p.v[k] = eig[k][0] * alpha[0] + eig[k][1] * alpha[1] + eig[k][2] * alpha[2];
    return p;
}

enum { K_BRIGHT, K_CONTRAST, K_SAT, K_HUE, K_JITTER, K_ADJL, K_RANDL };

/* The draws of image_color.c's color_run for `kind`, in its order, then the kernels. */
hg_status color_adjust(const img_job &j, const hg_attrs *a, int kind)
{
    switch (kind) {
    case K_BRIGHT:
    case K_CONTRAST:
    case K_SAT:
    case K_HUE: {
        const float f = uniform(a->v[0].f, a->v[1].f);
        return adjust(j, kind - K_BRIGHT + ADJ_BRIGHT, f, NULL);
    }
    case K_JITTER: {
        int order[4] = {0, 1, 2, 3};
        for (int i = 3; i > 0; i--) {
            double u;
            hg_rng_uniform(&u, 1);
            int k = (int)(u * (i + 1)), t = order[i];
            order[i] = order[k], order[k] = t;
        }
        /* attrs brightness, contrast, saturation, hue: indices 0..3, as ADJ_* */
        for (int i = 0; i < 4; i++) {
            const double amount = a->v[order[i]].f;
            if (!(amount > 0)) continue;
            if (order[i] == ADJ_HUE) HG_TRY(adjust(j, ADJ_HUE, uniform(-amount, amount), NULL));
            else HG_TRY(adjust(j, order[i], 1.f + uniform(-amount, amount), NULL));
        }
        return HG_OK;
    }
    case K_ADJL: {
        float al[4];
        if (hg_ops_parse_floats(j.op, "alpha", a->v[0].s, al, 4, true) < 0) return HG_ERR_VALUE;
        const pca3 p = pca_of(al);
        return adjust(j, ADJ_LIGHT, 0.f, &p);
    }
    default: {
        double z[3];
        hg_rng_normal(z, 3);
        float al[3];
        for (int k = 0; k < 3; k++) al[k] = (float)(z[k] * a->v[0].f);
        const pca3 p = pca_of(al);
        return adjust(j, ADJ_LIGHT, 0.f, &p);
    }
    }
}

hg_status color_run(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx,
                    const hg_tensor *x, hg_tensor *y, int kind)
{
    STREAM;
    img_job j;
    j.op = op;
    j.s = s;
    j.npix = x->shape[0] * x->shape[1];
    j.nch = x->shape[2];
    j.n = x->size;
    j.dt = (int)x->dtype;
    if ((uint64_t)j.n > (SIZE_MAX - 16) / sizeof(double))
        return hg_error(HG_ERR_VALUE, "%s: image of %lld elements is too large", op->name,
                        (long long)j.n);
    const size_t bytes = sizeof(double) * (size_t)j.n + 16;
    void *buf;
    HG_TRY(hg_device_alloc(ctx->device_id, bytes, &buf));
    j.v = (double *)buf;
    j.beta = (float *)(j.v + j.n);
    hg_status st = hg_tx::launch(op->name, s, j.n, load_kernel, (const void *)hg_data(x), j.dt, j.v,
                                 j.n);
    if (st == HG_OK) st = color_adjust(j, a, kind);
    if (st == HG_OK)
        st = hg_tx::launch(op->name, s, j.n, store_kernel, (const double *)j.v, hg_data(y), j.dt,
                           j.n);
    hg_device_free(ctx->device_id, buf, bytes); /* stream-ordered: safe after the launches */
    return st;
}

#define COLOR_GPU(NAME, KIND)                                                                  \
    GPU_FWD(NAME) { return color_run(op, a, ctx, in[0], out[0], KIND); }
COLOR_GPU(bright_gpu, K_BRIGHT)
COLOR_GPU(contrast_gpu, K_CONTRAST)
COLOR_GPU(sat_gpu, K_SAT)
COLOR_GPU(hue_gpu, K_HUE)
COLOR_GPU(jitter_gpu, K_JITTER)
COLOR_GPU(adjl_gpu, K_ADJL)
COLOR_GPU(randl_gpu, K_RANDL)
#undef COLOR_GPU

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_image[] = {
    {"_image_normalize", normalize_gpu},
    {"_backward_image_normalize", normalize_bwd_gpu},
    {"_image_to_tensor", to_tensor_gpu},
    {"_image_flip_left_right", flip_lr_gpu},
    {"_image_flip_top_bottom", flip_tb_gpu},
    {"_image_random_flip_left_right", rflip_lr_gpu},
    {"_image_random_flip_top_bottom", rflip_tb_gpu},
    {"_backward_image_random_flip_left_right", bflip_lr_gpu},
    {"_backward_image_random_flip_top_bottom", bflip_tb_gpu},
    {"_image_crop", crop_gpu},
    {"_backward_image_crop", crop_bwd_gpu},
    {"_image_random_brightness", bright_gpu},
    {"_image_random_contrast", contrast_gpu},
    {"_image_random_saturation", sat_gpu},
    {"_image_random_hue", hue_gpu},
    {"_image_random_color_jitter", jitter_gpu},
    {"_image_adjust_lighting", adjl_gpu},
    {"_image_random_lighting", randl_gpu},
    {NULL, NULL},
};
