/* im2col / col2im over channel-first images, 3 spatial dims (1-D and 2-D callers set the leading
 * sizes to 1). Shared by Convolution (conv.c) and Deconvolution (deconv.c), forward and backward.
 *
 * For an image x[C, im0, im1, im2] and a grid of window positions out[3], the column matrix is
 *     col[(c, k0, k1, k2), (o0, o1, o2)] = x[c, o0*s0 - p0 + k0*d0, ...]   (0 outside the image)
 * with rows in (c, k) order and columns in grid order; hg_col2im_* is its adjoint (it adds each
 * column entry back to the image element it came from). The grid need not be the one the
 * image's size implies: entries falling outside the image are simply zero / dropped.
 *
 * Both split the work over channels on the kernels' thread pool when called outside it (inside
 * a pool worker they run serially). Thread-safe; they allocate nothing.
 */
#ifndef HG_KERNELS_CPU_IM2COL_H
#define HG_KERNELS_CPU_IM2COL_H

#include <stdint.h>

typedef struct hg_im2col_geom {
    int64_t C;                        /* image channels */
    int64_t im[3];                    /* image spatial size */
    int64_t out[3];                   /* window grid */
    int64_t k[3], s[3], d[3], p[3];   /* kernel, stride, dilation, padding */
} hg_im2col_geom;

/* col must hold C * prod(k) * prod(out) elements; every one is written. */
void hg_im2col_f32(const hg_im2col_geom *g, const float *x, float *col);
void hg_im2col_f64(const hg_im2col_geom *g, const double *x, double *col);
/* The columns of grid rows [r0, r1) only (rows (o0, o1) flattened, o0 major): col holds
 * C * prod(k) rows of (r1 - r0) * out[2] elements, row i starting at col + i * ld. Runs on the
 * calling thread (callers tile an image into such blocks so that each fits in cache, or pack
 * several small images side by side, and spread the blocks over threads). */
void hg_im2col_rows_f32(const hg_im2col_geom *g, const float *x, int64_t r0, int64_t r1, float *col,
                        int64_t ld);
void hg_im2col_rows_f64(const hg_im2col_geom *g, const double *x, int64_t r0, int64_t r1,
                        double *col, int64_t ld);
/* x[C, im...] += scatter of col; x must be initialised (zeros for a plain adjoint). */
void hg_col2im_f32(const hg_im2col_geom *g, const float *col, float *x);
void hg_col2im_f64(const hg_im2col_geom *g, const double *col, double *x);

/* Adjoint of hg_im2col_rows: x += scatter of the block col (calling thread only). */
void hg_col2im_rows_f32(const hg_im2col_geom *g, const float *col, int64_t r0, int64_t r1,
                        int64_t ld, float *x);
void hg_col2im_rows_f64(const hg_im2col_geom *g, const double *col, int64_t r0, int64_t r1,
                        int64_t ld, double *x);

#endif
