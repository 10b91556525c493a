/* The timer of benchmarks/bench_gemm.py: hg_gemm_f32 called back to back in C, so that products
 * of a few microseconds are timed without Python's call overhead or the scheduler's
 * interruptions. Not part of the library: bench_gemm.py links it with the objects of the last
 * `python setup.py build_ext` (build/temp.*) into a private shared library, so the kernels timed
 * are the very ones the library was built from. It exports only the bench_* entry points below
 * (default visibility), whatever the library's objects hide. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "hybridgluon/hybridgluon.h"
#include "kernels/cpu/gemm.h"

#define BENCH_API __attribute__((visibility("default")))

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds per call of hg_gemm_f32 with these arguments over `samples` timed groups of
 * back-to-back calls (-1 when out of memory). */
BENCH_API double bench_gemm_time_f32(int64_t samples, bool ta, bool tb, int64_t M, int64_t N,
                                     int64_t K, float alpha, const float *A, int64_t lda,
                                     const float *B, int64_t ldb, float beta, float *C,
                                     int64_t ldc)
{
    /* Samples of at least ~5 us each (a clock read costs tens of ns); the median, so that a
     * sample the scheduler interrupted does not count. */
    if (samples < 1) samples = 1;
    double *t = malloc(sizeof(double) * (size_t)samples);
    if (!t) return -1;
    double t0 = now_s();
    hg_gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    double one = now_s() - t0;
    int64_t group = one > 5e-6 ? 1 : (one < 5e-9 ? 1000 : (int64_t)(5e-6 / one) + 1);
    for (int64_t s = 0; s < samples; s++) {
        t0 = now_s();
        for (int64_t r = 0; r < group; r++)
            hg_gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        t[s] = (now_s() - t0) / (double)group;
    }
    qsort(t, (size_t)samples, sizeof(double), cmp_double);
    double med = t[samples / 2];
    free(t);
    return med;
}

/* The kernel set for small-side products (gemm.h's HG_GEMM_KERNEL_*; -1: the best); returns
 * the one now in effect. */
BENCH_API int bench_gemm_set_kernel(int level) { return hg_gemm_set_kernel(level); }

BENCH_API void bench_set_num_threads(int n) { hg_set_num_threads(n); }

BENCH_API int bench_get_num_threads(void) { return hg_get_num_threads(); }
