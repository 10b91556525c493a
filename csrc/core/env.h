/* Environment switches (HG_NO_FUSION=1, HG_NO_WINOGRAD=1, ...): set means set to anything but
 * "" or "0". */
#ifndef HG_CORE_ENV_H
#define HG_CORE_ENV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static inline bool hg_env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* hg_env_on(name), read at the first call and kept in *cache (a static initialised to -1):
 * for switches consulted on hot paths. Racing first calls all store the same value. */
static inline bool hg_env_on_once(atomic_int *cache, const char *name)
{
    int v = atomic_load_explicit(cache, memory_order_relaxed);
    if (v < 0) {
        v = hg_env_on(name);
        atomic_store_explicit(cache, v, memory_order_relaxed);
    }
    return v;
}

#endif
