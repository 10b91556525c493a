/* A small fork-safe thread pool: the caller plus (threads - 1) workers share chunks of a range.
 * Workers spin briefly for the next job before sleeping, so back-to-back kernels do not pay for
 * a wake-up each. After fork() the child starts with no workers and creates them on first use. */
#include "core/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/error.h"

#define MAX_THREADS 64
#define SPIN_ITERS 20000
#define WAIT_SPINS 4000 /* the caller's pause loop before it yields the core */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t g_run_mu = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static int g_threads;       /* configured count, 0 = not yet read */
static int g_workers;       /* workers started */
/* Job generation: odd while the caller (re)writes the job, even once it is published. */
static atomic_ulong g_gen;
static atomic_long g_next, g_pending;
static atomic_int g_active; /* workers inside a job (they may only read it) */
static atomic_int g_sleepers; /* workers in (or about to enter) pthread_cond_wait */
static hg_range_fn g_fn;
static void *g_ctx;
static int64_t g_n, g_chunk;
static _Thread_local bool t_in_pool;

static int default_threads(void)
{
    const char *env = getenv("HG_NUM_THREADS");
    if (!env || !*env) env = getenv("OMP_NUM_THREADS");
    if (env && atoi(env) > 0) return atoi(env) > MAX_THREADS ? MAX_THREADS : atoi(env);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        return n < 1 ? 1 : (n > MAX_THREADS ? MAX_THREADS : n);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > MAX_THREADS ? MAX_THREADS : (int)n);
}

static void run_chunks(void)
{
    int64_t nchunks = (g_n + g_chunk - 1) / g_chunk;
    for (;;) {
        int64_t c = atomic_fetch_add(&g_next, 1);
        if (c >= nchunks) break;
        int64_t b = c * g_chunk, e = b + g_chunk < g_n ? b + g_chunk : g_n;
        g_fn(g_ctx, b, e);
        atomic_fetch_sub(&g_pending, 1);
    }
}

/* A generation a worker should join: a new one, and published. */
static bool joinable(unsigned long g, unsigned long seen) { return g != seen && !(g & 1); }

static void *worker(void *arg)
{
    /* The generation seen is the one current when the worker was created (passed in), not when
     * it first runs: a job posted in between must still be picked up. */
    unsigned long seen = (unsigned long)(uintptr_t)arg;
    t_in_pool = true;
    for (;;) {
        int spins = 0;
        while (!joinable(atomic_load(&g_gen), seen) && spins < SPIN_ITERS) {
            spins++;
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
        if (!joinable(atomic_load(&g_gen), seen)) {
            /* Counted before the generation is read again (both sequentially consistent): a
             * caller that publishes then either sees a sleeper and signals under the mutex, or
             * this thread sees the new generation and does not sleep. */
            pthread_mutex_lock(&g_mu);
            atomic_fetch_add(&g_sleepers, 1);
            while (!joinable(atomic_load(&g_gen), seen)) pthread_cond_wait(&g_cv, &g_mu);
            atomic_fetch_sub(&g_sleepers, 1);
            pthread_mutex_unlock(&g_mu);
        }
        unsigned long g = atomic_load(&g_gen);
        /* Closed again (the caller is rewriting the job for the next one) between the wait and
         * this load: wait for that one to be published. Joining an odd generation would pass
         * the check below until the caller publishes, and read the fields it is writing. */
        if (g & 1) continue;
        /* Entered, then checked: a caller closing the job (gen odd) after this either sees
         * this worker active and waits for it, or this worker sees the job closed and leaves.
         * A worker that arrives after the job's chunks are all done finds nothing to do. */
        atomic_fetch_add(&g_active, 1);
        if (atomic_load(&g_gen) == g) run_chunks();
        atomic_fetch_sub(&g_active, 1);
        seen = g;
    }
    return NULL;
}

static void after_fork_child(void)
{
    g_workers = 0;
    atomic_store(&g_sleepers, 0);
    atomic_store(&g_active, 0);
    atomic_store(&g_gen, atomic_load(&g_gen) & ~1ul); /* no job open in the child */
    pthread_mutex_init(&g_mu, NULL);
    pthread_cond_init(&g_cv, NULL);
    pthread_mutex_init(&g_run_mu, NULL);
}

static void ensure_config(void)
{
    if (!g_threads) {
        pthread_mutex_lock(&g_mu);
        if (!g_threads) {
            g_threads = default_threads();
            pthread_atfork(NULL, NULL, after_fork_child);
        }
        pthread_mutex_unlock(&g_mu);
    }
}

static void ensure_workers(void)
{
    while (g_workers < g_threads - 1) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &at, worker, (void *)(uintptr_t)atomic_load(&g_gen)) != 0) {
            g_threads = g_workers + 1; /* run with what we have */
        } else {
            g_workers++;
        }
        pthread_attr_destroy(&at);
    }
}

int hg_get_num_threads(void)
{
    ensure_config();
    return g_threads;
}

void hg_set_num_threads(int n)
{
    ensure_config();
    if (n < 1) n = 1;
    if (n > MAX_THREADS) n = MAX_THREADS;
    pthread_mutex_lock(&g_run_mu);
    g_threads = n; /* when lowered, extra workers wake per job and find no chunk left */
    pthread_mutex_unlock(&g_run_mu);
}

void hg_parallel_for(int64_t n, int64_t grain, hg_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    ensure_config();
    if (g_threads <= 1 || n < grain * 2 || t_in_pool || pthread_mutex_trylock(&g_run_mu) != 0) {
        fn(ctx, 0, n);
        return;
    }
    ensure_workers();
    int parts = g_threads;
    if (n / grain < parts) parts = (int)(n / grain);
    /* Close the last job (odd generation) and wait for workers still inside it: they arrived
     * after its chunks were done and only read its fields, which are rewritten next. */
    atomic_fetch_add(&g_gen, 1);
    while (atomic_load(&g_active) > 0) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
    g_fn = fn;
    g_ctx = ctx;
    g_n = n;
    g_chunk = (n + parts - 1) / parts;
    int64_t nchunks = (n + g_chunk - 1) / g_chunk;
    atomic_store(&g_next, 0);
    atomic_store(&g_pending, nchunks);
    atomic_fetch_add(&g_gen, 1); /* published */
    if (atomic_load(&g_sleepers) > 0) { /* spinning workers need no system call */
        pthread_mutex_lock(&g_mu);
        pthread_cond_broadcast(&g_cv);
        pthread_mutex_unlock(&g_mu);
    }
    t_in_pool = true;
    run_chunks();
    t_in_pool = false;
    /* Wait for the chunks only, not for workers that took none: on a busy machine a worker
     * may not run for a whole scheduler slice, and the caller has done its chunks for it. A
     * worker still running a chunk gets the core back after a while (sched_yield). */
    for (int spins = 0; atomic_load(&g_pending) > 0; spins++) {
        if (spins >= WAIT_SPINS) sched_yield();
#if defined(__x86_64__)
        else __builtin_ia32_pause();
#endif
    }
    pthread_mutex_unlock(&g_run_mu);
}
