/* The gradient allreduce overlapped with backward (dist.h, hg_dist_sched).
 *
 * A schedule holds a trainer's gradient buffers cut into buckets, in the reverse of the
 * registration order (backward computes the last layers' gradients first). autograd reports
 * each buffer as soon as the backward plan has written it (hg_ag_grad_hooks, installed here);
 * when every buffer of a bucket has been reported in this backward, the bucket goes to the
 * communication thread, which packs it into the schedule's scratch memory and sums it over the
 * ranks while backward goes on with the earlier layers. At the end of backward the sums are
 * written back, so when backward returns the buffers hold the sums (as with PyTorch's DDP);
 * whatever was not reduced during backward (a bucket some of whose buffers this backward did
 * not write) is reduced when the trainer's step calls hg_dist_sched_finish.
 *
 * Invariants, all under q_lock: the communication thread reads only the buffers of a queued
 * bucket and writes only that bucket's scratch; the buffers themselves are written back only on
 * the backward's own thread after the queue has drained (end, finish), so no buffer is ever
 * read by one thread while another writes it. Buckets are queued in the order backward reports
 * them, which is the same on every rank (same graph, same plan), so the collectives match.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autograd/autograd.h"
#include "core/error.h"
#include "dist/dist_impl.h"

enum { B_IDLE, B_QUEUED, B_DONE };

typedef struct ov_bucket {
    int first, last; /* into s->order */
    size_t off;      /* into s->scratch */
    int64_t count;   /* wire elements */
    hg_dtype wire;
    int round, counted; /* buffers reported in backward number `round` */
    int state;
} ov_bucket;

struct hg_dist_sched {
    hg_tensor **order; /* the buffers (references), bucket by bucket */
    hg_dtype *wire;
    int n, nb;
    int *bucket_of, *seen_round;
    unsigned char *reduced; /* holds the sum over the ranks now */
    hg_tensor **keys;       /* hash table: buffer -> position in order */
    int *vals;
    size_t cap;
    ov_bucket *b;
    char *scratch;
    size_t scratch_bytes;
    int flags, round;
    double scale;
    hg_status err;
    char errmsg[HG_ERROR_MAX];
    int64_t overlapped, at_finish;
    struct hg_dist_sched *next;
};

typedef struct item {
    hg_dist_sched *s;
    int b;
} item;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_work = PTHREAD_COND_INITIALIZER, q_idle = PTHREAD_COND_INITIALIZER;
static item *q;
static int q_head, q_len, q_cap, q_busy;
static hg_dist_sched *g_active;
static pid_t g_thread_pid; /* the process the communication thread runs in (0: none yet) */

/* ---- the communication thread ------------------------------------------------------------- */

static void reduce_bucket(hg_dist_sched *s, ov_bucket *bk)
{
    char *p = s->scratch + bk->off;
    for (int i = bk->first; i < bk->last; i++) {
        hg_dist_pack(s->order[i], bk->wire, p);
        p += (size_t)s->order[i]->size * hg_dtype_size(bk->wire);
    }
    hg_status st = hg_dist_enter("allreduce");
    if (st == HG_OK) {
        st = hg_dist_reduce_locked(s->scratch + bk->off, bk->count, bk->wire);
        hg_dist_leave();
    }
    pthread_mutex_lock(&q_lock);
    if (st != HG_OK && s->err == HG_OK) {
        s->err = st;
        snprintf(s->errmsg, sizeof s->errmsg, "%s", hg_last_error());
    }
    bk->state = st == HG_OK ? B_DONE : B_IDLE;
    s->overlapped += st == HG_OK;
    pthread_mutex_unlock(&q_lock);
}

static void *comm_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&q_lock);
    for (;;) {
        while (q_len == 0 || q_busy) pthread_cond_wait(&q_work, &q_lock); /* see drain */
        item it = q[q_head];
        q_head = (q_head + 1) % q_cap;
        q_len--;
        q_busy = 1;
        pthread_mutex_unlock(&q_lock);
        reduce_bucket(it.s, &it.s->b[it.b]);
        pthread_mutex_lock(&q_lock);
        q_busy = 0;
        pthread_cond_broadcast(&q_idle);
    }
    return NULL;
}

/* With q_lock held. */
static void wait_idle(void)
{
    while (q_len > 0 || q_busy) pthread_cond_wait(&q_idle, &q_lock);
}

/* With q_lock held: false without memory (the bucket is then reduced at finish). */
static bool enqueue(hg_dist_sched *s, int b)
{
    if (q_len == q_cap) {
        int cap = q_cap ? 2 * q_cap : 64;
        item *nq = malloc(sizeof *nq * (size_t)cap);
        if (!nq) return false;
        for (int k = 0; k < q_len; k++) nq[k] = q[(q_head + k) % q_cap];
        free(q);
        q = nq;
        q_cap = cap;
        q_head = 0;
    }
    q[(q_head + q_len) % q_cap] = (item){s, b};
    q_len++;
    s->b[b].state = B_QUEUED;
    pthread_cond_signal(&q_work);
    return true;
}

/* ---- autograd's hooks --------------------------------------------------------------------- */

/* Only the process that started the communication thread acts (a forked data-loading worker
 * inherits the schedules but not the thread). */
static bool ours(void) { return g_thread_pid == getpid(); }

static size_t slot_of(const hg_dist_sched *s, const hg_tensor *t)
{
    return ((uintptr_t)t >> 4) * 0x9E3779B97F4A7C15ull & (s->cap - 1);
}

static int lookup(const hg_dist_sched *s, const hg_tensor *t)
{
    for (size_t h = slot_of(s, t);; h = (h + 1) & (s->cap - 1)) {
        if (!s->keys[h]) return -1;
        if (s->keys[h] == t) return s->vals[h];
    }
}

static void hook_begin(void)
{
    pthread_mutex_lock(&q_lock);
    if (ours())
        for (hg_dist_sched *s = g_active; s; s = s->next) s->round++;
    pthread_mutex_unlock(&q_lock);
}

static void hook_ready(hg_tensor *buf)
{
    pthread_mutex_lock(&q_lock);
    for (hg_dist_sched *s = ours() ? g_active : NULL; s; s = s->next) {
        int i = lookup(s, buf);
        if (i < 0 || s->seen_round[i] == s->round) continue;
        s->seen_round[i] = s->round;
        s->reduced[i] = 0;
        ov_bucket *bk = &s->b[s->bucket_of[i]];
        if (bk->round != s->round) {
            bk->round = s->round;
            bk->counted = 0;
        }
        if (++bk->counted == bk->last - bk->first && bk->state == B_IDLE)
            enqueue(s, s->bucket_of[i]);
    }
    pthread_mutex_unlock(&q_lock);
}

/* With q_lock held and the queue drained: the finished buckets' sums into their buffers. */
static void write_back(hg_dist_sched *s)
{
    for (int k = 0; k < s->nb; k++) {
        ov_bucket *bk = &s->b[k];
        if (bk->state != B_DONE) continue;
        const char *p = s->scratch + bk->off;
        for (int i = bk->first; i < bk->last; i++) {
            hg_dist_unpack(s->order[i], bk->wire, p, s->scale);
            p += (size_t)s->order[i]->size * hg_dtype_size(bk->wire);
            s->reduced[i] = 1;
        }
        bk->state = B_IDLE;
    }
}

static hg_status failed(const hg_dist_sched *s) { return hg_error(s->err, "%s", s->errmsg); }

/* With q_lock held: waits until the thread is between buckets, then reduces on this thread
 * what is still queued (typically the last bucket, queued as backward ended): a hand-over to
 * a sleeping thread costs more than it saves then. The thread is idle and the queue taken as a
 * whole, so the collectives keep their order. Returns with the queue drained, q_lock held. */
static void drain(void)
{
    while (q_busy) pthread_cond_wait(&q_idle, &q_lock);
    while (q_len > 0) {
        item it = q[q_head];
        q_head = (q_head + 1) % q_cap;
        q_len--;
        q_busy = 1; /* the thread, woken for this item, finds the queue empty or waits */
        pthread_mutex_unlock(&q_lock);
        reduce_bucket(it.s, &it.s->b[it.b]);
        pthread_mutex_lock(&q_lock);
        q_busy = 0;
    }
    pthread_cond_broadcast(&q_idle);
}

static hg_status hook_end(void)
{
    hg_status st = HG_OK;
    pthread_mutex_lock(&q_lock);
    if (ours()) {
        drain();
        for (hg_dist_sched *s = g_active; s; s = s->next) {
            write_back(s);
            if (s->err != HG_OK && st == HG_OK) st = failed(s);
        }
    }
    pthread_mutex_unlock(&q_lock);
    return st;
}

static const hg_ag_grad_hooks k_hooks = {hook_begin, hook_ready, hook_end};

/* ---- schedules ---------------------------------------------------------------------------- */

void hg_dist_sched_free(hg_dist_sched *s)
{
    if (!s) return;
    pthread_mutex_lock(&q_lock);
    wait_idle();
    for (hg_dist_sched **p = &g_active; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&q_lock);
    for (int i = 0; s->order && i < s->n; i++) hg_tensor_free(s->order[i]);
    free(s->order);
    free(s->wire);
    free(s->bucket_of);
    free(s->seen_round);
    free(s->reduced);
    free(s->keys);
    free(s->vals);
    free(s->b);
    if (s->scratch) hg_free(s->scratch, s->scratch_bytes);
    free(s);
}

/* Buckets over s->order (already in bucket order): a new one when the wire dtype changes or
 * the next buffer would pass bucket_bytes. */
static hg_status cut_buckets(hg_dist_sched *s, size_t bucket_bytes)
{
    size_t off = 0;
    for (int i = 0; i < s->n; i++) {
        size_t es = hg_dtype_size(s->wire[i]);
        size_t bytes = (size_t)s->order[i]->size * es;
        ov_bucket *cur = s->nb ? &s->b[s->nb - 1] : NULL;
        if (cur && cur->wire == s->wire[i] && (size_t)cur->count * es + bytes <= bucket_bytes) {
            cur->last = i + 1;
            cur->count += s->order[i]->size;
        } else {
            s->b[s->nb++] = (ov_bucket){i, i + 1, off, s->order[i]->size, s->wire[i], 0, 0, B_IDLE};
        }
        s->bucket_of[i] = s->nb - 1;
        off += bytes; /* a bucket's buffers lie back to back in the scratch */
    }
    s->scratch_bytes = off ? off : 64;
    if (!(s->scratch = hg_alloc(s->scratch_bytes)))
        return hg_error(HG_ERR_MEMORY, "distributed: no memory for %zu bytes of buckets",
                        s->scratch_bytes);
    return HG_OK;
}

static hg_status start_thread(void)
{
    if (g_thread_pid == getpid()) return HG_OK;
    HG_TRY(hg_dist_start_thread(comm_main, "communication"));
    g_thread_pid = getpid();
    hg_ag_set_grad_hooks(&k_hooks);
    return HG_OK;
}

hg_status hg_dist_sched_new(hg_tensor *const *grads, int n, int flags, size_t bucket_bytes,
                            hg_dist_sched **out)
{
    *out = NULL;
    if (n < 0 || bucket_bytes < 1024)
        return hg_error(HG_ERR_VALUE, "distributed schedule: %d buffers, %zu-byte buckets", n,
                        bucket_bytes);
    for (int i = 0; i < n; i++)
        if (hg_device_kind(grads[i]->storage->device_type) != HG_DEVICE_CPU)
            return hg_error(HG_ERR_UNSUPPORTED,
                            "distributed schedule: gradient %d is on a GPU; "
                            "GPU collectives (NCCL) are not built yet",
                            i);
    hg_dist_sched *s = calloc(1, sizeof *s);
    if (!s) return hg_error(HG_ERR_MEMORY, "out of memory");
    s->flags = flags;
    s->scale = (flags & HG_DIST_AVERAGE) ? 1.0 / hg_dist_size() : 1.0;
    for (s->cap = 16; s->cap < 2 * (size_t)n + 2;) s->cap *= 2;
    size_t m = (size_t)n + 1;
    s->order = calloc(m, sizeof *s->order);
    s->wire = calloc(m, sizeof *s->wire);
    s->bucket_of = calloc(m, sizeof(int));
    s->seen_round = calloc(m, sizeof(int));
    s->reduced = calloc(m, 1);
    s->b = calloc(m, sizeof *s->b);
    s->keys = calloc(s->cap, sizeof *s->keys);
    s->vals = calloc(s->cap, sizeof(int));
    hg_status st = HG_OK;
    if (!s->order || !s->wire || !s->bucket_of || !s->seen_round || !s->reduced || !s->b ||
        !s->keys || !s->vals)
        st = hg_error(HG_ERR_MEMORY, "out of memory");
    /* Backward writes the last layers' gradients first: buckets from the end. */
    for (int k = 0; k < n && st == HG_OK; k++) {
        hg_tensor *t = grads[n - 1 - k];
        size_t es;
        st = hg_dist_wire(t, flags, n - 1 - k, &s->wire[k], &es);
        if (st != HG_OK) break;
        if (lookup(s, t) >= 0) {
            st = hg_error(HG_ERR_VALUE, "distributed schedule: gradient %d is listed twice",
                          n - 1 - k);
            break;
        }
        hg_tensor_retain(t);
        s->order[s->n++] = t;
        size_t h = slot_of(s, t);
        while (s->keys[h]) h = (h + 1) & (s->cap - 1);
        s->keys[h] = t;
        s->vals[h] = k;
    }
    if (st == HG_OK) st = cut_buckets(s, bucket_bytes);
    pthread_mutex_lock(&q_lock);
    if (st == HG_OK) st = start_thread();
    if (st == HG_OK) {
        s->next = g_active;
        g_active = s;
    }
    pthread_mutex_unlock(&q_lock);
    if (st != HG_OK) {
        hg_dist_sched_free(s);
        return st;
    }
    *out = s;
    return HG_OK;
}

hg_status hg_dist_sched_finish(hg_dist_sched *s)
{
    pthread_mutex_lock(&q_lock);
    wait_idle();
    write_back(s);
    hg_status st = s->err != HG_OK ? failed(s) : HG_OK;
    int m = 0;
    hg_tensor **rest = st == HG_OK ? malloc(sizeof *rest * ((size_t)s->n + 1)) : NULL;
    if (st == HG_OK && !rest) st = hg_error(HG_ERR_MEMORY, "out of memory");
    for (int i = 0; rest && i < s->n; i++)
        if (!s->reduced[i]) rest[m++] = s->order[i];
    pthread_mutex_unlock(&q_lock);
    /* Not under q_lock: hg_dist_allreduce takes the collectives' lock, as the thread does. */
    if (st == HG_OK && m) st = hg_dist_allreduce(rest, m, s->flags);
    free(rest);
    pthread_mutex_lock(&q_lock);
    if (st == HG_OK) s->at_finish += m;
    /* The next step starts over: a buffer not written by the next backward is reduced again
     * at its finish (its contents may have been changed by the caller in between). */
    memset(s->reduced, 0, (size_t)s->n);
    pthread_mutex_unlock(&q_lock);
    return st;
}

void hg_dist_sched_stats(hg_dist_sched *s, int64_t *overlapped, int64_t *at_finish)
{
    pthread_mutex_lock(&q_lock);
    *overlapped = s->overlapped;
    *at_finish = s->at_finish;
    pthread_mutex_unlock(&q_lock);
}
