/* What the indexing ops (indexing.c) share with their GPU kernels (kernels/cuda/index.cu): the
 * schema positions, the take/pick modes and the host-side conversion of attribute values.
 * Internal to csrc/. */
#ifndef HG_OPS_INDEXING_H
#define HG_OPS_INDEXING_H

#include "hybridgluon/hybridgluon.h"

enum { MODE_CLIP, MODE_WRAP, MODE_RAISE, MODE_NMODES };
enum { TK_AXIS, TK_MODE, TK_NATTRS };
enum { PK_AXIS, PK_KEEPDIMS, PK_MODE, PK_NATTRS };
enum { OH_DEPTH, OH_ON, OH_OFF, OH_DTYPE, OH_NATTRS };
enum { CL_MIN, CL_MAX, CL_NATTRS };
enum { EM_INPUT_DIM, EM_OUTPUT_DIM, EM_DTYPE, EM_SPARSE_GRAD, EM_NATTRS };
enum { SM_USE_LEN, SM_VALUE, SM_AXIS, SM_NATTRS };

/* Stores v in element 0 of dst (at least 8 bytes) as dtype dt. Integers saturate (a C cast of an
 * out-of-range double is undefined), NaN gives 0; bool is v != 0. */
void hg_index_store_value(void *dst, hg_dtype dt, double v);

#endif
