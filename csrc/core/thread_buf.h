/* A scratch buffer per thread, made at a thread's first call and freed when the thread exits:
 * for kernels that run a unit of work on one thread and need the same block at every call
 * (the packed GEMM's panels, the pointwise + depthwise pair's planes), where allocating per call
 * would cost page faults and a system call. Define one per use with HG_THREAD_BUF_INIT. */
#ifndef HG_CORE_THREAD_BUF_H
#define HG_CORE_THREAD_BUF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct hg_thread_buf {
    pthread_mutex_t lock; /* guards the key's creation */
    pthread_key_t key;
    atomic_int state; /* 0 no key yet, 1 made, -1 could not be made */
    size_t bytes;
} hg_thread_buf;

#define HG_THREAD_BUF_INIT(nbytes) {PTHREAD_MUTEX_INITIALIZER, 0, 0, (nbytes)}

/* The calling thread's buffer (64-byte aligned, t->bytes long), or NULL without memory.
 * Thread-safe. */
void *hg_thread_buf_get(hg_thread_buf *t);

#endif
