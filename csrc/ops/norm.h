/* Schema positions of BatchNorm and _backward_BatchNorm (norm.c), shared with the GPU kernels
 * (kernels/cuda/dnn.cu). Internal to csrc/. */
#ifndef HG_OPS_NORM_H
#define HG_OPS_NORM_H

enum {
    BN_EPS,
    BN_MOMENTUM,
    BN_FIX_GAMMA,
    BN_USE_GLOBAL,
    BN_OUTPUT_MEAN_VAR,
    BN_AXIS,
    BN_CUDNN_OFF,
    BN_MIN_CALIB,
    BN_MAX_CALIB,
    BN_NATTRS
};

#endif
