/* Schema positions of the matrix products (matrix.c), shared with their GPU kernels
 * (kernels/cuda/blas.cu). Internal to csrc/ops and the kernels. */
#ifndef HG_OPS_MATRIX_H
#define HG_OPS_MATRIX_H

/* dot, batch_dot and their _backward_ ops. */
enum { K_TA, K_TB, K_FSTYPE, K_DOT_NATTRS };
/* FullyConnected and _backward_FullyConnected. */
enum { K_NUM_HIDDEN, K_NO_BIAS, K_FLATTEN, K_FC_NATTRS };
/* The backward schemas: the forward's three attributes, then wrt. */
enum { K_WRT = 3, K_BWD_NATTRS };

#endif
