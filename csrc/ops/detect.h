/* Schema positions of the detection and spatial-sampling ops (spatial.c: GridGenerator,
 * BilinearSampler, SpatialTransformer, ROIPooling, Correlation; contrib_roi.c; contrib_bbox.c;
 * contrib_multibox.c; deform_conv.c), shared with their GPU kernels (kernels/cuda/spatial.cu,
 * detect.cu), and MultiBoxPrior's / MultiBoxTarget's attribute parsers. Internal to csrc/. */
#ifndef HG_OPS_DETECT_H
#define HG_OPS_DETECT_H

#include "core/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* spatial.c */
enum { GG_TRANSFORM, GG_TARGET, GG_NATTRS };
enum { GG_AFFINE, GG_WARP, GG_NTYPES };
enum { BS_CUDNN_OFF, BS_NATTRS };
enum { ST_TARGET, ST_TRANSFORM, ST_SAMPLER, ST_CUDNN_OFF, ST_NATTRS };
enum { RP_POOLED, RP_SCALE, RP_NATTRS };
enum { CO_KERNEL, CO_MAXD, CO_STRIDE1, CO_STRIDE2, CO_PAD, CO_MULT, CO_NATTRS };

/* contrib_roi.c */
enum { RA_POOLED, RA_SCALE, RA_SAMPLE, RA_PS, RA_ALIGNED, RA_NATTRS };
enum { RR_POOLED, RR_SCALE, RR_SAMPLE, RR_NATTRS };
enum { PS_SCALE, PS_OUTDIM, PS_POOLED, PS_GROUP, PS_NATTRS };

/* contrib_bbox.c */
enum { FMT_CORNER, FMT_CENTER };
enum { IOU_FORMAT, IOU_NATTRS };
enum {
    NMS_OVERLAP,
    NMS_VALID,
    NMS_TOPK,
    NMS_COORD,
    NMS_SCORE,
    NMS_ID,
    NMS_BG,
    NMS_FORCE,
    NMS_IN_FMT,
    NMS_OUT_FMT,
    NMS_NATTRS
};
enum { BM_ASCEND, BM_THRESH, BM_TOPK, BM_NATTRS };
enum { DEC_STD0, DEC_STD1, DEC_STD2, DEC_STD3, DEC_CLIP, DEC_FORMAT, DEC_NATTRS };

/* contrib_multibox.c */
enum { MBP_SIZES, MBP_RATIOS, MBP_CLIP, MBP_STEPS, MBP_OFFSETS, MBP_NATTRS };
enum {
    MBT_OVERLAP,
    MBT_IGNORE,
    MBT_NEG_RATIO,
    MBT_NEG_THRESH,
    MBT_MIN_NEG,
    MBT_VARIANCES,
    MBT_NATTRS
};

#define HG_MBP_MAX_FLOATS 32
/* MultiBoxPrior's parsed float lists (sizes, ratios, steps (y, x), offsets (y, x)). */
typedef struct {
    float sizes[HG_MBP_MAX_FLOATS], ratios[HG_MBP_MAX_FLOATS], steps[HG_MBP_MAX_FLOATS],
        offsets[HG_MBP_MAX_FLOATS];
    int ns, nr;
} hg_mbp_params;
/* Parses and checks MultiBoxPrior's attributes; errors name the op and attribute. */
hg_status hg_mbp_parse(const hg_op_def *op, const hg_attrs *a, hg_mbp_params *p);
/* MultiBoxTarget's 4 variances into v; errors name the op. */
hg_status hg_mbt_variances(const hg_op_def *op, const hg_attrs *a, float *v);

/* deform_conv.c (ModulatedDeformableConvolution adds D_IM2COL) */
enum {
    D_KERNEL,
    D_STRIDE,
    D_DILATE,
    D_PAD,
    D_NUM_FILTER,
    D_NUM_GROUP,
    D_NUM_DG,
    D_WORKSPACE,
    D_NO_BIAS,
    D_LAYOUT,
    D_NATTRS, /* DeformableConvolution's schema ends here */
    D_IM2COL = D_NATTRS,
    M_NATTRS
};

#ifdef __cplusplus
}
#endif

#endif
