/* Schema positions and enum values of Pooling and _backward_Pooling (pool.c), shared with the
 * GPU kernels (kernels/cuda/dnn.cu). Internal to csrc/. */
#ifndef HG_OPS_POOL_H
#define HG_OPS_POOL_H

enum {
    P_KERNEL,
    P_POOL_TYPE,
    P_GLOBAL,
    P_CUDNN_OFF,
    P_CONVENTION,
    P_STRIDE,
    P_PAD,
    P_P_VALUE,
    P_COUNT_INCLUDE_PAD,
    P_LAYOUT,
    P_NATTRS
};
enum { POOL_MAX, POOL_AVG, POOL_SUM, POOL_LP, POOL_NTYPES };
enum { CONV_VALID, CONV_FULL, CONV_SAME, CONV_NCONVENTIONS };
enum {
    LAYOUT_NCW,
    LAYOUT_NCHW,
    LAYOUT_NCDHW,
    LAYOUT_NWC,
    LAYOUT_NHWC,
    LAYOUT_NDHWC,
    LAYOUT_NLAYOUTS
};

#endif
