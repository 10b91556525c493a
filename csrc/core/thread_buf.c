#include "core/thread_buf.h"

#include <stdlib.h>

void *hg_thread_buf_get(hg_thread_buf *t)
{
    int s = atomic_load_explicit(&t->state, memory_order_acquire);
    if (s == 0) {
        pthread_mutex_lock(&t->lock);
        s = atomic_load_explicit(&t->state, memory_order_relaxed);
        if (s == 0) {
            s = pthread_key_create(&t->key, free) == 0 ? 1 : -1;
            atomic_store_explicit(&t->state, s, memory_order_release);
        }
        pthread_mutex_unlock(&t->lock);
    }
    if (s < 0) return NULL;
    void *b = pthread_getspecific(t->key);
    if (b) return b;
    b = aligned_alloc(64, (t->bytes + 63) / 64 * 64);
    if (b && pthread_setspecific(t->key, b) != 0) {
        free(b);
        b = NULL;
    }
    return b;
}
