/* The double load/store helpers of the contrib op files (see contrib_util.h). */
#include "ops/contrib_util.h"

#include "ops/ops_util.h"

static size_t dbytes(int64_t n) { return sizeof(double) * (size_t)(n > 0 ? n : 1); }

double *hg_c_alloc(int64_t n) { return hg_alloc(dbytes(n)); }

void hg_c_free(double *p, int64_t n)
{
    if (p) hg_free(p, dbytes(n));
}

double *hg_c_load(const hg_tensor *t)
{
    double *v = hg_c_alloc(t->size);
    if (!v) return NULL;
    const void *p = hg_data(t);
    int64_t n = t->size;
    switch (t->dtype) {
    case HG_DTYPE_F32:
        for (int64_t i = 0; i < n; i++) v[i] = ((const float *)p)[i];
        break;
    case HG_DTYPE_F64:
        for (int64_t i = 0; i < n; i++) v[i] = ((const double *)p)[i];
        break;
    case HG_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) v[i] = hg_half_to_float(((const uint16_t *)p)[i]);
        break;
    case HG_DTYPE_U8:
    case HG_DTYPE_BOOL:
        for (int64_t i = 0; i < n; i++) v[i] = ((const uint8_t *)p)[i];
        break;
    case HG_DTYPE_I8:
        for (int64_t i = 0; i < n; i++) v[i] = ((const int8_t *)p)[i];
        break;
    case HG_DTYPE_I32:
        for (int64_t i = 0; i < n; i++) v[i] = ((const int32_t *)p)[i];
        break;
    case HG_DTYPE_I64:
        for (int64_t i = 0; i < n; i++) v[i] = (double)((const int64_t *)p)[i];
        break;
    default:
        for (int64_t i = 0; i < n; i++) v[i] = 0;
    }
    return v;
}

void hg_c_store(hg_tensor *t, const double *v)
{
    void *p = hg_data(t);
    int64_t n = t->size;
    switch (t->dtype) {
    case HG_DTYPE_F32:
        for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)v[i];
        break;
    case HG_DTYPE_F64:
        for (int64_t i = 0; i < n; i++) ((double *)p)[i] = v[i];
        break;
    case HG_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = hg_float_to_half((float)v[i]);
        break;
    case HG_DTYPE_U8:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)(int64_t)v[i];
        break;
    case HG_DTYPE_BOOL:
        for (int64_t i = 0; i < n; i++) ((uint8_t *)p)[i] = v[i] != 0;
        break;
    case HG_DTYPE_I8:
        for (int64_t i = 0; i < n; i++) ((int8_t *)p)[i] = (int8_t)(int64_t)v[i];
        break;
    case HG_DTYPE_I32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)p)[i] = (int32_t)(int64_t)v[i];
        break;
    case HG_DTYPE_I64:
        for (int64_t i = 0; i < n; i++) ((int64_t *)p)[i] = (int64_t)v[i];
        break;
    default: break;
    }
}

hg_status hg_c_check_float(const hg_op_def *op, const char *what, hg_dtype dt)
{
    if (hg_is_float(dt)) return HG_OK;
    return hg_error(HG_ERR_TYPE, "%s: %s must be float16, float32 or float64, got %s", op->name,
                    what, hg_dtype_name(dt));
}
