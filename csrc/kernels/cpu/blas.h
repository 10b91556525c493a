/* The BLAS we link: scipy-openblas32 from PyPI by default (symbols prefixed scipy_), or a system
 * OpenBLAS/CBLAS when built with HG_SYSTEM_BLAS=1. Kernels call HG_CBLAS(sgemm)(...). The BLAS is
 * set to one thread: our pool splits large products (gemm.c), so that its threads never spin beside
 * the BLAS's own. */
#ifndef HG_KERNELS_BLAS_H
#define HG_KERNELS_BLAS_H

#include <cblas.h>

#ifdef HG_SYSTEM_BLAS
#define HG_CBLAS(name) cblas_##name
void openblas_set_num_threads(int n) __attribute__((weak));
static inline void hg_blas_set_threads(int n)
{
    if (openblas_set_num_threads) openblas_set_num_threads(n);
}
#else
#define HG_CBLAS(name) scipy_cblas_##name
static inline void hg_blas_set_threads(int n) { scipy_openblas_set_num_threads(n); }
#endif

#endif
