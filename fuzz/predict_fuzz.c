/* libFuzzer harness over the predictor's loading path: symbol JSON + params bytes + an input
 * shape go through hg_predictor_create (or _create_from_files), and a model that loads is run,
 * cloned and reshaped. Any crash, sanitizer report or leak is a finding; a failure status is
 * the expected answer to bad input (it must come with a message).
 *
 * Input layout (see fuzz/README.md; fuzz/make_corpus.py writes seeds in it):
 *   byte 0        flags: 1 forward, 2 clone + forward, 4 reshape to batch + 1, 8 load from files
 *   byte 1        ndim of the input "data" (taken mod 5)
 *   ndim bytes    its dims (0 reads as 1)
 *   4 bytes       json_len, little-endian (clamped to what remains)
 *   json_len      the symbol JSON
 *   rest          the params file
 *
 * Build with clang -fsanitize=fuzzer,address (fuzz/Makefile); -DHG_FUZZ_STANDALONE builds a
 * plain program that runs the files named on its command line once each (for tests and
 * reproducing a finding without libFuzzer).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hybridgluon/predict.h>

#define MAX_INPUT_ELEMS (1 << 16)

static int g_verbose; /* standalone runs say what happened to each input */

static void check_failed(hg_status st, const char *what)
{
    if (st != HG_OK && hg_last_error()[0] == '\0') {
        fprintf(stderr, "%s failed (status %d) without a message\n", what, (int)st);
        abort();
    }
}

/* Runs what a caller would run on a loaded model; every failure must carry a message. */
static void exercise(hg_predictor *p, unsigned flags)
{
    int nin = 0, nout = 0;
    check_failed(hg_predictor_num_inputs(p, &nin), "num_inputs");
    check_failed(hg_predictor_num_outputs(p, &nout), "num_outputs");
    int64_t shape[HG_MAX_NDIM];
    int ndim = 0;
    hg_status st = hg_predictor_input_shape(p, 0, shape, HG_MAX_NDIM, &ndim);
    check_failed(st, "input_shape");
    if (flags & 1) {
        check_failed(hg_predictor_forward(p), "forward");
        for (int i = 0; i < nout; i++) {
            size_t nb = 0;
            check_failed(hg_predictor_output_nbytes(p, i, &nb), "output_nbytes");
            void *buf = malloc(nb ? nb : 1);
            if (buf) check_failed(hg_predictor_get_output(p, i, buf, nb), "get_output");
            free(buf);
        }
    }
    if (flags & 2) {
        hg_predictor *q = NULL;
        st = hg_predictor_clone(p, &q);
        check_failed(st, "clone");
        if (st == HG_OK) check_failed(hg_predictor_forward(q), "clone forward");
        hg_predictor_free(q);
    }
    if ((flags & 4) && st == HG_OK && ndim > 0 && shape[0] < 64) {
        shape[0] += 1;
        hg_input_spec r = {"data", ndim, shape, HG_DTYPE_F32};
        st = hg_predictor_reshape(p, 1, &r);
        check_failed(st, "reshape");
        if (st == HG_OK && (flags & 1)) check_failed(hg_predictor_forward(p), "forward");
    }
}

/* A memory-backed regular file for the from-files path; its /proc path goes into path. */
static int memfile(const char *name, const uint8_t *data, size_t len, char *path, size_t cap)
{
    int fd = memfd_create(name, 0);
    if (fd < 0) return -1;
    if (len && write(fd, data, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    hg_set_num_threads(1); /* deterministic and fast runs */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    unsigned flags = data[0];
    int ndim = data[1] % 5;
    size_t pos = 2;
    if (size < pos + (size_t)ndim + 4) return 0;
    int64_t shape[4];
    int64_t elems = 1;
    for (int d = 0; d < ndim; d++) {
        shape[d] = data[pos + (size_t)d] ? data[pos + (size_t)d] : 1;
        elems *= shape[d];
    }
    if (elems > MAX_INPUT_ELEMS) return 0;
    pos += (size_t)ndim;
    size_t jlen = (size_t)data[pos] | (size_t)data[pos + 1] << 8 | (size_t)data[pos + 2] << 16 |
                  (size_t)data[pos + 3] << 24;
    pos += 4;
    if (jlen > size - pos) jlen = size - pos;
    const char *json = (const char *)data + pos;
    const uint8_t *params = data + pos + jlen;
    size_t plen = size - pos - jlen;

    hg_input_spec in = {"data", ndim, shape, HG_DTYPE_F32};
    hg_predictor *p = NULL;
    hg_status st;
    if (flags & 8) {
        char jpath[64], ppath[64];
        int jfd = memfile("symbol", (const uint8_t *)json, jlen, jpath, sizeof jpath);
        int pfd = memfile("params", params, plen, ppath, sizeof ppath);
        if (jfd < 0 || pfd < 0) {
            if (jfd >= 0) close(jfd);
            if (pfd >= 0) close(pfd);
            return 0;
        }
        st = hg_predictor_create_from_files(jpath, ppath, HG_DEVICE_CPU, 0, 1, &in, &p);
        close(jfd);
        close(pfd);
    } else {
        /* A copy of exactly jlen bytes, so reading past the JSON is caught by ASan. */
        char *j = malloc(jlen ? jlen : 1);
        if (!j) return 0;
        memcpy(j, json, jlen);
        st = hg_predictor_create(j, jlen, plen ? params : NULL, plen, HG_DEVICE_CPU, 0, 1, &in,
                                 &p);
        free(j);
    }
    check_failed(st, "create");
    if (g_verbose) printf("create: %s\n", st == HG_OK ? "ok" : hg_last_error());
    if (st != HG_OK && p != NULL) {
        fprintf(stderr, "create failed but set *out\n");
        abort();
    }
    if (st == HG_OK) exercise(p, flags);
    hg_predictor_free(p);
    return 0;
}

#ifdef HG_FUZZ_STANDALONE
int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    g_verbose = 1;
    for (int i = 1; i < argc; i++) {
        FILE *fp = fopen(argv[i], "rb");
        if (!fp) {
            perror(argv[i]);
            return 2;
        }
        fseek(fp, 0, SEEK_END);
        long n = ftell(fp);
        fseek(fp, 0, SEEK_SET);
        uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
        if (!buf || fread(buf, 1, (size_t)n, fp) != (size_t)n) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            return 2;
        }
        fclose(fp);
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        free(buf);
        printf("ran %s\n", argv[i]);
    }
    return 0;
}
#endif
