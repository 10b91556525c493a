/* The profiler: per-op events from the executor and the imperative path, user events (tasks,
 * counters, markers) and aggregate statistics, written as Chrome trace JSON.
 *
 * Off costs one relaxed atomic load and a branch at each hook (hg_prof_active). On, each
 * event goes to the recording thread's own buffer (amortised growth, an uncontended lock that
 * only a dump from another thread ever waits on), so threads running plans concurrently never
 * serialise on the profiler.
 */
#ifndef HG_CORE_PROFILER_H
#define HG_CORE_PROFILER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"

/* What is recorded while running (set_config's profile_* switches). */
enum {
    HG_PROF_IMPERATIVE = 1 << 0, /* ops called one by one (nd.*, autograd's backward ops) */
    HG_PROF_SYMBOLIC = 1 << 1,   /* the steps of a plan: hybridized blocks, executors */
    HG_PROF_MEMORY = 1 << 2,     /* live tensor bytes, sampled after each recorded op */
    HG_PROF_API = 1 << 3,        /* calls of the Python API (recorded by the binding) */
    HG_PROF_USER = 1 << 4,       /* tasks, frames, events, counters, markers: always on when
                                  * running */
    HG_PROF_AGGREGATE = 1 << 5,  /* fold events into the aggregate table */
};

/* The kinds recorded now: the configured ones while running and not paused, else 0. */
extern atomic_uint hg_prof_mode;

static inline bool hg_prof_active(unsigned kind)
{
    return (atomic_load_explicit(&hg_prof_mode, memory_order_relaxed) & kind) != 0;
}

/* hg_prof_active for code outside the library (the binding). */
HG_API bool hg_prof_is_active(unsigned kind);

/* Monotonic clock in nanoseconds (the trace's time base). Thread-safe. */
HG_API int64_t hg_prof_now(void);

/* Configuration and state (thread-safe; take effect for events that start afterwards). */
HG_API void hg_prof_set_config(unsigned kinds);
HG_API void hg_prof_set_state(bool run, bool paused);

/* Trace phases. */
enum { HG_PROF_PH_X = 'X', HG_PROF_PH_COUNTER = 'C', HG_PROF_PH_INSTANT = 'i' };

/* Records an event on the calling thread: a duration (ph 'X': start, dur in ns), a counter
 * (ph 'C': value at start) or an instant (ph 'i': scope 'g', 'p' or 't' in value). cat and
 * name are copied; arg (copied, may be NULL) is shown as args.node. Returns false only when
 * memory ran out (the event is dropped, and counted). Thread-safe. */
HG_API bool hg_prof_record(const char *cat, const char *name, const char *arg, char ph,
                           int64_t start, int64_t dur, int64_t value);

/* Records an op that ran from start until now, prefixed by the thread's scope (see
 * hg_prof_set_scope), and, with HG_PROF_MEMORY, the live tensor bytes after it. */
HG_API void hg_prof_op(const char *op, const char *node, int64_t start);

/* The thread's scope: a prefix for the names of the ops it records (prefix + op) and their
 * category (NULL: "operator"): profiler.scope() and custom operators ("Custom Operator",
 * "MyOp::"). NULL prefix: none. The strings are copied. Returns the previous prefix and
 * category (*prev_cat), both owned by the caller (free()). */
HG_API char *hg_prof_set_scope(const char *prefix, const char *cat, char **prev_cat);

/* The Chrome trace ({"traceEvents": [...], "displayTimeUnit": "ms"}) of every event recorded
 * since the last clear, malloc'ed into *out. clear: events are folded into the aggregate
 * table and dropped. Thread-safe against recording threads. */
HG_API hg_status hg_prof_dump_json(bool clear, char **out, size_t *len);

/* The aggregate table: calls fn for every entry (kind 0: time in ns; kind 1: memory in bytes),
 * after folding in the events recorded so far. reset: empties it. fn runs with no lock held
 * (it may record events). Fails only when out of memory. */
typedef void (*hg_prof_stat_fn)(void *ctx, int kind, const char *cat, const char *name,
                                int64_t count, double total, double min, double max);
HG_API hg_status hg_prof_aggregate(bool reset, hg_prof_stat_fn fn, void *ctx);

/* Events dropped for want of memory since the start. */
HG_API int64_t hg_prof_dropped(void);

#endif
