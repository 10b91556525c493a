/* cuDNN for the CUDA build's convolutions (csrc/kernels/cuda/cudnn.c): the library is loaded with
 * dlopen at first use, so a process that never convolves on a GPU never needs it. One call runs
 * one of the three convolution products of a channel-first (NC*) call on gpu(dev)'s stream:
 *     HG_CUDNN_FWD         y = conv(x, w)                      (x, w read; y written)
 *     HG_CUDNN_BWD_DATA    x = conv^T(y, w), the data gradient  (y, w read; x written)
 *     HG_CUDNN_BWD_FILTER  w = the weight gradient of (x, y)    (x, y read; w written)
 * with x (N, C, *in), w (F, C/G, *k), y (N, F, *out), all contiguous. Outputs are overwritten
 * (beta 0). The algorithm is chosen by cuDNN's heuristics once per (product, shapes, attrs,
 * dtype, TF32 setting, device) and cached. float32 uses FMA math (no TF32) unless
 * hg_gpu_set_tf32(1); float16 stores half and accumulates in float; float64 is float64. */
#ifndef HG_KERNELS_CUDA_CUDNN_H
#define HG_KERNELS_CUDA_CUDNN_H

#include "kernels/cuda/cuda_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { HG_CUDNN_FWD, HG_CUDNN_BWD_DATA, HG_CUDNN_BWD_FILTER } hg_cudnn_conv_kind;

/* A convolution's geometry normalised to 3 spatial dims (index 0 = depth, 2 = width; missing
 * leading dims have size 1, kernel 1, stride 1, dilation 1, pad 0), as conv_common.h's. */
typedef struct hg_cudnn_conv {
    hg_dtype dtype; /* HG_DTYPE_F32, F64 or F16 */
    int nsp;        /* spatial dims of the call: 1, 2 (4-D descriptors) or 3 (5-D) */
    int64_t N, C, F, G;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    size_t ws_limit; /* bytes of workspace an algorithm may use (the op's workspace attr) */
} hg_cudnn_conv;

hg_status hg_cudnn_conv_run(int dev, const char *op, hg_cudnn_conv_kind kind,
                            const hg_cudnn_conv *c, void *x, void *w, void *y);

#ifdef __cplusplus
}
#endif

#endif
