/* im2col / col2im (see im2col.h). Rows of the column matrix are filled or scattered one grid row
 * (o0, o1) at a time: along the last axis the in-image range of positions [lo, hi) is computed
 * once per kernel offset, so the inner loops carry no bounds checks (and stride 1 is a memcpy /
 * a contiguous add). The kernels' body is im2col_tmpl.h, included once per element type. */
#include "kernels/cpu/im2col.h"

#include <string.h>

#include "core/parallel.h"
#include "kernels/cpu/gather2.h"

/* Positions o in [0, n) of the grid whose image index o*s + ofs lies in [0, size). */
static void inner_range(int64_t ofs, int64_t s, int64_t size, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t l = ofs >= 0 ? 0 : (-ofs + s - 1) / s;
    int64_t h = size - ofs <= 0 ? 0 : (size - ofs - 1) / s + 1;
    if (h > n) h = n;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

#define T float
#define NAME(x) x##_f32
#include "kernels/cpu/im2col_tmpl.h"
#undef T
#undef NAME

#define T double
#define NAME(x) x##_f64
#include "kernels/cpu/im2col_tmpl.h"
#undef T
#undef NAME
