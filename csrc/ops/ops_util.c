/* Helpers shared by the op families (see ops_util.h). */
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
