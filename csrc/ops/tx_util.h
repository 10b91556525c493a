/* Helpers shared by the tensor_extra and tensor_num families: element loads and stores of any
 * dtype through double or int64 (these ops are not on a hot path; one code path per op keeps
 * every dtype covered), axis normalisation and the unknown-shape test of graph inference. */
#ifndef HG_OPS_TX_UTIL_H
#define HG_OPS_TX_UTIL_H

#include <math.h>
#include <stdint.h>

#include "core/op.h"

#define TX_UNKNOWN(m) ((m).ndim < 0)

static inline double tx_ld(const void *p, hg_dtype dt, int64_t i)
{
    switch (dt) {
    case HG_DTYPE_F32: return ((const float *)p)[i];
    case HG_DTYPE_F64: return ((const double *)p)[i];
    case HG_DTYPE_F16: return hg_half_to_float(((const uint16_t *)p)[i]);
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* Float to integer as C++'s static_cast would, but defined for NaN and out-of-range values. */
static inline int64_t tx_f2i(double v)
{
    if (v != v) return 0;
    if (v <= -9.2e18) return INT64_MIN;
    if (v >= 9.2e18) return INT64_MAX;
    return (int64_t)v;
}

static inline int64_t tx_ldi(const void *p, hg_dtype dt, int64_t i)
{
    switch (dt) {
    case HG_DTYPE_I64: return ((const int64_t *)p)[i];
    case HG_DTYPE_I32: return ((const int32_t *)p)[i];
    case HG_DTYPE_I8: return ((const int8_t *)p)[i];
    case HG_DTYPE_U8:
    case HG_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    default: return tx_f2i(tx_ld(p, dt, i));
    }
}

static inline void tx_st(void *p, hg_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case HG_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case HG_DTYPE_F64: ((double *)p)[i] = v; break;
    case HG_DTYPE_F16: ((uint16_t *)p)[i] = hg_float_to_half((float)v); break;
    case HG_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)tx_f2i(v); break;
    case HG_DTYPE_I64: ((int64_t *)p)[i] = tx_f2i(v); break;
    case HG_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)tx_f2i(v); break;
    case HG_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: ((uint8_t *)p)[i] = (uint8_t)tx_f2i(v); break;
    }
}

/* Integer store with two's-complement wrap (int32 overflow as in C++). */
static inline void tx_sti(void *p, hg_dtype dt, int64_t i, int64_t v)
{
    switch (dt) {
    case HG_DTYPE_I64: ((int64_t *)p)[i] = v; break;
    case HG_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case HG_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
    case HG_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case HG_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: tx_st(p, dt, i, (double)v); break;
    }
}

static inline bool tx_is_int(hg_dtype dt)
{
    return dt == HG_DTYPE_I32 || dt == HG_DTYPE_I64 || dt == HG_DTYPE_I8 || dt == HG_DTYPE_U8 ||
           dt == HG_DTYPE_BOOL;
}

/* Normalises axis against ndim or fails naming op and shape. */
static inline hg_status tx_axis(const char *op, int64_t axis, const hg_meta *m, int *out)
{
    char s[HG_SHAPE_STR];
    if (m->ndim == 0 || axis < -m->ndim || axis >= m->ndim)
        return hg_error(HG_ERR_VALUE, "%s: axis=%lld is out of range for input of shape %s", op,
                        (long long)axis, hg_shape_str(s, m->ndim, m->shape));
    *out = (int)(axis < 0 ? axis + m->ndim : axis);
    return HG_OK;
}

static inline int64_t tx_prod(const int64_t *s, int b, int e)
{
    int64_t n = 1;
    for (int d = b; d < e; d++) n *= s[d];
    return n;
}

#endif
