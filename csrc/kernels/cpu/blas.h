/* The BLAS we link: scipy-openblas32 from PyPI by default (symbols prefixed scipy_), or a system
 * OpenBLAS/CBLAS when built with HG_SYSTEM_BLAS=1. Kernels call HG_CBLAS(sgemm)(...). The BLAS is
 * set to one thread before its first call (whatever hg_set_num_threads says): our pool splits large
 * products (gemm.c), so that its threads never spin beside the BLAS's own. The setting lives here,
 * in the kernels layer, not in the pool (core knows no BLAS). */
#ifndef HG_KERNELS_BLAS_H
#define HG_KERNELS_BLAS_H

#include <cblas.h>
#include <pthread.h>

#ifdef HG_SYSTEM_BLAS
#define HG_CBLAS_NAME(name) cblas_##name
void openblas_set_num_threads(int n) __attribute__((weak));
static inline void hg_blas_set_threads(int n)
{
    if (openblas_set_num_threads) openblas_set_num_threads(n);
}
#else
#define HG_CBLAS_NAME(name) scipy_cblas_##name
static inline void hg_blas_set_threads(int n) { scipy_openblas_set_num_threads(n); }
#endif

static void hg_blas_one_thread(void) { hg_blas_set_threads(1); }

/* Once per process (a fork's child inherits the setting), before the first BLAS call. */
static inline void hg_blas_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, hg_blas_one_thread);
}

#define HG_CBLAS(name) (hg_blas_init(), HG_CBLAS_NAME(name))

#endif
