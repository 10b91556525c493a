/* C-level tests of the predictor API and the lower-level public API, run by tests/test_predict.py
 * (also under valgrind): every bad input gives a non-zero status and a message, never a crash;
 * clones predict concurrently and agree with a single-threaded run.
 *
 *   predict_api_test errors SYMBOL.json PARAMS STRIDE  (a model with input "data" of (2, 5))
 *   predict_api_test threads SYMBOL.json PARAMS IMAGES.bin ITERS  (LeNet, input (1,1,28,28))
 *
 * "errors" prints one line per failed expectation and "checked N" at the end; exit status 0
 * when all held. "threads" prints each image's scores as computed by the threads.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hybridgluon/hybridgluon.h>
#include <hybridgluon/ndlist.h>
#include <hybridgluon/predict.h>

static int g_checked, g_failed;

/* An expectation that a call failed: status non-zero and a message. */
#define EXPECT_FAIL(call)                                                                      \
    do {                                                                                       \
        hg_status st_ = (call);                                                                \
        g_checked++;                                                                           \
        if (st_ == HG_OK || !hg_last_error()[0]) {                                             \
            g_failed++;                                                                        \
            printf("FAIL line %d: %s gave status %d, message '%s'\n", __LINE__, #call,         \
                   (int)st_, hg_last_error());                                                 \
        }                                                                                      \
    } while (0)

#define EXPECT_OK(call)                                                                        \
    do {                                                                                       \
        hg_status st_ = (call);                                                                \
        g_checked++;                                                                           \
        if (st_ != HG_OK) {                                                                    \
            g_failed++;                                                                        \
            printf("FAIL line %d: %s: %s\n", __LINE__, #call, hg_last_error());                \
        }                                                                                      \
    } while (0)

static char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        exit(2);
    }
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, fp) != (size_t)n) exit(2);
    buf[n] = '\0';
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static const int64_t k_shape[2] = {2, 5};

/* Creates from (possibly damaged) buffers; a success must then run and be freed cleanly. A
 * failure must carry a message. Returns 1 if it loaded. */
static int try_load(const char *json, size_t jlen, const void *params, size_t plen)
{
    hg_input_spec in = {"data", 2, k_shape, HG_DTYPE_F32};
    hg_predictor *p = (hg_predictor *)&in; /* must be overwritten (NULL) on failure */
    hg_status st = hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p);
    g_checked++;
    if (st != HG_OK) {
        if (!hg_last_error()[0] || p != NULL) {
            g_failed++;
            printf("FAIL: failed load without a message or with *out set\n");
        }
        return 0;
    }
    /* A damaged file can still be a valid model (a changed weight value, a changed name of a
     * node): it must then run like any other. */
    float x[10] = {0}, y[64];
    int nout = 0;
    size_t nb = 0;
    if (hg_predictor_set_input(p, "data", x, sizeof x) == HG_OK && hg_predictor_forward(p) == HG_OK &&
        hg_predictor_num_outputs(p, &nout) == HG_OK && nout > 0 &&
        hg_predictor_output_nbytes(p, 0, &nb) == HG_OK && nb <= sizeof y)
        hg_predictor_get_output(p, 0, y, nb);
    hg_predictor_free(p);
    return 1;
}

static void damaged_models(const char *json, size_t jlen, const char *params, size_t plen,
                           int stride)
{
    /* Truncations of either file. */
    int loaded = 0;
    for (size_t n = 0; n < jlen; n += (size_t)stride)
        if (strspn(json + n, " \t\r\n") < jlen - n) /* dropping trailing blanks is harmless */
            loaded += try_load(json, n, params, plen);
    for (size_t n = 0; n < plen; n += (size_t)stride) loaded += try_load(json, jlen, params, n);
    if (loaded) {
        g_failed++;
        printf("FAIL: %d truncated models loaded\n", loaded);
    }
    /* Byte corruptions: structural characters and values that break counts and sizes. */
    static const unsigned char subst[] = {0x00, 0xff, '"', '{', ']', '9', '-', 0x7f};
    char *j = malloc(jlen), *pb = malloc(plen);
    for (size_t i = 0; i < jlen; i += (size_t)stride)
        for (size_t s = 0; s < sizeof subst; s++) {
            memcpy(j, json, jlen);
            j[i] = (char)subst[s];
            try_load(j, jlen, params, plen);
        }
    for (size_t i = 0; i < plen; i += (size_t)stride)
        for (size_t s = 0; s < sizeof subst; s++) {
            memcpy(pb, params, plen);
            pb[i] = (char)subst[s];
            try_load(json, jlen, pb, plen);
        }
    free(j);
    free(pb);
}

/* The JSON with every occurrence of from replaced by to (same length or not). */
static char *replace(const char *text, const char *from, const char *to, size_t *len)
{
    size_t n = strlen(text), fl = strlen(from), tl = strlen(to), count = 0;
    for (const char *s = strstr(text, from); s; s = strstr(s + fl, from)) count++;
    char *out = malloc(n + count * (tl > fl ? tl - fl : 0) + 1), *o = out;
    const char *s = text;
    for (const char *hit; (hit = strstr(s, from)); s = hit + fl) {
        memcpy(o, s, (size_t)(hit - s));
        o += hit - s;
        memcpy(o, to, tl);
        o += tl;
    }
    strcpy(o, s);
    *len = strlen(out);
    return out;
}

static void bad_arguments(const char *json, size_t jlen, const char *params, size_t plen,
                          const char *sym_path, const char *params_path)
{
    hg_input_spec in = {"data", 2, k_shape, HG_DTYPE_F32};
    hg_predictor *p = NULL, *q = NULL;
    /* create: NULLs, counts, devices, specs. */
    EXPECT_FAIL(hg_predictor_create(NULL, jlen, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create(json, jlen, NULL, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, 1, &in, NULL));
    EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, 1, NULL, &p));
    EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, -1, &in, &p));
    /* a GPU that does not exist (on any machine) */
    EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_GPU, 99, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, 7, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, -1, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, 0, NULL, &p));
    EXPECT_FAIL(hg_predictor_create(json, jlen, NULL, 0, HG_DEVICE_CPU, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create("", 0, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
    {
        int64_t bad_dims[2] = {2, 4}, neg[2] = {-2, 5}, zero[2] = {0, 5};
        int64_t huge[4] = {1 << 30, 1 << 30, 1 << 30, 1 << 30};
        hg_input_spec specs[] = {
            {NULL, 2, k_shape, HG_DTYPE_F32},    {"data", 2, NULL, HG_DTYPE_F32},
            {"data", -1, k_shape, HG_DTYPE_F32}, {"data", HG_MAX_NDIM + 1, k_shape, HG_DTYPE_F32},
            {"data", 2, k_shape, (hg_dtype)42},  {"data", 2, k_shape, (hg_dtype)-1},
            {"data", 2, bad_dims, HG_DTYPE_F32}, {"data", 2, neg, HG_DTYPE_F32},
            {"data", 2, zero, HG_DTYPE_F32},     {"data", 4, huge, HG_DTYPE_F32},
            {"dat", 2, k_shape, HG_DTYPE_F32},   {"data", 2, k_shape, HG_DTYPE_F64},
            {"data", 1, k_shape, HG_DTYPE_F32},  {"data", 0, NULL, HG_DTYPE_F32},
            /* a parameter named as an input, with a shape it does not have */
            {"hybridsequential0_dense0_bias", 2, k_shape, HG_DTYPE_F32},
        };
        for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
            EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, 1,
                                            &specs[i], &p));
        hg_input_spec twice[2] = {in, in};
        EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, 2, twice, &p));
        hg_input_spec extra[2] = {in, {"nope", 2, k_shape, HG_DTYPE_F32}};
        EXPECT_FAIL(hg_predictor_create(json, jlen, params, plen, HG_DEVICE_CPU, 0, 2, extra, &p));
    }
    /* Unknown operator, a missing parameter, a params list file, unrelated bytes. */
    {
        size_t n;
        char *j = replace(json, "\"FullyConnected\"", "\"FullyConnectedX\"", &n);
        EXPECT_FAIL(hg_predictor_create(j, n, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
        free(j);
        j = replace(json, "\"Activation\"", "\"NoSuchOp\"", &n);
        EXPECT_FAIL(hg_predictor_create(j, n, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
        free(j);
        j = replace(json, "dense1_weight", "dense1_weigh7", &n);
        EXPECT_FAIL(hg_predictor_create(j, n, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
        free(j);
        j = replace(json, "\"act_type\": \"relu\"", "\"act_type\": \"bogus\"", &n);
        EXPECT_FAIL(hg_predictor_create(j, n, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
        free(j);
        j = replace(json, "\"num_hidden\": \"8\"", "\"num_hidden\": \"9\"", &n);
        EXPECT_FAIL(hg_predictor_create(j, n, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
        free(j);
        /* a params list file (no names) */
        hg_ndlist *l = NULL;
        hg_tensor *t = NULL;
        void *buf = NULL;
        size_t blen = 0;
        EXPECT_OK(hg_ndlist_load_bytes(params, plen, &l));
        EXPECT_OK(hg_ndlist_get(l, 0, &t));
        EXPECT_OK(hg_ndlist_save_bytes(1, &t, NULL, &buf, &blen));
        EXPECT_FAIL(hg_predictor_create(json, jlen, buf, blen, HG_DEVICE_CPU, 0, 1, &in, &p));
        hg_buffer_free(buf);
        hg_tensor_free(t);
        hg_ndlist_free(l);
        EXPECT_FAIL(hg_predictor_create(json, jlen, json, jlen, HG_DEVICE_CPU, 0, 1, &in, &p));
        EXPECT_FAIL(hg_predictor_create(params, plen, params, plen, HG_DEVICE_CPU, 0, 1, &in, &p));
    }
    /* create_from_files */
    EXPECT_FAIL(hg_predictor_create_from_files(NULL, params_path, HG_DEVICE_CPU, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create_from_files(sym_path, params_path, HG_DEVICE_CPU, 0, 1, &in,
                                               NULL));
    EXPECT_FAIL(hg_predictor_create_from_files("/nonexistent.json", params_path, HG_DEVICE_CPU,
                                               0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create_from_files(sym_path, "/nonexistent.params", HG_DEVICE_CPU,
                                               0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create_from_files("/", params_path, HG_DEVICE_CPU, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create_from_files(sym_path, "/", HG_DEVICE_CPU, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create_from_files(sym_path, NULL, HG_DEVICE_CPU, 0, 1, &in, &p));
    EXPECT_FAIL(hg_predictor_create_from_files(params_path, sym_path, HG_DEVICE_CPU, 0, 1, &in,
                                               &p));
    EXPECT_FAIL(hg_predictor_create_from_files(sym_path, params_path, HG_DEVICE_GPU, 99, 1, &in,
                                               &p));

    /* A good predictor, then bad calls on it (each must leave it working). */
    EXPECT_OK(hg_predictor_create_from_files(sym_path, params_path, HG_DEVICE_CPU, 0, 1, &in, &p));
    if (!p) return;
    float x[10], y[6], big[20];
    for (int i = 0; i < 10; i++) x[i] = (float)i / 10.0f;
    int n;
    int64_t shape[HG_MAX_NDIM];
    const char *name;
    hg_dtype dt;
    size_t nb;
    EXPECT_FAIL(hg_predictor_set_input(NULL, "data", x, sizeof x));
    EXPECT_FAIL(hg_predictor_set_input(p, NULL, x, sizeof x));
    EXPECT_FAIL(hg_predictor_set_input(p, "data", NULL, sizeof x));
    EXPECT_FAIL(hg_predictor_set_input(p, "dat", x, sizeof x));
    EXPECT_FAIL(hg_predictor_set_input(p, "hybridsequential0_dense0_weight", x, sizeof x));
    EXPECT_FAIL(hg_predictor_set_input(p, "data", x, sizeof x - 4));
    EXPECT_FAIL(hg_predictor_set_input(p, "data", big, sizeof big));
    EXPECT_FAIL(hg_predictor_set_input(p, "data", x, 0));
    EXPECT_FAIL(hg_predictor_forward(NULL));
    EXPECT_FAIL(hg_predictor_num_inputs(NULL, &n));
    EXPECT_FAIL(hg_predictor_num_inputs(p, NULL));
    EXPECT_FAIL(hg_predictor_input_name(p, 1, &name));
    EXPECT_FAIL(hg_predictor_input_name(p, -1, &name));
    EXPECT_FAIL(hg_predictor_input_name(p, 0, NULL));
    EXPECT_FAIL(hg_predictor_input_name(NULL, 0, &name));
    EXPECT_FAIL(hg_predictor_input_shape(p, 0, shape, 1, &n));
    EXPECT_FAIL(hg_predictor_input_shape(p, 0, NULL, 2, &n));
    EXPECT_FAIL(hg_predictor_input_shape(p, 0, shape, 2, NULL));
    EXPECT_FAIL(hg_predictor_input_shape(p, 3, shape, 2, &n));
    EXPECT_FAIL(hg_predictor_input_shape(NULL, 0, shape, 2, &n));
    EXPECT_FAIL(hg_predictor_input_dtype(p, 0, NULL));
    EXPECT_FAIL(hg_predictor_input_dtype(p, 1, &dt));
    EXPECT_FAIL(hg_predictor_input_dtype(NULL, 0, &dt));
    EXPECT_FAIL(hg_predictor_num_outputs(NULL, &n));
    EXPECT_FAIL(hg_predictor_num_outputs(p, NULL));
    EXPECT_FAIL(hg_predictor_output_shape(p, 1, shape, HG_MAX_NDIM, &n));
    EXPECT_FAIL(hg_predictor_output_shape(p, -1, shape, HG_MAX_NDIM, &n));
    EXPECT_FAIL(hg_predictor_output_shape(p, 0, shape, 0, &n));
    EXPECT_FAIL(hg_predictor_output_shape(NULL, 0, shape, HG_MAX_NDIM, &n));
    EXPECT_FAIL(hg_predictor_output_dtype(p, 0, NULL));
    EXPECT_FAIL(hg_predictor_output_dtype(p, 5, &dt));
    EXPECT_FAIL(hg_predictor_output_nbytes(p, 0, NULL));
    EXPECT_FAIL(hg_predictor_output_nbytes(p, 1 << 30, &nb));
    EXPECT_FAIL(hg_predictor_get_output(p, 0, NULL, sizeof y));
    EXPECT_FAIL(hg_predictor_get_output(p, 0, y, sizeof y - 1));
    EXPECT_FAIL(hg_predictor_get_output(p, 0, y, sizeof y + 4));
    EXPECT_FAIL(hg_predictor_get_output(p, 1, y, sizeof y));
    EXPECT_FAIL(hg_predictor_get_output(NULL, 0, y, sizeof y));
    EXPECT_FAIL(hg_predictor_clone(NULL, &q));
    EXPECT_FAIL(hg_predictor_clone(p, NULL));
    {
        int64_t s3[2] = {3, 5}, s_bad[2] = {3, 4}, s_zero[2] = {3, 0};
        hg_input_spec r_bad[] = {{"data", 2, s_bad, HG_DTYPE_F32},
                                 {"data", 2, s_zero, HG_DTYPE_F32},
                                 {"dat", 2, s3, HG_DTYPE_F32},
                                 {NULL, 2, s3, HG_DTYPE_F32},
                                 {"data", 2, NULL, HG_DTYPE_F32},
                                 {"data", 2, s3, (hg_dtype)99},
                                 {"data", 2, s3, HG_DTYPE_I32}};
        for (size_t i = 0; i < sizeof r_bad / sizeof r_bad[0]; i++)
            EXPECT_FAIL(hg_predictor_reshape(p, 1, &r_bad[i]));
        hg_input_spec twice[2] = {{"data", 2, s3, HG_DTYPE_F32}, {"data", 2, s3, HG_DTYPE_F32}};
        EXPECT_FAIL(hg_predictor_reshape(p, 2, twice));
        EXPECT_FAIL(hg_predictor_reshape(p, 1, NULL));
        EXPECT_FAIL(hg_predictor_reshape(p, -1, twice));
        EXPECT_FAIL(hg_predictor_reshape(NULL, 1, twice));
    }
    /* After all that the predictor still works, with its original shapes. */
    EXPECT_OK(hg_predictor_set_input(p, "data", x, sizeof x));
    EXPECT_OK(hg_predictor_forward(p));
    EXPECT_OK(hg_predictor_get_output(p, 0, y, sizeof y));
    EXPECT_OK(hg_predictor_output_shape(p, 0, shape, 2, &n));
    if (n != 2 || shape[0] != 2 || shape[1] != 3) {
        g_failed++;
        printf("FAIL: output shape changed after failed calls\n");
    }
    /* A reshape to batch 3 gives the same rows for the same data; a clone keeps its shapes. */
    EXPECT_OK(hg_predictor_clone(p, &q));
    int64_t s3[2] = {3, 5};
    hg_input_spec r = {"data", 2, s3, HG_DTYPE_F32};
    float x3[15], y3[9], yq[6];
    memcpy(x3, x, sizeof x);
    memcpy(x3 + 10, x, 5 * sizeof(float));
    EXPECT_OK(hg_predictor_reshape(p, 1, &r));
    EXPECT_FAIL(hg_predictor_set_input(p, "data", x, sizeof x));
    EXPECT_OK(hg_predictor_set_input(p, "data", x3, sizeof x3));
    EXPECT_OK(hg_predictor_forward(p));
    EXPECT_OK(hg_predictor_get_output(p, 0, y3, sizeof y3));
    EXPECT_OK(hg_predictor_set_input(q, "data", x, sizeof x));
    EXPECT_OK(hg_predictor_forward(q));
    EXPECT_OK(hg_predictor_get_output(q, 0, yq, sizeof yq));
    if (memcmp(y3, y, sizeof y) != 0 || memcmp(y3 + 6, y, 3 * sizeof(float)) != 0 ||
        memcmp(yq, y, sizeof y) != 0) {
        g_failed++;
        printf("FAIL: reshape or clone changed the results\n");
    }
    hg_predictor_free(p);
    /* The clone outlives the predictor it came from. */
    EXPECT_OK(hg_predictor_forward(q));
    EXPECT_OK(hg_predictor_get_output(q, 0, yq, sizeof yq));
    hg_predictor_free(q);
    hg_predictor_free(NULL);
}

/* The lower-level public API: tensors, ops by name, params. */
static void low_level(const char *params, size_t plen)
{
    hg_tensor *a = NULL, *b = NULL, *outs[4];
    int64_t s[2] = {2, 3}, neg[2] = {2, -3};
    EXPECT_FAIL(hg_tensor_new(2, neg, HG_DTYPE_F32, &a));
    EXPECT_FAIL(hg_tensor_new(-1, s, HG_DTYPE_F32, &a));
    EXPECT_FAIL(hg_tensor_new(HG_MAX_NDIM + 1, s, HG_DTYPE_F32, &a));
    EXPECT_FAIL(hg_tensor_new(2, s, (hg_dtype)17, &a));
    EXPECT_FAIL(hg_tensor_from_data(NULL, 2, s, HG_DTYPE_F32, NULL, NULL, &a));
    EXPECT_OK(hg_tensor_new(2, s, HG_DTYPE_F32, &a));
    EXPECT_OK(hg_tensor_new(2, s, HG_DTYPE_F32, &b));
    float v[6] = {1, 2, 3, 4, 5, 6};
    EXPECT_FAIL(hg_tensor_copy_from(a, v, sizeof v - 1));
    EXPECT_FAIL(hg_tensor_copy_from(NULL, v, sizeof v));
    EXPECT_FAIL(hg_tensor_copy_from(a, NULL, sizeof v));
    EXPECT_FAIL(hg_tensor_copy_to(a, v, sizeof v + 4));
    EXPECT_FAIL(hg_tensor_copy_to(NULL, v, sizeof v));
    EXPECT_OK(hg_tensor_copy_from(a, v, sizeof v));
    EXPECT_OK(hg_tensor_copy_from(b, v, sizeof v));
    hg_tensor *ab[2] = {a, b}, *anull[2] = {a, NULL};
    const char *k[1] = {"axis"}, *val[1] = {"5"}, *kbad[1] = {"no_such_attr"};
    int nout = 4;
    EXPECT_FAIL(hg_op_invoke_str("no_such_op", 2, ab, 0, NULL, NULL, &nout, outs));
    nout = 4;
    EXPECT_FAIL(hg_op_invoke_str(NULL, 2, ab, 0, NULL, NULL, &nout, outs));
    nout = 4;
    EXPECT_FAIL(hg_op_invoke_str("elemwise_add", 2, NULL, 0, NULL, NULL, &nout, outs));
    nout = 4;
    EXPECT_FAIL(hg_op_invoke_str("elemwise_add", 1, ab, 0, NULL, NULL, &nout, outs));
    nout = 4;
    EXPECT_FAIL(hg_op_invoke_str("elemwise_add", 2, anull, 0, NULL, NULL, &nout, outs));
    EXPECT_FAIL(hg_op_invoke_str("elemwise_add", 2, ab, 0, NULL, NULL, NULL, outs));
    nout = 0;
    EXPECT_FAIL(hg_op_invoke_str("elemwise_add", 2, ab, 0, NULL, NULL, &nout, outs));
    nout = 4;
    EXPECT_FAIL(hg_op_invoke_str("sum", 1, ab, 1, k, val, &nout, outs)); /* axis 5 of 2 dims */
    nout = 4;
    EXPECT_FAIL(hg_op_invoke_str("sum", 1, ab, 1, kbad, val, &nout, outs));
    nout = 4;
    EXPECT_FAIL(hg_op_invoke_str("sum", 1, ab, 1, k, NULL, &nout, outs));
    nout = 4;
    EXPECT_OK(hg_op_invoke_str("elemwise_add", 2, ab, 0, NULL, NULL, &nout, outs));
    if (nout == 1) {
        float r[6];
        EXPECT_OK(hg_tensor_copy_to(outs[0], r, sizeof r));
        if (r[5] != 12.0f) {
            g_failed++;
            printf("FAIL: elemwise_add gave %g\n", r[5]);
        }
        hg_tensor_free(outs[0]);
    }
    hg_ndlist *l = NULL;
    hg_tensor *t = NULL;
    void *buf = NULL;
    size_t blen;
    EXPECT_FAIL(hg_ndlist_load_bytes(NULL, 10, &l));
    EXPECT_FAIL(hg_ndlist_load_bytes(params, plen, NULL));
    EXPECT_FAIL(hg_ndlist_load_bytes(params, plen / 2, &l));
    EXPECT_FAIL(hg_ndlist_load_bytes("garbage", 7, &l));
    EXPECT_FAIL(hg_ndlist_load_file(NULL, &l));
    EXPECT_FAIL(hg_ndlist_load_file("/nonexistent.params", &l));
    EXPECT_FAIL(hg_ndlist_save_bytes(1, NULL, NULL, &buf, &blen));
    EXPECT_FAIL(hg_ndlist_save_bytes(2, anull, NULL, &buf, &blen));
    EXPECT_FAIL(hg_ndlist_save_file("/nonexistent-dir/x.params", 1, &a, NULL));
    EXPECT_OK(hg_ndlist_load_bytes(params, plen, &l));
    EXPECT_FAIL(hg_ndlist_get(l, -1, &t));
    EXPECT_FAIL(hg_ndlist_get(l, hg_ndlist_count(l), &t));
    EXPECT_OK(hg_ndlist_save_bytes(2, ab, (const char *const[]){"a", "b"}, &buf, &blen));
    hg_buffer_free(buf);
    hg_ndlist_free(l);
    hg_tensor_free(a);
    hg_tensor_free(b);
}

/* ---- threads ---------------------------------------------------------------------------- */

typedef struct {
    hg_predictor *p;
    const float *image;
    float expect[10], got[10];
    int iters, mismatches;
    hg_status st;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    for (int i = 0; i < j->iters && j->st == HG_OK; i++) {
        if ((j->st = hg_predictor_set_input(j->p, "data", j->image, 784 * sizeof(float))) ||
            (j->st = hg_predictor_forward(j->p)) ||
            (j->st = hg_predictor_get_output(j->p, 0, j->got, sizeof j->got)))
            break;
        for (int c = 0; c < 10; c++)
            if (fabsf(j->got[c] - j->expect[c]) > 1e-6f) {
                j->mismatches++;
                break;
            }
    }
    return NULL;
}

static int threads(const char *sym, const char *params, const char *images, int iters)
{
    size_t n;
    float *img = (float *)read_all(images, &n);
    if (n != 2 * 784 * sizeof(float)) {
        printf("threads: need two images\n");
        return 2;
    }
    int64_t shape[4] = {1, 1, 28, 28};
    hg_input_spec in = {"data", 4, shape, HG_DTYPE_F32};
    hg_predictor *base = NULL;
    job jobs[2];
    memset(jobs, 0, sizeof jobs);
    if (hg_predictor_create_from_files(sym, params, HG_DEVICE_CPU, 0, 1, &in, &base)) {
        printf("create: %s\n", hg_last_error());
        return 1;
    }
    /* Expected results, one image at a time on the original predictor. */
    for (int t = 0; t < 2; t++) {
        jobs[t].image = img + t * 784;
        jobs[t].iters = iters;
        if (hg_predictor_set_input(base, "data", jobs[t].image, 784 * sizeof(float)) ||
            hg_predictor_forward(base) ||
            hg_predictor_get_output(base, 0, jobs[t].expect, sizeof jobs[t].expect) ||
            hg_predictor_clone(base, &jobs[t].p)) {
            printf("setup: %s\n", hg_last_error());
            return 1;
        }
    }
    hg_predictor_free(base); /* the clones keep the weights */
    pthread_t tid[2];
    for (int t = 0; t < 2; t++) pthread_create(&tid[t], NULL, run_job, &jobs[t]);
    for (int t = 0; t < 2; t++) pthread_join(tid[t], NULL);
    int rc = 0;
    for (int t = 0; t < 2; t++) {
        if (jobs[t].st) {
            printf("thread %d: %s\n", t, hg_last_error());
            rc = 1;
        }
        printf("thread %d: mismatches %d of %d\n", t, jobs[t].mismatches, iters);
        printf("image %d: scores", t);
        for (int c = 0; c < 10; c++) printf(" %.9g", jobs[t].got[c]);
        printf("\n");
        rc |= jobs[t].mismatches != 0;
        hg_predictor_free(jobs[t].p);
    }
    free(img);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "errors") == 0) {
        size_t jlen, plen;
        char *json = read_all(argv[2], &jlen), *params = read_all(argv[3], &plen);
        int stride = atoi(argv[4]) > 0 ? atoi(argv[4]) : 1;
        bad_arguments(json, jlen, params, plen, argv[2], argv[3]);
        low_level(params, plen);
        damaged_models(json, jlen, params, plen, stride);
        free(json);
        free(params);
        printf("checked %d, failed %d\n", g_checked, g_failed);
        return g_failed != 0;
    }
    if (argc == 6 && strcmp(argv[1], "threads") == 0)
        return threads(argv[2], argv[3], argv[4], atoi(argv[5]));
    fprintf(stderr, "usage: %s errors SYMBOL PARAMS STRIDE | threads SYMBOL PARAMS IMAGES ITERS\n",
            argv[0]);
    return 2;
}
