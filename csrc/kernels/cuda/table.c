/* The GPU kernel tables of the CUDA build, one per kernel file, installed in the registry when
 * the library loads (as ops/families.c installs the op families); the registry attaches each
 * kernel to its op. Adding a kernel file means adding its table here. */
#include "core/device.h"

extern const hg_gpu_kernel hg_gpu_kernels_ew[], hg_gpu_kernels_blas[], hg_gpu_kernels_reduce[],
    hg_gpu_kernels_reduce_grad[], hg_gpu_kernels_softmax[], hg_gpu_kernels_nn[],
    hg_gpu_kernels_dnn[], hg_gpu_kernels_tensor[], hg_gpu_kernels_tensor_num[],
    hg_gpu_kernels_seq[], hg_gpu_kernels_misc[], hg_gpu_kernels_resample[], hg_gpu_kernels_optim[],
    hg_gpu_kernels_layout[], hg_gpu_kernels_index[], hg_gpu_kernels_norm[],
    hg_gpu_kernels_transformer[], hg_gpu_kernels_linalg[], hg_gpu_kernels_image[],
    hg_gpu_kernels_image_resize[], hg_gpu_kernels_im2col[], hg_gpu_kernels_creation[],
    hg_gpu_kernels_rnn[], hg_gpu_kernels_spatial[], hg_gpu_kernels_detect[];

static const hg_gpu_kernel *const k_tables[] = {
    hg_gpu_kernels_ew,          hg_gpu_kernels_blas,
    hg_gpu_kernels_reduce,      hg_gpu_kernels_reduce_grad,
    hg_gpu_kernels_softmax,     hg_gpu_kernels_nn,
    hg_gpu_kernels_dnn,         hg_gpu_kernels_tensor,
    hg_gpu_kernels_tensor_num,  hg_gpu_kernels_seq,
    hg_gpu_kernels_misc,        hg_gpu_kernels_resample,
    hg_gpu_kernels_optim,       hg_gpu_kernels_layout,
    hg_gpu_kernels_index,       hg_gpu_kernels_norm,
    hg_gpu_kernels_transformer, hg_gpu_kernels_linalg,
    hg_gpu_kernels_image,       hg_gpu_kernels_image_resize,
    hg_gpu_kernels_im2col,      hg_gpu_kernels_creation,
    hg_gpu_kernels_rnn,         hg_gpu_kernels_spatial,
    hg_gpu_kernels_detect,      NULL,
};

__attribute__((constructor)) static void install_gpu_kernels(void)
{
    hg_registry_install_gpu_kernels(k_tables);
}
