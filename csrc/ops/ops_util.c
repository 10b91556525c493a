/* Helpers shared by the op families (see ops_util.h). */
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "ops/ops_util.h"

typedef struct {
    char *p;
} zero_job;

static void zero_range(void *ctx, int64_t b, int64_t e)
{
    memset(((zero_job *)ctx)->p + b, 0, (size_t)(e - b));
}

void hg_ops_zero_fill(hg_tensor *t)
{
    zero_job j = {hg_data(t)};
    hg_parallel_for((int64_t)hg_tensor_nbytes(t), 1 << 18, zero_range, &j);
}

hg_status hg_ops_adjoint_grad(hg_grad_ctx *g, const char *name, bool with_in0)
{
    hg_sentry r;
    if (with_in0) hg_g_op_fwd_attrs(g, name, HG_GIN(hg_g_ograd(g, 0), hg_g_in(g, 0)), NULL, 1, &r);
    else hg_g_op_fwd_attrs(g, name, HG_GIN(hg_g_ograd(g, 0)), NULL, 1, &r);
    hg_g_set(g, 0, r);
    return hg_g_status(g);
}

int hg_ops_parse_floats(const hg_op_def *op, const char *attr, const char *text, float *v, int max,
                        bool min_one)
{
    int n = 0;
    const char *p = text;
    while (*p == ' ' || *p == '(' || *p == '[') p++;
    while (*p && *p != ')' && *p != ']') {
        char *end;
        double d = strtod(p, &end);
        if (end == p || n == max) goto bad;
        v[n++] = (float)d;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        while (*p == ' ') p++;
    }
    if (*p) p++;
    while (*p == ' ') p++;
    if (*p || (min_one && n == 0)) goto bad;
    return n;
bad:
    hg_error(HG_ERR_VALUE, "%s: attribute %s='%s' is not a tuple of %s%d numbers", op->name, attr,
             text, min_one ? "1 to " : "at most ", max);
    return -1;
}
