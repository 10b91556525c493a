/* The schema positions of tensor_num.c's ops and the erfinv it computes, shared with their GPU
 * kernels (kernels/cuda/tensor_num.cu). Internal to csrc/ops and the kernels. */
#ifndef HG_OPS_TENSOR_NUM_H
#define HG_OPS_TENSOR_NUM_H

#include <math.h>

#ifndef HG_HD /* host and device in nvcc's compile (as ops/ew_list.h) */
#ifdef __CUDACC__
#define HG_HD __host__ __device__
#else
#define HG_HD
#endif
#endif

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

/* erfinv: Giles' single-precision approximation refined by two Newton steps on erf. One
 * definition for the CPU op (tensor_num.c) and its GPU kernel (kernels/cuda/tensor_num.cu). */
static inline HG_HD double hg_erfinv(double y)
{
    if (y != y || y < -1 || y > 1) return NAN;
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        double p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
        x = p * y;
    } else {
        w = sqrt(w) - 3.0;
        double p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
        x = p * y;
    }
    for (int k = 0; k < 2; k++) {
        double e = erf(x) - y, d = 1.1283791670955126 * exp(-x * x);
        if (d == 0) break;
        x -= e / d;
    }
    return x;
}

#endif
