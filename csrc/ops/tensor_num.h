/* The schema positions of tensor_num.c's ops, shared with their GPU kernels
 * (kernels/cuda/tensor.cu). Internal to csrc/ops and the kernels. */
#ifndef HG_OPS_TENSOR_NUM_H
#define HG_OPS_TENSOR_NUM_H

/* cumsum, _backward_cumsum */
enum { CS_AXIS, CS_DTYPE, CS_NATTRS };
/* moments, _backward_moments */
enum { MO_AXES, MO_KEEPDIMS, MO_NATTRS };
/* all_finite */
enum { AF_INIT, AF_NATTRS };
/* multi_all_finite */
enum { MAF_NUM, MAF_INIT, MAF_NATTRS };
/* amp_cast; amp_multicast */
enum { AC_DTYPE, AC_NATTRS };
enum { AM_NUM, AM_NARROW, AM_NATTRS };
/* _histogram */
enum { HI_CNT, HI_RANGE, HI_NATTRS };
/* _linspace */
enum { LS_START, LS_STOP, LS_NUM, LS_ENDPOINT, LS_CTX, LS_DTYPE, LS_NATTRS };

#endif
