/* Schema positions of the normalisation ops (norm.c), shared with the GPU kernels: BatchNorm and
 * _backward_BatchNorm (kernels/cuda/dnn.cu); LayerNorm, InstanceNorm, GroupNorm and their
 * _backward_ ops (kernels/cuda/norm.cu). Internal to csrc/. */
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

enum { LN_AXIS, LN_EPS, LN_OUTPUT_MEAN_VAR, LN_NATTRS };
enum { IN_EPS, IN_NATTRS };
enum { GN_NUM_GROUPS, GN_EPS, GN_OUTPUT_MEAN_VAR, GN_NATTRS };

#endif
