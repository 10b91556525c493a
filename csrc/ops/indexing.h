/* Schema positions and enum values of the indexing ops (indexing.c), shared with their GPU
 * kernels (kernels/cuda/index.cu). Internal to csrc/. */
#ifndef HG_OPS_INDEXING_H
#define HG_OPS_INDEXING_H

enum { MODE_CLIP, MODE_WRAP, MODE_RAISE, MODE_NMODES };
enum { TK_AXIS, TK_MODE, TK_NATTRS };
enum { PK_AXIS, PK_KEEPDIMS, PK_MODE, PK_NATTRS };
enum { OH_DEPTH, OH_ON, OH_OFF, OH_DTYPE, OH_NATTRS };
enum { CL_MIN, CL_MAX, CL_NATTRS };
enum { EM_INPUT_DIM, EM_OUTPUT_DIM, EM_DTYPE, EM_SPARSE_GRAD, EM_NATTRS };
enum { SM_USE_LEN, SM_VALUE, SM_AXIS, SM_NATTRS };

#endif
