/* Schema positions of the shape family (shape.c), shared with the GPU kernels
 * (kernels/cuda/layout.cu). Internal to csrc/. */
#ifndef HG_OPS_SHAPE_H
#define HG_OPS_SHAPE_H

enum { R_SHAPE, R_REVERSE, R_TARGET, R_KEEP, R_NATTRS };
enum { EX_AXIS, EX_NATTRS };
enum { SQ_AXIS, SQ_NATTRS };
enum { TR_AXES, TR_NATTRS };
enum { SW_DIM1, SW_DIM2, SW_NATTRS };
enum { TL_REPS, TL_NATTRS };
enum { RP_REPEATS, RP_AXIS, RP_NATTRS };
enum { RV_AXIS, RV_NATTRS };
enum { BT_SHAPE, BT_NATTRS };
enum { BA_AXIS, BA_SIZE, BA_NATTRS };
enum { BL_LHS_AXES, BL_RHS_AXES, BL_NATTRS };
enum { DG_K, DG_AXIS1, DG_AXIS2, DG_NATTRS };

#endif
