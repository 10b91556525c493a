/* The gradient of a chain of n element-wise ops (x * 1.0001 and sin, alternating), taken
 * hybridized (one cached op, recorded as one tape node, then its planned backward) or op by op
 * on the tape. tests/test_graph_scale.py runs it under callgrind for two sizes: the
 * instruction counts show whether tracing-free graph work (analysis, gradient graph, lowering)
 * grows linearly with the graph. Uses the core's internal headers (csrc/).
 *
 * Usage: graph_scale hybrid|imperative N   (prints the gradient's first element) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/op.h"
#include "exec/cachedop.h"
#include "graph/symbol.h"

#define CHECK(call)                                                                            \
    do {                                                                                       \
        if ((call) != HG_OK) {                                                                 \
            fprintf(stderr, "%s: %s\n", #call, hg_last_error());                               \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static const char *const k_scalar[] = {"scalar"}, *const k_value[] = {"1.0001"};

static hg_tensor *hybrid(hg_tensor *x, int n)
{
    hg_symbol *cur;
    CHECK(hg_symbol_var("data", 0, NULL, NULL, &cur));
    const hg_op_def *mul = hg_op_find("_mul_scalar"), *sin_ = hg_op_find("sin");
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "op%d", i);
        hg_symbol *next;
        if (i % 2)
            CHECK(hg_symbol_op(sin_, name, 0, NULL, NULL, 1, (const hg_symbol *const *)&cur,
                               &next));
        else
            CHECK(hg_symbol_op(mul, name, 1, k_scalar, k_value, 1,
                               (const hg_symbol *const *)&cur, &next));
        hg_symbol_free(cur);
        cur = next;
    }
    const char *names[] = {"data"};
    hg_cachedop *c;
    CHECK(hg_cachedop_create(cur, 1, names, 0, &c));
    hg_symbol_free(cur);
    hg_tensor *out = NULL;
    CHECK(hg_cachedop_call(c, &x, &out));
    hg_cachedop_release(c);
    return out;
}

/* Each op runs and is recorded as the Python binding does (hg_op_run, then hg_ag_record). */
static hg_tensor *imperative(hg_tensor *x, int n)
{
    const hg_op_def *mul = hg_op_find("_mul_scalar"), *sin_ = hg_op_find("sin");
    hg_attrs am, as;
    hg_attrs_set_defaults(mul, &am);
    CHECK(hg_attr_parse(mul, hg_attr_index(mul, "scalar"), k_value[0], &am));
    CHECK(hg_attrs_finish(mul, &am));
    hg_attrs_set_defaults(sin_, &as);
    CHECK(hg_attrs_finish(sin_, &as));
    hg_tensor *cur = x;
    hg_tensor_retain(cur);
    for (int i = 0; i < n; i++) {
        const hg_op_def *op = i % 2 ? sin_ : mul;
        const hg_attrs *a = i % 2 ? &as : &am;
        hg_tensor *next = NULL;
        CHECK(hg_op_run(op, a, true, 1, &cur, 1, &next));
        CHECK(hg_ag_record(op, a, 1, &cur, 1, &next, NULL, NULL, NULL));
        hg_tensor_free(cur);
        cur = next;
    }
    return cur;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s hybrid|imperative N\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    int64_t shape[1] = {4};
    hg_tensor *x, *g;
    CHECK(hg_tensor_new(1, shape, HG_DTYPE_F32, &x));
    CHECK(hg_tensor_new(1, shape, HG_DTYPE_F32, &g));
    float *xd = hg_tensor_data(x);
    for (int i = 0; i < 4; i++) xd[i] = 1.0f;
    CHECK(hg_ag_mark_variable(x, g, 1));
    hg_ag_set_recording(true);
    hg_ag_set_training(true);
    hg_tensor *y = strcmp(argv[1], "hybrid") == 0 ? hybrid(x, n) : imperative(x, n);
    hg_ag_set_recording(false);
    CHECK(hg_ag_backward(1, &y, NULL, 0, NULL, false, false, true, NULL));
    printf("%.9g\n", ((float *)hg_tensor_data(g))[0]);
    hg_tensor_free(y);
    hg_tensor_free(x);
    hg_tensor_free(g);
    return 0;
}
