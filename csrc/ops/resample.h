/* What the resampling ops (resample.c) share with their GPU kernels (kernels/cuda/resample.cu):
 * the schema positions and enum values. Internal to csrc/. */
#ifndef HG_OPS_RESAMPLE_H
#define HG_OPS_RESAMPLE_H

enum { K_PAD_MODE, K_PAD_WIDTH, K_PAD_VALUE, K_PAD_NATTRS };
enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT, PAD_NMODES };

enum {
    K_UP_SCALE,
    K_UP_NUM_FILTER,
    K_UP_TYPE,
    K_UP_MODE,
    K_UP_NUM_ARGS,
    K_UP_WORKSPACE,
    K_UP_NATTRS
};
enum { UP_NEAREST, UP_BILINEAR, UP_NTYPES };
enum { UP_CONCAT, UP_SUM, UP_NMODES };

#endif
