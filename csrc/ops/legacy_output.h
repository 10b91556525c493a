/* Schema positions of the output layers (legacy_output.c), shared with their GPU kernels
 * (kernels/cuda/softmax.cu, nn.cu). Internal to csrc/ops and the kernels. */
#ifndef HG_OPS_LEGACY_OUTPUT_H
#define HG_OPS_LEGACY_OUTPUT_H

/* SoftmaxOutput and _backward_SoftmaxOutput. */
enum {
    SO_GRAD_SCALE,
    SO_IGNORE_LABEL,
    SO_MULTI_OUTPUT,
    SO_USE_IGNORE,
    SO_PRESERVE_SHAPE,
    SO_NORMALIZATION,
    SO_OUT_GRAD,
    SO_SMOOTH_ALPHA,
    SO_NATTRS
};
/* The values of SoftmaxOutput's and MakeLoss's normalization. */
enum { NORM_NULL, NORM_BATCH, NORM_VALID };
/* The regression outputs and their _backward_ ops. */
enum { RG_GRAD_SCALE, RG_NATTRS };
/* SVMOutput and _backward_SVMOutput. */
enum { SV_MARGIN, SV_REG, SV_USE_LINEAR, SV_NATTRS };
/* MakeLoss and _backward_MakeLoss. */
enum { ML_GRAD_SCALE, ML_VALID_THRESH, ML_NORMALIZATION, ML_NATTRS };
/* hard_sigmoid and smooth_l1, and their _backward_ ops. */
enum { HS_ALPHA, HS_BETA, HS_NATTRS };
enum { SL_SCALAR, SL_IS_INT, SL_NATTRS };

#endif
