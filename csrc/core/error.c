/* Thread-local error message storage and formatting helpers. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_message[HG_ERROR_MAX];

const char *hg_last_error(void) { return g_message; }

void hg_error_clear(void) { g_message[0] = '\0'; }

hg_status hg_error(hg_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_message, sizeof g_message, fmt, ap);
    va_end(ap);
    return code;
}

hg_status hg_error_prefix(hg_status code, const char *fmt, ...)
{
    char prefix[HG_ERROR_MAX], old[HG_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, g_message, sizeof old);
    size_t n = strlen(prefix);
    memcpy(g_message, prefix, n + 1);
    if (n < sizeof g_message - 1) {
        strncpy(g_message + n, old, sizeof g_message - 1 - n);
        g_message[sizeof g_message - 1] = '\0';
    }
    return code;
}

const char *hg_shape_str(char *buf, int ndim, const int64_t *shape)
{
    size_t n = 0;
    buf[n++] = '[';
    for (int i = 0; i < ndim && n < HG_SHAPE_STR - 24; i++)
        n += (size_t)snprintf(buf + n, HG_SHAPE_STR - n, i ? ",%lld" : "%lld", (long long)shape[i]);
    buf[n++] = ']';
    buf[n] = '\0';
    return buf;
}
