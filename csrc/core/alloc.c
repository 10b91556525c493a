/* Size-class pooled allocator for tensor memory. Small and medium blocks are recycled through
 * per-class free lists so the imperative hot path does not hit malloc; large blocks (> 256 MiB)
 * go straight to the system. Thread-safe through one mutex, uncontended in practice.
 *
 * Blocks of a class of at least MMAP_MIN bytes, and all large blocks, are mapped with mmap:
 * fresh pages read as zero and cost nothing until first touched, so hg_alloc_zeroed hands a
 * fresh mapping out without writing it (a gradient buffer that inference never touches stays
 * unbacked). Only a recycled block is cleared. The size class, known from nbytes on both
 * hg_alloc and hg_free, says which system call gives a block back. Mapped blocks from 2 MiB up
 * are 2 MiB-aligned (HG_HUGEPAGES=1 also asks for huge pages). HG_NO_POOL (sanitizer builds)
 * uses aligned_alloc + free for everything. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/env.h"
#include "core/tensor.h"

#define HG_ALIGN 64
#define NUM_CLASSES 48           /* classes cover 64 B .. 2^26 B with 2 classes per power of 2 */
#define MAX_POOLED ((size_t)256 << 20)
/* Freed blocks are kept for reuse up to the most tensor memory the process has had live at once
 * (a training loop's working set: each step frees and asks again for the same blocks) plus
 * MIN_CACHED_TOTAL, at most a quarter of physical memory (and at least MIN_CACHED_TOTAL).
 * With a fixed 512 MiB, the part of MobileNetV2's training step at batch 16 (about 1.5 GB of
 * activations kept for the backward) above it was unmapped at every step and faulted back
 * in: 773 -> 594 ms a step on 2 threads with the larger cache. hg_alloc_release_cache gives
 * the cache back. */
#define MIN_CACHED_TOTAL ((size_t)512 << 20)
/* Smallest block taken from mmap: 128 KiB. Below it a system call and page faults would cost
 * more than clearing the block. It and every class above it are multiples of MAP_UNIT. */
#define MMAP_MIN ((size_t)128 << 10)
#define MAP_UNIT ((size_t)64 << 10) /* a multiple of the page size (4, 16 or 64 KiB) */
#define HUGE_SIZE ((size_t)2 << 20) /* blocks from this size up start on such a boundary */

typedef struct block {
    struct block *next;
} block;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static block *g_free[NUM_CLASSES];
static size_t g_cached;
/* Bytes handed out and not yet returned (as requested, before rounding to a class), and the
 * most there were since the last hg_alloc_reset_peak: how much memory a run needed. */
static atomic_size_t g_live, g_peak;
static atomic_size_t g_high; /* the most live bytes ever (g_peak can be reset) */
static size_t g_phys_quarter; /* under g_lock; 0 until first needed */

static void count_alloc(size_t n)
{
    size_t live = atomic_fetch_add_explicit(&g_live, n, memory_order_relaxed) + n;
    size_t peak = atomic_load_explicit(&g_peak, memory_order_relaxed);
    while (live > peak && !atomic_compare_exchange_weak_explicit(
                              &g_peak, &peak, live, memory_order_relaxed, memory_order_relaxed)) {
    }
    size_t high = atomic_load_explicit(&g_high, memory_order_relaxed);
    while (live > high && !atomic_compare_exchange_weak_explicit(
                              &g_high, &high, live, memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* Class c holds sizes up to class_size(c): 64, 96, 128, 192, 256, 384, ... */
static size_t class_size(int c) { return ((size_t)(2 + (c & 1)) << (c >> 1)) * 32; }

static int class_of(size_t n)
{
    int c = 0;
    while (class_size(c) < n) c++;
    return c;
}

/* Mapped length of a large (unpooled) block: a whole number of pages of any usual size, so the
 * trimming in map_block and the munmap in hg_free work on page boundaries. */
static size_t large_size(size_t n) { return (n + MAP_UNIT - 1) / MAP_UNIT * MAP_UNIT; }

/* HG_HUGEPAGES=1 (read once) asks for huge pages. Off by default: in measurements of first
 * calls it gained little on average, costs some resident memory, and where the system's THP
 * defrag setting is "madvise" a fault may stall on compaction. */
static bool huge_pages_on(void)
{
    static atomic_int on = -1;
    return hg_env_on_once(&on, "HG_HUGEPAGES");
}

/* A fresh zero-filled mapping of n bytes (a multiple of MAP_UNIT), or NULL. From HUGE_SIZE up
 * it starts on a 2 MiB boundary, so transparent huge pages (THP "always", or HG_HUGEPAGES=1)
 * can back it: a first touch then costs one fault per 2 MiB instead of one per 4 KiB page.
 * Untouched ranges stay unbacked either way. */
static void *map_block(size_t n)
{
    size_t extra = n >= HUGE_SIZE ? HUGE_SIZE : 0;
    char *p = mmap(NULL, n + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    if (!extra) return p;
    /* Keep exactly [q, q + n) so hg_free can unmap the block by its size alone. */
    size_t head = (HUGE_SIZE - (uintptr_t)p % HUGE_SIZE) % HUGE_SIZE;
    char *q = p + head;
    if (head) munmap(p, head);
    if (extra - head) munmap(q + n, extra - head);
#ifdef MADV_HUGEPAGE
    if (huge_pages_on()) madvise(q, n, MADV_HUGEPAGE); /* advice only */
#endif
    return q;
}

/* Gives back a block that no cache keeps: unmapped or freed as its size says it was made. */
static void release_block(void *p, size_t bytes)
{
    if (bytes >= MMAP_MIN) munmap(p, bytes);
    else free(p);
}

/* A block for nbytes (> 0); *zeroed tells whether it is known to read as zero. */
static void *alloc_block(size_t nbytes, bool *zeroed)
{
    *zeroed = false;
#ifdef HG_NO_POOL /* sanitizer builds: every block is a real allocation so misuse is caught */
    return aligned_alloc(HG_ALIGN, (nbytes + HG_ALIGN - 1) / HG_ALIGN * HG_ALIGN);
#endif
    if (nbytes > MAX_POOLED) {
        void *p = map_block(large_size(nbytes));
        *zeroed = p != NULL;
        return p;
    }
    int c = class_of(nbytes);
    size_t bytes = class_size(c);
    pthread_mutex_lock(&g_lock);
    block *b = g_free[c];
    if (b) {
        g_free[c] = b->next;
        g_cached -= bytes;
    }
    pthread_mutex_unlock(&g_lock);
    if (b) return b;
    if (bytes < MMAP_MIN) return aligned_alloc(HG_ALIGN, bytes);
    b = map_block(bytes);
    *zeroed = b != NULL;
    return b;
}

void *hg_alloc(size_t nbytes)
{
    if (nbytes == 0) nbytes = 1;
    bool zeroed;
    void *p = alloc_block(nbytes, &zeroed);
    if (p) count_alloc(nbytes);
    return p;
}

void *hg_alloc_zeroed(size_t nbytes)
{
    if (nbytes == 0) nbytes = 1;
    bool zeroed;
    void *p = alloc_block(nbytes, &zeroed);
    if (!p) return NULL;
    if (!zeroed) memset(p, 0, nbytes); /* recycled or from malloc: it may hold old data */
    count_alloc(nbytes);
    return p;
}

/* How many bytes the free lists may hold (see MIN_CACHED_TOTAL); called under g_lock. */
static size_t cache_limit(void)
{
    if (!g_phys_quarter) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
        g_phys_quarter = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 4 : MIN_CACHED_TOTAL;
    }
    /* the working set plus the old fixed cache: blocks are counted by their class (rounded
     * up) and other, smaller blocks sit in the cache too */
    size_t lim = atomic_load_explicit(&g_high, memory_order_relaxed) + MIN_CACHED_TOTAL;
    if (lim > g_phys_quarter) lim = g_phys_quarter;
    return lim > MIN_CACHED_TOTAL ? lim : MIN_CACHED_TOTAL;
}

void hg_free(void *p, size_t nbytes)
{
    if (!p) return;
    if (nbytes == 0) nbytes = 1;
    atomic_fetch_sub_explicit(&g_live, nbytes, memory_order_relaxed);
#ifdef HG_NO_POOL
    free(p);
    return;
#endif
    if (nbytes > MAX_POOLED) {
        munmap(p, large_size(nbytes));
        return;
    }
    int c = class_of(nbytes);
    size_t bytes = class_size(c);
    pthread_mutex_lock(&g_lock);
    if (g_cached + bytes <= cache_limit()) {
        block *b = p;
        b->next = g_free[c];
        g_free[c] = b;
        g_cached += bytes;
        p = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    if (p) release_block(p, bytes);
}

size_t hg_alloc_cached_bytes(void)
{
    pthread_mutex_lock(&g_lock);
    size_t n = g_cached;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void hg_alloc_release_cache(void)
{
    pthread_mutex_lock(&g_lock);
    for (int c = 0; c < NUM_CLASSES; c++) {
        while (g_free[c]) {
            block *b = g_free[c];
            g_free[c] = b->next;
            release_block(b, class_size(c));
        }
    }
    g_cached = 0;
    pthread_mutex_unlock(&g_lock);
}

size_t hg_alloc_live_bytes(void) { return atomic_load(&g_live); }

size_t hg_alloc_peak_bytes(void) { return atomic_load(&g_peak); }

void hg_alloc_reset_peak(void) { atomic_store(&g_peak, atomic_load(&g_live)); }
