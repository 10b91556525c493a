/* Error reporting inside the core: a thread-local message plus the status that goes with it.
 * Use: `return hg_error(HG_ERR_VALUE, "reshape: cannot reshape %s into %s", a, b);`
 * hg_error_prefix adds context on the way up ("node 'dense0_fwd' (FullyConnected): ...").
 */
#ifndef HG_CORE_ERROR_H
#define HG_CORE_ERROR_H

#include "hybridgluon/hybridgluon.h"

#if defined(__GNUC__)
#define HG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define HG_LIKELY(x) __builtin_expect(!!(x), 1)
#define HG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define HG_PRINTF(a, b)
#define HG_LIKELY(x) (x)
#define HG_UNLIKELY(x) (x)
#endif

#define HG_ERROR_MAX 2048

#ifdef __cplusplus
extern "C" {
#endif

HG_API hg_status hg_error(hg_status code, const char *fmt, ...) HG_PRINTF(2, 3);
/* Prepends formatted text to the current message; returns code unchanged. */
HG_API hg_status hg_error_prefix(hg_status code, const char *fmt, ...) HG_PRINTF(2, 3);
void hg_error_clear(void);

/* Formats a shape as MXNet prints it: [2,3]. buf must hold HG_SHAPE_STR bytes. */
#define HG_SHAPE_STR 256
HG_API const char *hg_shape_str(char *buf, int ndim, const int64_t *shape);

#define HG_TRY(expr)                                                                           \
    do {                                                                                       \
        hg_status hg_try_st_ = (expr);                                                         \
        if (HG_UNLIKELY(hg_try_st_ != HG_OK)) return hg_try_st_;                               \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
