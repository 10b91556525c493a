/* The profiler's buffers (see profiler.h): one per recording thread, listed globally so that a
 * dump finds them all; the aggregate table; the Chrome trace writer.
 *
 * Each buffer has its own lock: its thread takes it for every event (never contended but by a
 * dump), so threads record in parallel. A buffer outlives its thread (the thread-exit
 * destructor only marks it): its events stay until a clearing dump or reset drops them.
 */
#include "core/profiler.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/tensor.h"

atomic_uint hg_prof_mode;

static atomic_llong g_dropped;

/* Strings live in the buffer's character arena: an event holds offsets, so recording copies a
 * few bytes and allocates nothing but when the arena doubles. */
typedef struct prof_event {
    int64_t start, dur, value;
    uint32_t cat, name, arg; /* offsets into str; arg == UINT32_MAX: none */
    char ph;
    bool agg; /* aggregate statistics were on when it was recorded */
} prof_event;

typedef struct prof_buf {
    pthread_mutex_t lock;
    prof_event *ev;
    size_t n, cap;
    char *str;
    size_t slen, scap;
    int tid;  /* 1, 2, ... in order of first event: the trace's thread ids */
    long ostid; /* the OS thread id, for the thread's name in the trace */
    bool dead; /* its thread has exited */
    struct prof_buf *next;
} prof_buf;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* the list, the table, g_next_tid */
static prof_buf *g_bufs;
static int g_next_tid = 1;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static _Thread_local prof_buf *t_buf;
static _Thread_local char *t_scope, *t_scope_cat;

int64_t hg_prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return t > 0 ? t : 1; /* 0 means "not started" to the hooks */
}

bool hg_prof_is_active(unsigned kind) { return hg_prof_active(kind); }

/* Configuration and state change together under g_mode_lock, so that hg_prof_mode is always
 * the product of the latest of each; the hooks only read hg_prof_mode. */
static pthread_mutex_t g_mode_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_kinds = HG_PROF_IMPERATIVE | HG_PROF_SYMBOLIC | HG_PROF_MEMORY | HG_PROF_API;
static bool g_run, g_paused;

static void apply_mode(void)
{
    atomic_store(&hg_prof_mode, g_run && !g_paused ? g_kinds | HG_PROF_USER : 0);
}

void hg_prof_set_config(unsigned kinds)
{
    pthread_mutex_lock(&g_mode_lock);
    g_kinds = kinds;
    apply_mode();
    pthread_mutex_unlock(&g_mode_lock);
}

void hg_prof_set_state(bool run, bool paused)
{
    pthread_mutex_lock(&g_mode_lock);
    g_run = run;
    g_paused = paused;
    apply_mode();
    pthread_mutex_unlock(&g_mode_lock);
}

static void thread_exit(void *arg)
{
    prof_buf *b = arg;
    pthread_mutex_lock(&b->lock);
    b->dead = true;
    pthread_mutex_unlock(&b->lock);
    t_buf = NULL; /* an event from a later destructor starts a new buffer, never this one */
}

static void make_key(void) { pthread_key_create(&g_key, thread_exit); }

static prof_buf *thread_buf(void)
{
    if (t_buf) return t_buf;
    prof_buf *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_init(&b->lock, NULL);
    b->ostid = (long)syscall(SYS_gettid);
    pthread_once(&g_key_once, make_key);
    pthread_setspecific(g_key, b);
    pthread_mutex_lock(&g_lock);
    b->tid = g_next_tid++;
    b->next = g_bufs;
    g_bufs = b;
    pthread_mutex_unlock(&g_lock);
    t_buf = b;
    return b;
}

/* Appends s (NUL included) to b's arena at *off; false when memory runs out. */
static bool put_str(prof_buf *b, const char *s, uint32_t *off)
{
    size_t n = strlen(s) + 1;
    if (b->slen + n > b->scap) {
        size_t cap = b->scap ? b->scap : 4096;
        while (cap < b->slen + n) cap *= 2;
        if (cap > UINT32_MAX) return false; /* offsets are 32-bit: 4 GiB of names at most */
        char *p = realloc(b->str, cap);
        if (!p) return false;
        b->str = p;
        b->scap = cap;
    }
    memcpy(b->str + b->slen, s, n);
    *off = (uint32_t)b->slen;
    b->slen += n;
    return true;
}

bool hg_prof_record(const char *cat, const char *name, const char *arg, char ph, int64_t start,
                    int64_t dur, int64_t value)
{
    prof_buf *b = thread_buf();
    if (!b) goto dropped;
    pthread_mutex_lock(&b->lock);
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        prof_event *p = realloc(b->ev, cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&b->lock);
            goto dropped;
        }
        b->ev = p;
        b->cap = cap;
    }
    prof_event *e = &b->ev[b->n];
    e->arg = UINT32_MAX;
    /* A failure leaves unreferenced bytes in the arena, dropped with the events. */
    if (!put_str(b, cat ? cat : "", &e->cat) || !put_str(b, name ? name : "", &e->name) ||
        (arg && !put_str(b, arg, &e->arg))) {
        pthread_mutex_unlock(&b->lock);
        goto dropped;
    }
    e->ph = ph;
    e->start = start;
    e->dur = dur;
    e->value = value;
    e->agg = hg_prof_active(HG_PROF_AGGREGATE);
    b->n++;
    pthread_mutex_unlock(&b->lock);
    return true;
dropped:
    atomic_fetch_add(&g_dropped, 1);
    return false;
}

int64_t hg_prof_dropped(void) { return atomic_load(&g_dropped); }

void hg_prof_op(const char *op, const char *node, int64_t start)
{
    int64_t end = hg_prof_now();
    const char *cat = t_scope_cat ? t_scope_cat : "operator";
    if (t_scope) {
        char name[256];
        snprintf(name, sizeof name, "%s%s", t_scope, op);
        hg_prof_record(cat, name, node, HG_PROF_PH_X, start, end - start, 0);
    } else {
        hg_prof_record(cat, op, node, HG_PROF_PH_X, start, end - start, 0);
    }
    if (hg_prof_active(HG_PROF_MEMORY))
        hg_prof_record("Device Storage", "Memory: cpu/0", NULL, HG_PROF_PH_COUNTER, end, 0,
                       (int64_t)hg_alloc_live_bytes());
}

char *hg_prof_set_scope(const char *prefix, const char *cat, char **prev_cat)
{
    char *prev = t_scope;
    *prev_cat = t_scope_cat;
    t_scope = prefix ? strdup(prefix) : NULL;
    t_scope_cat = prefix && cat ? strdup(cat) : NULL;
    return prev;
}

/* ---- the aggregate table (under g_lock) ------------------------------------------------- */

typedef struct agg_entry {
    char *cat, *name; /* one allocation: cat\0name\0 */
    int kind;         /* 0: durations (ns), 1: memory (bytes) */
    int64_t count;
    double total, min, max;
} agg_entry;

static agg_entry *g_agg;
static size_t g_nagg, g_capagg;
static size_t *g_slots; /* open addressing: index + 1 into g_agg, 0 empty */
static size_t g_nslots;

static uint64_t hash_key(int kind, const char *cat, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
    for (const char *s = cat; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *s = name; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool rehash(size_t nslots)
{
    size_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < g_nagg; i++) {
        size_t j = hash_key(g_agg[i].kind, g_agg[i].cat, g_agg[i].name) & (nslots - 1);
        while (slots[j]) j = (j + 1) & (nslots - 1);
        slots[j] = i + 1;
    }
    free(g_slots);
    g_slots = slots;
    g_nslots = nslots;
    return true;
}

static agg_entry *agg_find(int kind, const char *cat, const char *name)
{
    if ((g_nagg + 1) * 2 > g_nslots && !rehash(g_nslots ? g_nslots * 2 : 64)) return NULL;
    size_t j = hash_key(kind, cat, name) & (g_nslots - 1);
    for (; g_slots[j]; j = (j + 1) & (g_nslots - 1)) {
        agg_entry *e = &g_agg[g_slots[j] - 1];
        if (e->kind == kind && !strcmp(e->cat, cat) && !strcmp(e->name, name)) return e;
    }
    if (g_nagg == g_capagg) {
        size_t cap = g_capagg ? g_capagg * 2 : 32;
        agg_entry *p = realloc(g_agg, cap * sizeof *p);
        if (!p) return NULL;
        g_agg = p;
        g_capagg = cap;
    }
    size_t lc = strlen(cat) + 1, ln = strlen(name) + 1;
    char *s = malloc(lc + ln);
    if (!s) return NULL;
    memcpy(s, cat, lc);
    memcpy(s + lc, name, ln);
    agg_entry *e = &g_agg[g_nagg];
    *e = (agg_entry){s, s + lc, kind, 0, 0.0, INFINITY, -INFINITY};
    g_slots[j] = ++g_nagg;
    return e;
}

static void agg_add(int kind, const char *cat, const char *name, double v)
{
    agg_entry *e = agg_find(kind, cat, name);
    if (!e) {
        atomic_fetch_add(&g_dropped, 1);
        return;
    }
    e->count++;
    e->total += v;
    if (v < e->min) e->min = v;
    if (v > e->max) e->max = v;
}

/* Folds b's events recorded with aggregate statistics on into the table, once each (b->lock
 * and g_lock held). Only durations and memory samples have statistics; counters and markers
 * are for the timeline. */
static void fold_agg(prof_buf *b)
{
    for (size_t i = 0; i < b->n; i++) {
        prof_event *e = &b->ev[i];
        if (!e->agg) continue;
        const char *cat = b->str + e->cat, *name = b->str + e->name;
        if (e->ph == HG_PROF_PH_X) agg_add(0, cat, name, (double)e->dur);
        else if (e->ph == HG_PROF_PH_COUNTER && !strcmp(cat, "Device Storage"))
            agg_add(1, cat, name, (double)e->value);
        e->agg = false;
    }
}

/* Drops the buffers of exited threads that hold nothing (g_lock held). */
static void reap_dead(void)
{
    for (prof_buf **pp = &g_bufs; *pp;) {
        prof_buf *b = *pp;
        pthread_mutex_lock(&b->lock);
        bool gone = b->dead && b->n == 0;
        pthread_mutex_unlock(&b->lock);
        if (!gone) {
            pp = &b->next;
            continue;
        }
        *pp = b->next;
        pthread_mutex_destroy(&b->lock);
        free(b->ev);
        free(b->str);
        free(b);
    }
}

/* A copy of the entry's strings (one allocation, as the table keeps them). */
static char *dup_key(const agg_entry *e)
{
    size_t lc = strlen(e->cat) + 1, ln = strlen(e->name) + 1;
    char *s = malloc(lc + ln);
    if (s) {
        memcpy(s, e->cat, lc);
        memcpy(s + lc, e->name, ln);
    }
    return s;
}

hg_status hg_prof_aggregate(bool reset, hg_prof_stat_fn fn, void *ctx)
{
    pthread_mutex_lock(&g_lock);
    /* The events stay in their buffers for the trace; each is counted once. */
    for (prof_buf *b = g_bufs; b; b = b->next) {
        pthread_mutex_lock(&b->lock);
        fold_agg(b);
        pthread_mutex_unlock(&b->lock);
    }
    /* fn runs on a snapshot after the lock is released: it may be Python code that takes the
     * GIL (or records events), which a thread waiting for g_lock could be holding. */
    agg_entry *snap = NULL;
    size_t n = g_nagg;
    bool oom = false;
    if (reset) {
        snap = g_agg;
        g_agg = NULL;
        g_nagg = g_capagg = 0;
        if (g_slots) memset(g_slots, 0, g_nslots * sizeof *g_slots);
    } else if (n && (snap = malloc(n * sizeof *snap))) {
        for (size_t i = 0; i < n && !oom; i++) {
            snap[i] = g_agg[i];
            snap[i].cat = dup_key(&g_agg[i]);
            snap[i].name = snap[i].cat ? snap[i].cat + strlen(snap[i].cat) + 1 : NULL;
            if (!snap[i].cat) {
                oom = true;
                n = i;
            }
        }
    } else {
        oom = n > 0;
    }
    pthread_mutex_unlock(&g_lock);
    for (size_t i = 0; fn && !oom && i < n; i++)
        fn(ctx, snap[i].kind, snap[i].cat, snap[i].name, snap[i].count, snap[i].total, snap[i].min,
           snap[i].max);
    for (size_t i = 0; i < n; i++) free(snap[i].cat);
    free(snap);
    return oom ? hg_error(HG_ERR_MEMORY, "profiler: out of memory for the statistics") : HG_OK;
}

/* ---- the Chrome trace ------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_grow(sbuf *s, size_t more)
{
    if (s->oom || s->len + more < s->cap) return;
    size_t cap = s->cap ? s->cap : 65536;
    while (cap <= s->len + more) cap *= 2;
    char *p = realloc(s->p, cap);
    if (!p) {
        s->oom = true;
        return;
    }
    s->p = p;
    s->cap = cap;
}

static void sb_printf(sbuf *s, const char *fmt, ...) HG_PRINTF(2, 3);
static void sb_printf(sbuf *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    sb_grow(s, (size_t)n + 1);
    if (s->oom) return;
    va_start(ap, fmt);
    vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

/* A JSON string literal of text (UTF-8 passes through; control characters escaped). */
static void sb_json_str(sbuf *s, const char *text)
{
    sb_grow(s, strlen(text) * 6 + 3);
    if (s->oom) return;
    char *o = s->p + s->len;
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\') {
            *o++ = '\\';
            *o++ = (char)*c;
        } else if (*c < 0x20) {
            o += sprintf(o, "\\u%04x", *c);
        } else {
            *o++ = (char)*c;
        }
    }
    *o++ = '"';
    s->len = (size_t)(o - s->p);
}

static void sb_put(sbuf *s, const char *text)
{
    size_t n = strlen(text);
    sb_grow(s, n + 1);
    if (s->oom) return;
    memcpy(s->p + s->len, text, n + 1);
    s->len += n;
}

/* v / 1000 with three decimals ("12.345") when thousandths, else v. Traces hold millions of
 * numbers: this is the dump's inner loop, where printf would dominate. */
static void sb_num(sbuf *s, int64_t v, bool thousandths)
{
    char tmp[32], *o = tmp + sizeof tmp;
    bool neg = v < 0;
    uint64_t u = neg ? 0 - (uint64_t)v : (uint64_t)v;
    *--o = '\0';
    if (thousandths) {
        for (int k = 0; k < 3; k++, u /= 10) *--o = (char)('0' + u % 10);
        *--o = '.';
    }
    do {
        *--o = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (neg) *--o = '-';
    sb_put(s, o);
}

static void write_event(sbuf *s, const prof_buf *b, const prof_event *e, int pid)
{
    char ph[2] = {e->ph, '\0'};
    sb_put(s, ",\n{\"name\": ");
    sb_json_str(s, b->str + e->name);
    sb_put(s, ", \"cat\": ");
    sb_json_str(s, b->str + e->cat);
    sb_put(s, ", \"ph\": \"");
    sb_put(s, ph);
    /* Timestamps in microseconds with the nanoseconds kept as decimals. */
    sb_put(s, "\", \"ts\": ");
    sb_num(s, e->start, true);
    sb_put(s, ", \"pid\": ");
    sb_num(s, pid, false);
    sb_put(s, ", \"tid\": ");
    sb_num(s, b->tid, false);
    if (e->ph == HG_PROF_PH_X) {
        sb_put(s, ", \"dur\": ");
        sb_num(s, e->dur, true);
        if (e->arg != UINT32_MAX) {
            sb_put(s, ", \"args\": {\"node\": ");
            sb_json_str(s, b->str + e->arg);
            sb_put(s, "}");
        }
    } else if (e->ph == HG_PROF_PH_COUNTER) {
        sb_put(s, ", \"args\": {");
        sb_json_str(s, b->str + e->name);
        sb_put(s, ": ");
        sb_num(s, e->value, false);
        sb_put(s, "}");
    } else if (e->ph == HG_PROF_PH_INSTANT) {
        char scope[2] = {(char)e->value, '\0'};
        sb_put(s, ", \"s\": \"");
        sb_put(s, scope);
        sb_put(s, "\"");
    }
    sb_put(s, "}");
}

hg_status hg_prof_dump_json(bool clear, char **out, size_t *len)
{
    sbuf s = {0};
    int pid = (int)getpid();
    sb_printf(&s,
              "{\n\"traceEvents\": [\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
              "\"args\": {\"name\": \"hybridgluon\"}}",
              pid);
    pthread_mutex_lock(&g_lock);
    for (prof_buf *b = g_bufs; b; b = b->next) {
        pthread_mutex_lock(&b->lock);
        if (b->n) {
            sb_printf(&s,
                      ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                      "\"args\": {\"name\": \"thread %d (os %ld)\"}}",
                      pid, b->tid, b->tid, b->ostid);
            for (size_t i = 0; i < b->n; i++) write_event(&s, b, &b->ev[i], pid);
        }
        if (clear && !s.oom) {
            fold_agg(b);
            b->n = b->slen = 0;
        }
        pthread_mutex_unlock(&b->lock);
    }
    if (clear && !s.oom) reap_dead();
    pthread_mutex_unlock(&g_lock);
    sb_printf(&s, "\n],\n\"displayTimeUnit\": \"ms\"\n}\n");
    if (s.oom) {
        free(s.p);
        return hg_error(HG_ERR_MEMORY, "profiler: out of memory writing the trace");
    }
    *out = s.p;
    *len = s.len;
    return HG_OK;
}
