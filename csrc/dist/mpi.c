/* Collectives over the process's MPI library (dist.h): symbol lookup, the bucketed allreduce,
 * broadcast, allgather and barrier, and the watchdog that bounds them.
 *
 * The collectives are MPI's blocking ones (MPI_Allreduce...): Open MPI's tuned blocking
 * algorithms move data at up to twice the rate of its nonblocking ones (MPI_Iallreduce), and a
 * blocking call makes progress by itself. A blocking call cannot time out, so a watchdog thread
 * does: when a collective runs past its deadline (another rank died, hangs, or made another
 * call), the watchdog prints what was waited for and ends the job with MPI_Abort, as PyTorch's
 * NCCL watchdog does.
 *
 * Invariants: `g` is written only by hg_dist_init and read by collectives, both under g_lock;
 * hg_dist_rank/size read two ints that init sets before it publishes `ready`. The scratch
 * bucket belongs to the collective holding the lock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NOLOAD, RTLD_DEFAULT */
#endif
#include "dist/dist_impl.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/half.h"

typedef void (*hg_fnptr)(void);

/* The MPI functions used, by name; each is called through a typed wrapper below. */
#define MPI_FUNCS(X)                                                                           \
    X(Comm_rank)                                                                               \
    X(Comm_size)                                                                               \
    X(Allreduce)                                                                               \
    X(Bcast)                                                                                   \
    X(Allgather)                                                                               \
    X(Allgatherv)                                                                              \
    X(Barrier)                                                                                 \
    X(Abort)                                                                                   \
    X(Op_create)                                                                               \
    X(Error_string)

static struct {
#define X(name) hg_fnptr name;
    MPI_FUNCS(X)
#undef X
    int wide;    /* handles are 8 bytes (else 4) */
    hg_dist_handles h;
    intptr_t op_f16sum; /* our float16 sum (MPI_Op_create), made once */
    int have_f16sum;
    int rank, size;
    double timeout;
    size_t bucket_bytes;
    void *scratch; /* the bucket packed for one allreduce */
    size_t scratch_cap;
    char broken[512]; /* why the communicator is unusable; "" while it is fine */
} g = {.size = 1, .timeout = 600.0, .bucket_bytes = (size_t)64 << 20};

static atomic_int g_ready;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- MPI calls, for either handle width --------------------------------------------------- */

typedef int (*comm_int_w)(intptr_t, int *);
typedef int (*comm_int_n)(int, int *);

static int mpi_comm_int(hg_fnptr f, int *out)
{
    return g.wide ? ((comm_int_w)f)(g.h.comm, out) : ((comm_int_n)f)((int)g.h.comm, out);
}

static int mpi_allreduce(void *buf, int n, intptr_t t, intptr_t op)
{
    typedef int (*fw)(const void *, void *, int, intptr_t, intptr_t, intptr_t);
    typedef int (*fn)(const void *, void *, int, int, int, int);
    const void *in_place = (const void *)g.h.in_place;
    return g.wide ? ((fw)g.Allreduce)(in_place, buf, n, t, op, g.h.comm)
                  : ((fn)g.Allreduce)(in_place, buf, n, (int)t, (int)op, (int)g.h.comm);
}

static int mpi_bcast(void *b, int n, intptr_t t, int root)
{
    typedef int (*fw)(void *, int, intptr_t, int, intptr_t);
    typedef int (*fn)(void *, int, int, int, int);
    return g.wide ? ((fw)g.Bcast)(b, n, t, root, g.h.comm)
                  : ((fn)g.Bcast)(b, n, (int)t, root, (int)g.h.comm);
}

static int mpi_allgather(const void *s, int n, intptr_t t, void *r)
{
    typedef int (*fw)(const void *, int, intptr_t, void *, int, intptr_t, intptr_t);
    typedef int (*fn)(const void *, int, int, void *, int, int, int);
    return g.wide ? ((fw)g.Allgather)(s, n, t, r, n, t, g.h.comm)
                  : ((fn)g.Allgather)(s, n, (int)t, r, n, (int)t, (int)g.h.comm);
}

static int mpi_allgatherv(const void *s, int n, void *r, const int *counts, const int *displs)
{
    typedef int (*fw)(const void *, int, intptr_t, void *, const int *, const int *, intptr_t,
                      intptr_t);
    typedef int (*fn)(const void *, int, int, void *, const int *, const int *, int, int);
    intptr_t t = g.h.t_byte;
    return g.wide ? ((fw)g.Allgatherv)(s, n, t, r, counts, displs, t, g.h.comm)
                  : ((fn)g.Allgatherv)(s, n, (int)t, r, counts, displs, (int)t, (int)g.h.comm);
}

static int mpi_barrier(void)
{
    return g.wide ? ((int (*)(intptr_t))g.Barrier)(g.h.comm)
                  : ((int (*)(int))g.Barrier)((int)g.h.comm);
}

/* The float16 sum: the user function of MPI_Op_create (its datatype argument is unused). */
static void f16_sum(void *in, void *inout, int *len, void *type)
{
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = hg_f32_to_half_bits(hg_half_bits_to_f32(a[i]) + hg_half_bits_to_f32(b[i]));
}

/* ---- set-up ------------------------------------------------------------------------------- */

static int find_libmpi(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (!base || strncmp(base, "libmpi.so", 9) != 0) return 0;
    snprintf(data, PATH_MAX, "%s", name);
    return 1;
}

static hg_status resolve(void)
{
    char path[PATH_MAX] = "";
    dl_iterate_phdr(find_libmpi, path);
    void *lib = path[0] ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *from = lib ? lib : RTLD_DEFAULT;
    hg_status st = HG_OK;
#define X(name)                                                                                \
    if (st == HG_OK) {                                                                         \
        void *p = dlsym(from, "MPI_" #name);                                                   \
        if (!p)                                                                                \
            st = hg_error(HG_ERR_UNSUPPORTED,                                                  \
                          "distributed: MPI_" #name " not found (%s): is an MPI library "      \
                          "loaded (import mpi4py first)?",                                     \
                          path[0] ? path : "no libmpi.so in the process");                     \
        else                                                                                   \
            memcpy(&g.name, &p, sizeof p);                                                     \
    }
    MPI_FUNCS(X)
#undef X
    if (lib) dlclose(lib); /* RTLD_NOLOAD took a reference; the library stays loaded */
    return st;
}

static hg_status mpi_failed(int rc, const char *what)
{
    char msg[256] = "";
    int len = 0;
    if (g.Error_string && ((int (*)(int, char *, int *))g.Error_string)(rc, msg, &len) == 0 &&
        len > 0 && len < (int)sizeof msg)
        msg[len] = 0;
    else snprintf(msg, sizeof msg, "MPI error %d", rc);
    snprintf(g.broken, sizeof g.broken, "%s failed on rank %d: %s", what, g.rank, msg);
    return hg_error(HG_ERR_IO, "distributed: %s", g.broken);
}

hg_status hg_dist_init(const hg_dist_handles *h, double timeout_s, size_t bucket_bytes)
{
    if (h->handle_size != 4 && h->handle_size != 8)
        return hg_error(HG_ERR_VALUE, "distributed: MPI handles of %d bytes (4 or 8 supported)",
                        h->handle_size);
    if (!(timeout_s > 0) || bucket_bytes < 1024 || bucket_bytes > ((size_t)1 << 30))
        return hg_error(HG_ERR_VALUE,
                        "distributed: timeout %g s must be > 0 and the bucket (%zu bytes) "
                        "between 1 KiB and 1 GiB",
                        timeout_s, bucket_bytes);
    pthread_mutex_lock(&g_lock);
    hg_status st = resolve();
    if (st != HG_OK) goto done;
    int wide_before = g.wide, had_op = g.have_f16sum;
    g.wide = h->handle_size == 8;
    g.h = *h;
    if (had_op && wide_before != g.wide) had_op = g.have_f16sum = 0;
    int rank = 0, size = 1, rc;
    if ((rc = mpi_comm_int(g.Comm_rank, &rank)) != 0 ||
        (rc = mpi_comm_int(g.Comm_size, &size)) != 0) {
        st = mpi_failed(rc, "MPI_Comm_rank/size");
        goto done;
    }
    if (!had_op) {
        uint64_t op = 0;
        rc = ((int (*)(void *, int, void *))g.Op_create)((void *)f16_sum, 1, &op);
        if (rc != 0) {
            st = mpi_failed(rc, "MPI_Op_create");
            goto done;
        }
        g.op_f16sum = g.wide ? (intptr_t)op : (intptr_t)(int32_t)op;
        g.have_f16sum = 1;
    }
    g.rank = rank;
    g.size = size;
    g.timeout = timeout_s;
    g.bucket_bytes = bucket_bytes;
    g.broken[0] = 0;
    atomic_store(&g_ready, 1);
done:
    pthread_mutex_unlock(&g_lock);
    return st;
}

int hg_dist_rank(void) { return atomic_load(&g_ready) ? g.rank : 0; }
int hg_dist_size(void) { return atomic_load(&g_ready) ? g.size : 1; }

double hg_dist_set_timeout(double t)
{
    pthread_mutex_lock(&g_lock);
    double old = g.timeout;
    if (t > 0) g.timeout = t;
    pthread_mutex_unlock(&g_lock);
    return old;
}

void hg_dist_abort(int code)
{
    if (!atomic_load(&g_ready)) return;
    /* No lock: the abort must go out even while another thread waits in a collective. */
    if (g.wide) ((int (*)(intptr_t, int))g.Abort)(g.h.comm, code);
    else ((int (*)(int, int))g.Abort)((int)g.h.comm, code);
}

/* ---- the watchdog ------------------------------------------------------------------------- */

/* The collective running now: its name and start (monotonic ns; 0: none). Written by the
 * thread in the collective (under g_lock), read by the watchdog, which wakes a few times per
 * timeout: arming costs two atomic stores, no system call. */
static _Atomic(const char *) wd_what;
static atomic_llong wd_start;
static _Atomic double wd_timeout = 600.0; /* g.timeout, and the job's place, as of arming */
static atomic_int wd_rank, wd_size;
static pid_t wd_pid; /* the process the watchdog runs in (0: not started); under g_lock */

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    for (;;) {
        double timeout = atomic_load(&wd_timeout);
        double nap = timeout / 8 < 0.01 ? 0.01 : timeout / 8 > 1.0 ? 1.0 : timeout / 8;
        struct timespec ts = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
        nanosleep(&ts, NULL);
        long long start = atomic_load(&wd_start);
        if (start && (double)(now_ns() - start) * 1e-9 > timeout) {
            fprintf(stderr,
                    "hybridgluon.distributed: %s on rank %d of %d did not complete within %g s "
                    "(HG_DIST_TIMEOUT): another rank died, hangs, or did not make the same "
                    "call; ending the job\n",
                    atomic_load(&wd_what), atomic_load(&wd_rank), atomic_load(&wd_size), timeout);
            fflush(stderr);
            hg_dist_abort(1);
            _exit(1); /* MPI_Abort does not return; should it, the job still ends */
        }
    }
    return NULL;
}

/* With g_lock held: arms the watchdog for one collective (starting its thread on first use,
 * or in a forked child). HG_ERR_MEMORY when the thread cannot start: no collective runs
 * unwatched. */
static hg_status watch(const char *what)
{
    if (wd_pid != getpid()) {
        HG_TRY(hg_dist_start_thread(watchdog_main, "watchdog"));
        wd_pid = getpid();
    }
    atomic_store(&wd_timeout, g.timeout);
    atomic_store(&wd_rank, g.rank);
    atomic_store(&wd_size, g.size);
    atomic_store(&wd_what, what);
    atomic_store(&wd_start, now_ns());
    return HG_OK;
}

static void unwatch(void) { atomic_store(&wd_start, 0); }

/* Ends a watched MPI call (watch() before it): its return code as a status. Use as
 * `HG_TRY(watch(what)); st = watched(what, mpi_...(...));` (the call runs before watched). */
static hg_status watched(const char *what, int rc)
{
    unwatch();
    return rc != 0 ? mpi_failed(rc, what) : HG_OK;
}

/* Takes the lock and checks the communicator can be used; on HG_OK the caller unlocks. */
static hg_status enter(const char *what)
{
    if (!atomic_load(&g_ready))
        return hg_error(HG_ERR_UNSUPPORTED,
                        "distributed %s: not initialised (call hybridgluon.distributed.init())",
                        what);
    pthread_mutex_lock(&g_lock);
    if (g.broken[0]) {
        hg_status st = hg_error(HG_ERR_IO,
                                "distributed %s: an earlier collective failed, the job cannot "
                                "go on: %s",
                                what, g.broken);
        pthread_mutex_unlock(&g_lock);
        return st;
    }
    return HG_OK;
}

static hg_status check_cpu(hg_tensor *const *ts, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (hg_device_kind(ts[i]->storage->device_type) != HG_DEVICE_CPU)
            return hg_error(HG_ERR_UNSUPPORTED,
                            "distributed %s: tensor %d is on a GPU; collectives take CPU "
                            "arrays (GPU collectives need NCCL, not built yet)",
                            what, i);
    return HG_OK;
}

/* ---- allreduce ---------------------------------------------------------------------------- */

/* How a tensor travels: its wire dtype and element size. */
typedef struct wire {
    hg_dtype dtype;
    size_t esize;
    intptr_t type, op;
} wire;

static hg_status wire_of(const hg_tensor *t, int flags, int i, wire *w)
{
    hg_dtype d = t->dtype;
    if ((flags & HG_DIST_FP16) && d == HG_DTYPE_F32) d = HG_DTYPE_F16;
    int is_int = d == HG_DTYPE_I32 || d == HG_DTYPE_I64;
    if (is_int && (flags & HG_DIST_AVERAGE))
        return hg_error(HG_ERR_TYPE,
                        "distributed allreduce: tensor %d is %s; average=True needs a float "
                        "dtype (the mean of integers is not an integer)",
                        i, hg_dtype_name(t->dtype));
    switch (d) {
    case HG_DTYPE_F32: *w = (wire){d, 4, g.h.t_f32, g.h.op_sum}; break;
    case HG_DTYPE_F64: *w = (wire){d, 8, g.h.t_f64, g.h.op_sum}; break;
    case HG_DTYPE_F16: *w = (wire){d, 2, g.h.t_u16, g.op_f16sum}; break;
    case HG_DTYPE_I32: *w = (wire){d, 4, g.h.t_i32, g.h.op_sum}; break;
    case HG_DTYPE_I64: *w = (wire){d, 8, g.h.t_i64, g.h.op_sum}; break;
    default:
        return hg_error(HG_ERR_TYPE,
                        "distributed allreduce: tensor %d is %s (float32, float64, float16, "
                        "int32 and int64 can be summed)",
                        i, hg_dtype_name(t->dtype));
    }
    return HG_OK;
}

/* Copies n elements of t into the wire buffer (converting float32 to float16 on the way). */
static void pack(const hg_tensor *t, const wire *w, void *dst)
{
    if (t->dtype == HG_DTYPE_F32 && w->dtype == HG_DTYPE_F16)
        hg_f32_to_half_n(hg_data(t), dst, t->size);
    else memcpy(dst, hg_data(t), (size_t)t->size * w->esize);
}

static void unpack_values(hg_tensor *t, const wire *w, const void *src, double scale);

/* Writes the reduced wire values back into t, times scale (1 or 1/size). */
static void unpack(hg_tensor *t, const wire *w, const void *src, double scale)
{
    unpack_values(t, w, src, scale);
    hg_tensor_wrote(t);
}

static void unpack_values(hg_tensor *t, const wire *w, const void *src, double scale)
{
    int64_t n = t->size;
    if (w->dtype == HG_DTYPE_F16) {
        const uint16_t *s = src;
        if (t->dtype == HG_DTYPE_F32) {
            float *d = hg_data(t), f = (float)scale;
            for (int64_t i = 0; i < n; i++) d[i] = hg_half_bits_to_f32(s[i]) * f;
        } else {
            uint16_t *d = hg_data(t);
            for (int64_t i = 0; i < n; i++)
                d[i] = hg_f32_to_half_bits(hg_half_bits_to_f32(s[i]) * (float)scale);
        }
        return;
    }
    if (src != hg_data(t)) memcpy(hg_data(t), src, (size_t)n * w->esize);
    if (scale == 1.0) return;
    if (w->dtype == HG_DTYPE_F32) {
        float *d = hg_data(t), f = (float)scale;
        for (int64_t i = 0; i < n; i++) d[i] *= f;
    } else if (w->dtype == HG_DTYPE_F64) {
        double *d = hg_data(t);
        for (int64_t i = 0; i < n; i++) d[i] *= scale;
    }
}

/* A run of tensors of one wire dtype sent as one message (or, `inplace`, one tensor at least
 * a bucket large reduced where it lies). */
typedef struct span {
    int first, last, inplace;
    size_t bytes;
} span;

static hg_status scratch_for(size_t nbytes)
{
    if (g.scratch_cap >= nbytes) return HG_OK;
    if (g.scratch) hg_free(g.scratch, g.scratch_cap);
    g.scratch_cap = 0;
    if (!(g.scratch = hg_alloc(nbytes)))
        return hg_error(HG_ERR_MEMORY, "distributed allreduce: no memory for a %zu-byte bucket",
                        nbytes);
    g.scratch_cap = nbytes;
    return HG_OK;
}

/* Sums count wire elements at p over all ranks, in place, a bucket-sized chunk at a time. */
static hg_status reduce_buf(char *p, int64_t count, const wire *w)
{
    int64_t chunk = (int64_t)(g.bucket_bytes / w->esize);
    for (int64_t off = 0; off < count; off += chunk) {
        int64_t cnt = count - off < chunk ? count - off : chunk;
        HG_TRY(watch("allreduce"));
        HG_TRY(watched("allreduce",
                       mpi_allreduce(p + off * (int64_t)w->esize, (int)cnt, w->type, w->op)));
    }
    return HG_OK;
}

/* Orders the tensors by wire dtype (stably) and cuts them into spans. Returns the span count. */
static int plan_spans(hg_tensor *const *ts, const wire *w_in, int n, hg_tensor **order, wire *ws,
                      span *spans, size_t *max_bucket)
{
    static const hg_dtype kinds[] = {HG_DTYPE_F32, HG_DTYPE_F64, HG_DTYPE_F16, HG_DTYPE_I32,
                                     HG_DTYPE_I64};
    int m = 0, ns = 0, open = 0;
    *max_bucket = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int i = 0; i < n; i++) {
            if (w_in[i].dtype != kinds[k] || ts[i]->size == 0) continue;
            order[m] = ts[i];
            ws[m] = w_in[i];
            size_t bytes = (size_t)ts[i]->size * ws[m].esize;
            int inplace = bytes >= g.bucket_bytes && ws[m].dtype == ts[i]->dtype;
            span *cur = open ? &spans[ns - 1] : NULL;
            if (!inplace && cur && ws[cur->first].dtype == ws[m].dtype &&
                cur->bytes + bytes <= g.bucket_bytes) {
                cur->last = m + 1;
                cur->bytes += bytes;
            } else {
                spans[ns++] = (span){m, m + 1, inplace, bytes};
                open = !inplace;
            }
            m++;
        }
    }
    /* A bucket of one tensor that needs no conversion is reduced where it lies: no copies. */
    for (int j = 0; j < ns; j++) {
        span *sp = &spans[j];
        if (sp->last == sp->first + 1 && ws[sp->first].dtype == order[sp->first]->dtype)
            sp->inplace = 1;
        if (!sp->inplace && sp->bytes > *max_bucket) *max_bucket = sp->bytes;
    }
    return ns;
}

static hg_status run_spans(hg_tensor *const *order, const wire *ws, const span *spans, int ns,
                           double scale)
{
    for (int j = 0; j < ns; j++) {
        const span *sp = &spans[j];
        const wire *w = &ws[sp->first];
        if (sp->inplace) {
            hg_tensor *t = order[sp->first];
            HG_TRY(reduce_buf(hg_data(t), t->size, w));
            unpack(t, w, hg_data(t), scale);
            continue;
        }
        char *p = g.scratch;
        for (int i = sp->first; i < sp->last; i++) {
            pack(order[i], &ws[i], p);
            p += (size_t)order[i]->size * ws[i].esize;
        }
        HG_TRY(reduce_buf(g.scratch, (int64_t)(sp->bytes / w->esize), w));
        p = g.scratch;
        for (int i = sp->first; i < sp->last; i++) {
            unpack(order[i], &ws[i], p, scale);
            p += (size_t)order[i]->size * ws[i].esize;
        }
    }
    return HG_OK;
}

hg_status hg_dist_allreduce(hg_tensor *const *ts, int n, int flags)
{
    if (n < 0) return hg_error(HG_ERR_VALUE, "distributed allreduce: %d tensors", n);
    if (n == 0) return HG_OK;
    HG_TRY(check_cpu(ts, n, "allreduce"));
    HG_TRY(enter("allreduce"));
    hg_status st = HG_OK;
    wire *w_in = malloc((size_t)n * sizeof *w_in), *ws = malloc((size_t)n * sizeof *ws);
    hg_tensor **order = malloc((size_t)n * sizeof *order);
    span *spans = malloc((size_t)n * sizeof *spans);
    if (!w_in || !ws || !order || !spans) {
        st = hg_error(HG_ERR_MEMORY, "distributed allreduce: no memory for %d tensors", n);
        goto done;
    }
    for (int i = 0; i < n && st == HG_OK; i++) {
        st = wire_of(ts[i], flags, i, &w_in[i]);
        if (st == HG_OK && ts[i]->size > INT_MAX && w_in[i].dtype != ts[i]->dtype)
            st = hg_error(HG_ERR_VALUE,
                          "distributed allreduce: tensor %d has %lld elements; float16 "
                          "compression takes at most %d",
                          i, (long long)ts[i]->size, INT_MAX);
    }
    if (st != HG_OK) goto done;
    size_t max_bucket = 0;
    int ns = plan_spans(ts, w_in, n, order, ws, spans, &max_bucket);
    if (max_bucket) st = scratch_for(max_bucket);
    if (st == HG_OK)
        st = run_spans(order, ws, spans, ns, (flags & HG_DIST_AVERAGE) ? 1.0 / g.size : 1.0);
done:
    free(w_in);
    free(ws);
    free(order);
    free(spans);
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* ---- broadcast, allgather, barrier -------------------------------------------------------- */

hg_status hg_dist_broadcast(hg_tensor *const *ts, int n, int root)
{
    if (n < 0) return hg_error(HG_ERR_VALUE, "distributed broadcast: %d tensors", n);
    HG_TRY(check_cpu(ts, n, "broadcast"));
    HG_TRY(enter("broadcast"));
    hg_status st = HG_OK;
    if (root < 0 || root >= g.size) {
        st = hg_error(HG_ERR_VALUE, "distributed broadcast: root rank %d is not in [0, %d)", root,
                      g.size);
        goto done;
    }
    /* One message per tensor (chunks of at most a bucket), so a size mismatch between ranks
     * is reported by MPI for the tensor that has it. */
    for (int i = 0; i < n && st == HG_OK; i++) {
        char *p = hg_data(ts[i]);
        size_t bytes = (size_t)ts[i]->size * hg_dtype_size(ts[i]->dtype);
        for (size_t off = 0; off < bytes && st == HG_OK; off += g.bucket_bytes) {
            size_t cnt = bytes - off < g.bucket_bytes ? bytes - off : g.bucket_bytes;
            st = watch("broadcast");
            if (st == HG_OK)
                st = watched("broadcast", mpi_bcast(p + off, (int)cnt, g.h.t_byte, root));
        }
        hg_tensor_wrote(ts[i]);
    }
done:
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* What every rank's allgather input must agree on but dim 0, plus dim 0 itself. */
#define DESC_LEN (3 + HG_MAX_NDIM)

static hg_status gather_check(const hg_tensor *t, const int64_t *all)
{
    for (int r = 0; r < g.size; r++) {
        const int64_t *d = all + (size_t)r * DESC_LEN;
        int same = d[0] == t->dtype && d[1] == t->ndim;
        for (int k = 1; same && k < t->ndim; k++) same = d[3 + k] == t->shape[k];
        if (!same) {
            char mine[HG_SHAPE_STR];
            return hg_error(HG_ERR_VALUE,
                            "distributed allgather: rank %d has a %s tensor of shape %s, rank "
                            "%d one of dtype %s with %lld dims: they must agree in dtype and "
                            "in every dim but the first",
                            g.rank, hg_dtype_name(t->dtype), hg_shape_str(mine, t->ndim, t->shape),
                            r, hg_dtype_name((hg_dtype)d[0]), (long long)d[1]);
        }
    }
    return HG_OK;
}

hg_status hg_dist_allgather(const hg_tensor *t, hg_tensor **out)
{
    *out = NULL;
    hg_tensor *const one[1] = {(hg_tensor *)t};
    HG_TRY(check_cpu(one, 1, "allgather"));
    if (t->ndim < 1)
        return hg_error(HG_ERR_VALUE, "distributed allgather: a scalar (0-d) tensor cannot be "
                                      "concatenated along axis 0");
    HG_TRY(enter("allgather"));
    hg_status st = HG_OK;
    int64_t desc[DESC_LEN] = {t->dtype, t->ndim, t->shape[0]};
    for (int k = 0; k < t->ndim; k++) desc[3 + k] = t->shape[k];
    int64_t *all = calloc((size_t)g.size, sizeof desc);
    int *counts = calloc((size_t)g.size, sizeof(int)),
        *displs = calloc((size_t)g.size, sizeof(int));
    if (!all || !counts || !displs) {
        st = hg_error(HG_ERR_MEMORY, "distributed allgather: no memory");
        goto done;
    }
    st = watch("allgather");
    if (st == HG_OK) st = watched("allgather", mpi_allgather(desc, DESC_LEN, g.h.t_i64, all));
    if (st == HG_OK) st = gather_check(t, all);
    if (st != HG_OK) goto done;
    size_t row = (size_t)hg_dtype_size(t->dtype);
    for (int k = 1; k < t->ndim; k++) row *= (size_t)t->shape[k];
    int64_t rows = 0, bytes = 0;
    for (int r = 0; r < g.size; r++) {
        int64_t b = all[(size_t)r * DESC_LEN + 2] * (int64_t)row;
        if (b > INT_MAX || bytes + b > INT_MAX) {
            st = hg_error(HG_ERR_VALUE, "distributed allgather: more than %d bytes in all",
                          INT_MAX);
            goto done;
        }
        counts[r] = (int)b;
        displs[r] = (int)bytes;
        bytes += b;
        rows += all[(size_t)r * DESC_LEN + 2];
    }
    hg_meta m = hg_meta_of(t);
    m.shape[0] = rows;
    if ((st = hg_tensor_new_meta(&m, out)) != HG_OK) goto done;
    st = watch("allgather");
    if (st == HG_OK)
        st = watched("allgather",
                     mpi_allgatherv(hg_data(t), counts[g.rank], hg_data(*out), counts, displs));
    if (st != HG_OK) {
        hg_tensor_free(*out);
        *out = NULL;
    }
done:
    free(all);
    free(counts);
    free(displs);
    pthread_mutex_unlock(&g_lock);
    return st;
}

hg_status hg_dist_barrier(void)
{
    HG_TRY(enter("barrier"));
    hg_status st = watch("barrier");
    if (st == HG_OK) st = watched("barrier", mpi_barrier());
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* ---- for overlap.c (dist_impl.h) ---------------------------------------------------------- */

hg_status hg_dist_start_thread(void *(*fn)(void *), const char *what)
{
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &attr, fn, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return hg_error(HG_ERR_MEMORY, "distributed: cannot start the %s thread (%s)", what,
                        strerror(rc));
    return HG_OK;
}

hg_status hg_dist_enter(const char *what) { return enter(what); }
void hg_dist_leave(void) { pthread_mutex_unlock(&g_lock); }

hg_status hg_dist_wire(const hg_tensor *t, int flags, int i, hg_dtype *wire_dtype, size_t *esize)
{
    wire w = {0};
    HG_TRY(wire_of(t, flags, i, &w));
    *wire_dtype = w.dtype;
    *esize = w.esize;
    return HG_OK;
}

/* The wire of a dtype wire_of accepted, handles included (read under the lock). */
static wire wire_for(hg_dtype d)
{
    hg_tensor t = {.dtype = d};
    wire w = {0};
    (void)wire_of(&t, 0, 0, &w);
    return w;
}

/* pack and unpack read only the dtype and element size: no handles, no lock. */
void hg_dist_pack(const hg_tensor *t, hg_dtype wire_dtype, void *dst)
{
    wire w = {wire_dtype, hg_dtype_size(wire_dtype), 0, 0};
    pack(t, &w, dst);
}

void hg_dist_unpack(hg_tensor *t, hg_dtype wire_dtype, const void *src, double scale)
{
    wire w = {wire_dtype, hg_dtype_size(wire_dtype), 0, 0};
    unpack(t, &w, src, scale);
}

hg_status hg_dist_reduce_locked(void *buf, int64_t count, hg_dtype wire_dtype)
{
    wire w = wire_for(wire_dtype);
    return reduce_buf(buf, count, &w);
}
