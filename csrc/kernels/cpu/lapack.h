/* The LAPACK routines the linalg ops use, from the OpenBLAS we link (kernels/cpu/blas.h): the
 * Fortran entry points of scipy-openblas32 (prefixed scipy_) or of a system OpenBLAS
 * (HG_SYSTEM_BLAS=1). They are column-major and take 32-bit sizes; callers check that sizes fit
 * in their shape rule and pass row-major data as the transposed column-major matrix. Character
 * arguments carry gfortran's hidden length arguments at the end, as LAPACKE passes them. Each
 * wrapper returns LAPACK's info (0: success; > 0: a numerical failure the caller reports; < 0: an
 * illegal argument, which is a bug here). hg_blas_init() runs first so that LAPACK's BLAS calls
 * stay on one thread like ours. Thread-safe; nothing is allocated: work arrays come from the
 * caller, sized by the *_lwork helpers. */
#ifndef HG_KERNELS_CPU_LAPACK_H
#define HG_KERNELS_CPU_LAPACK_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/blas.h"

#ifdef HG_SYSTEM_BLAS
#define HG_LAPACK_NAME(name) name##_
#else
#define HG_LAPACK_NAME(name) scipy_##name##_
#endif

/* A pointer to a size, leading dimension or work length (Fortran passes by reference). */
typedef const int *hg_lapack_ip;
#define HG_LAPACK_DECLARE(P, T)                                                                 \
    void HG_LAPACK_NAME(P##potrf)(const char *uplo, hg_lapack_ip n, T *a, hg_lapack_ip lda,      \
                                  int *info, size_t luplo);                                     \
    void HG_LAPACK_NAME(P##potri)(const char *uplo, hg_lapack_ip n, T *a, hg_lapack_ip lda,      \
                                  int *info, size_t luplo);                                     \
    void HG_LAPACK_NAME(P##getrf)(hg_lapack_ip m, hg_lapack_ip n, T *a, hg_lapack_ip lda,        \
                                  int *ipiv, int *info);                                        \
    void HG_LAPACK_NAME(P##getri)(hg_lapack_ip n, T *a, hg_lapack_ip lda, hg_lapack_ip ipiv,     \
                                  T *work, hg_lapack_ip lwork, int *info);                      \
    void HG_LAPACK_NAME(P##geqrf)(hg_lapack_ip m, hg_lapack_ip n, T *a, hg_lapack_ip lda,        \
                                  T *tau, T *work, hg_lapack_ip lwork, int *info);              \
    void HG_LAPACK_NAME(P##orgqr)(hg_lapack_ip m, hg_lapack_ip n, hg_lapack_ip k, T *a,          \
                                  hg_lapack_ip lda, const T *tau, T *work, hg_lapack_ip lwork,  \
                                  int *info);                                                   \
    void HG_LAPACK_NAME(P##syevd)(const char *jobz, const char *uplo, hg_lapack_ip n, T *a,      \
                                  hg_lapack_ip lda, T *w, T *work, hg_lapack_ip lwork,          \
                                  int *iwork, hg_lapack_ip liwork, int *info, size_t ljobz,     \
                                  size_t luplo);
HG_LAPACK_DECLARE(s, float)
HG_LAPACK_DECLARE(d, double)
#undef HG_LAPACK_DECLARE

/* Work sizes (in elements) that suffice for the routines below on an n-column problem: LAPACK's
 * documented minimum, times a block size for the blocked routines (a smaller work array only
 * makes them fall back to unblocked code, never wrong). */
#define HG_LAPACK_NB 64
static inline int64_t hg_lapack_lwork_blocked(int64_t n) { return (n > 1 ? n : 1) * HG_LAPACK_NB; }
static inline int64_t hg_lapack_lwork_syevd(int64_t n) { return 1 + 6 * n + 2 * n * n; }
static inline int64_t hg_lapack_liwork_syevd(int64_t n) { return 3 + 5 * n; }

/* float (dbl == 0) or double (dbl != 0) versions, on void pointers. */
#define HG_LAPACK_CALL(dbl, name, ...)                                                          \
    (hg_blas_init(), (dbl) ? HG_LAPACK_NAME(d##name)(__VA_ARGS__)                               \
                           : HG_LAPACK_NAME(s##name)(__VA_ARGS__))

static inline int hg_lapack_potrf(int dbl, char uplo, int n, void *a, int lda)
{
    int info = 0;
    HG_LAPACK_CALL(dbl, potrf, &uplo, &n, a, &lda, &info, 1);
    return info;
}

static inline int hg_lapack_potri(int dbl, char uplo, int n, void *a, int lda)
{
    int info = 0;
    HG_LAPACK_CALL(dbl, potri, &uplo, &n, a, &lda, &info, 1);
    return info;
}

static inline int hg_lapack_getrf(int dbl, int m, int n, void *a, int lda, int *ipiv)
{
    int info = 0;
    HG_LAPACK_CALL(dbl, getrf, &m, &n, a, &lda, ipiv, &info);
    return info;
}

static inline int hg_lapack_getri(int dbl, int n, void *a, int lda, const int *ipiv, void *work,
                                  int lwork)
{
    int info = 0;
    HG_LAPACK_CALL(dbl, getri, &n, a, &lda, ipiv, work, &lwork, &info);
    return info;
}

static inline int hg_lapack_geqrf(int dbl, int m, int n, void *a, int lda, void *tau, void *work,
                                  int lwork)
{
    int info = 0;
    HG_LAPACK_CALL(dbl, geqrf, &m, &n, a, &lda, tau, work, &lwork, &info);
    return info;
}

static inline int hg_lapack_orgqr(int dbl, int m, int n, int k, void *a, int lda, const void *tau,
                                  void *work, int lwork)
{
    int info = 0;
    HG_LAPACK_CALL(dbl, orgqr, &m, &n, &k, a, &lda, tau, work, &lwork, &info);
    return info;
}

/* Eigenvalues (ascending) into w and eigenvectors into a's columns. */
static inline int hg_lapack_syevd(int dbl, char uplo, int n, void *a, int lda, void *w, void *work,
                                  int lwork, int *iwork, int liwork)
{
    int info = 0;
    char jobz = 'V';
    HG_LAPACK_CALL(dbl, syevd, &jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1,
                   1);
    return info;
}

#endif
