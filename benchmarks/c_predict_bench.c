/* Forward latency of an exported model through the C predictor (hybridgluon/predict.h).
 *
 *     c_predict_bench SYMBOL.json PARAMS NUMBER REPEATS DIM0 [DIM1 ...]
 *
 * The input "data" has shape (DIM0, DIM1, ...) and holds fixed pseudo-random values. After a
 * warm-up, REPEATS rounds each time NUMBER calls; a round's time / NUMBER is one sample. Prints
 * the medians in microseconds of two loops: forward alone, and set_input + forward +
 * get_output (what a caller with fresh data each time pays). benchmarks/bench_predict.py
 * builds and runs this program.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hybridgluon/predict.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int fail(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, hg_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s SYMBOL PARAMS NUMBER REPEATS DIM0 [DIM1 ...]\n", argv[0]);
        return 2;
    }
    int number = atoi(argv[3]), repeats = atoi(argv[4]), ndim = argc - 5;
    if (number < 1 || repeats < 1 || ndim > HG_MAX_NDIM) {
        fprintf(stderr, "bad NUMBER, REPEATS or too many dims\n");
        return 2;
    }
    int64_t shape[HG_MAX_NDIM];
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        shape[d] = atoll(argv[5 + d]);
        count *= (size_t)shape[d];
    }
    hg_input_spec in = {"data", ndim, shape, HG_DTYPE_F32};
    hg_predictor *p = NULL;
    if (hg_predictor_create_from_files(argv[1], argv[2], HG_DEVICE_CPU, 0, 1, &in, &p))
        return fail("create");
    float *x = malloc(count * sizeof(float));
    size_t out_bytes = 0;
    if (!x || hg_predictor_output_nbytes(p, 0, &out_bytes)) return fail("setup");
    float *y = malloc(out_bytes);
    unsigned seed = 12345;
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    if (!y || hg_predictor_set_input(p, "data", x, count * sizeof(float))) return fail("input");
    /* Warm-up: the first forward makes the plan; then caches and the thread pool settle. At
     * least half a second: OpenBLAS starts its own threads when the library loads and they
     * spin before they go to sleep (we never give them work: our pool splits the products),
     * slowing our threads down meanwhile (measured on the 2-core machine: the first 2000
     * forwards of the MLP took 34 us each, later ones 8 us; with OPENBLAS_NUM_THREADS=1, 8 us
     * from the start). That is a cost of a process's start, not of a forward in a running
     * one. */
    double w0 = now();
    for (int i = 0; i < number / 10 + 10 || now() - w0 < 0.5; i++)
        if (hg_predictor_forward(p)) return fail("forward");
    double *fwd = malloc(sizeof(double) * (size_t)repeats);
    double *full = malloc(sizeof(double) * (size_t)repeats);
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        for (int i = 0; i < number; i++) hg_predictor_forward(p);
        double t1 = now();
        for (int i = 0; i < number; i++) {
            hg_predictor_set_input(p, "data", x, count * sizeof(float));
            hg_predictor_forward(p);
            hg_predictor_get_output(p, 0, y, out_bytes);
        }
        double t2 = now();
        fwd[r] = (t1 - t0) / number * 1e6;
        full[r] = (t2 - t1) / number * 1e6;
    }
    printf("forward_us %.4f\nfull_us %.4f\nout0 %.9g\n", median(fwd, repeats),
           median(full, repeats), y[0]);
    free(fwd);
    free(full);
    free(x);
    free(y);
    hg_predictor_free(p);
    return 0;
}
