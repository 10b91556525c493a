/* Schema positions of the linalg ops' attributes (the schemas are in ops/linalg.h), shared with
 * their GPU kernels (kernels/cuda/linalg.cu), which cannot include linalg.h (it is C with CBLAS
 * and LAPACK glue). Internal to csrc/ops and the kernels. */
#ifndef HG_OPS_LINALG_ATTRS_H
#define HG_OPS_LINALG_ATTRS_H

/* _linalg_gemm and its _backward_ op; gemm2's (no beta) below. An op tells them apart by its
 * attribute count. */
enum { K_TA, K_TB, K_ALPHA, K_BETA, K_AXIS, K_GEMM_NATTRS };
enum { K2_TA, K2_TB, K2_ALPHA, K2_AXIS, K_GEMM2_NATTRS };
/* potrf, potri */
enum { K_LOWER, K_CHOL_NATTRS };
/* trmm, trsm */
enum { K_TRANS, K_RIGHT, K_TLOWER, K_TALPHA, K_TRI_NATTRS };
/* syrk */
enum { K_STRANS, K_SALPHA, K_SYRK_NATTRS };
/* extractdiag / makediag (offset only), extracttrian / maketrian */
enum { K_OFFSET, K_DLOWER, K_DIAG_NATTRS };

#endif
