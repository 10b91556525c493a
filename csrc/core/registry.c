/* The op registry: lists the op families and indexes them by name and alias.
 * Built once, on first use, under pthread_once; read-only afterwards (so lock-free to read). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"

/* Every op family. Adding a family means adding one line here; adding an op to a family means
 * nothing here at all. */
#define HG_FAMILIES(X)                                                                          \
    X(elemwise_unary) X(elemwise_binary) X(reduce) X(matrix) X(shape) X(slicing) X(indexing)   \
    X(nn_basic) X(creation) X(random) X(sort) X(nn_train) X(conv) X(pool) X(cast) X(resample)   \
    X(deconv) X(norm) X(grad_util) X(optimizer) X(reduce_grad) X(ctc)

#define DECLARE(f) extern const hg_op_def hg_ops_##f[] __attribute__((weak));
HG_FAMILIES(DECLARE)
#undef DECLARE

#define MAX_OPS 1024
#define TABLE 4096 /* hash slots for names and aliases; power of two */

static const hg_op_def *g_ops[MAX_OPS];
static hg_attrs *g_defaults[MAX_OPS];
static int g_count;
static struct { const char *key; int op; } g_table[TABLE];
static struct { const hg_op_def *def; int op; } g_by_ptr[TABLE];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static void insert(const char *key, int op)
{
    for (uint64_t i = hash(key) & (TABLE - 1);; i = (i + 1) & (TABLE - 1)) {
        if (!g_table[i].key) {
            g_table[i].key = key;
            g_table[i].op = op;
            return;
        }
        if (strcmp(g_table[i].key, key) == 0) return; /* first definition wins */
    }
}

static void add_family(const hg_op_def *fam)
{
    if (!fam) return;
    for (; fam->name && g_count < MAX_OPS; fam++) {
        g_ops[g_count] = fam;
        insert(fam->name, g_count);
        uint64_t i = ((uintptr_t)fam >> 4) * 0x9E3779B97F4A7C15ull >> 52;
        while (g_by_ptr[i].def) i = (i + 1) & (TABLE - 1);
        g_by_ptr[i].def = fam;
        g_by_ptr[i].op = g_count;
        for (const char *const *al = fam->aliases; al && *al; al++) insert(*al, g_count);
        g_count++;
    }
}

static void build(void)
{
#define ADD(f) add_family(hg_ops_##f);
    HG_FAMILIES(ADD)
#undef ADD
    for (int i = 0; i < g_count; i++) {
        g_defaults[i] = calloc(1, sizeof(hg_attrs));
        /* A schema whose default does not parse is a bug in the op file; leave zeros. */
        if (g_defaults[i] && hg_attrs_init_defaults(g_ops[i], g_defaults[i]) != HG_OK)
            hg_error_clear();
    }
}

static int find_index(const char *name)
{
    pthread_once(&g_once, build);
    for (uint64_t i = hash(name) & (TABLE - 1); g_table[i].key; i = (i + 1) & (TABLE - 1))
        if (strcmp(g_table[i].key, name) == 0) return g_table[i].op;
    return -1;
}

const hg_op_def *hg_registry_find(const char *name)
{
    int i = name ? find_index(name) : -1;
    return i < 0 ? NULL : g_ops[i];
}

int hg_registry_count(void)
{
    pthread_once(&g_once, build);
    return g_count;
}

const hg_op_def *hg_registry_at(int i)
{
    pthread_once(&g_once, build);
    return i >= 0 && i < g_count ? g_ops[i] : NULL;
}

/* Defaults pre-parsed at registration: copying them is the cheap start of every op call. */
void hg_attrs_set_defaults(const hg_op_def *op, hg_attrs *a)
{
    pthread_once(&g_once, build);
    for (uint64_t i = ((uintptr_t)op >> 4) * 0x9E3779B97F4A7C15ull >> 52; g_by_ptr[i].def;
         i = (i + 1) & (TABLE - 1)) {
        if (g_by_ptr[i].def == op && g_defaults[g_by_ptr[i].op]) {
            a->n = op->num_attrs;
            memcpy(a->v, g_defaults[g_by_ptr[i].op]->v,
                   sizeof(hg_attr_value) * (size_t)op->num_attrs);
            return;
        }
    }
    hg_attrs_init_defaults(op, a);
}

const hg_op_def *hg_op_find(const char *name) { return hg_registry_find(name); }
const char *hg_op_name(const hg_op_def *op) { return op ? op->name : NULL; }
int hg_op_count(void) { return hg_registry_count(); }
const hg_op_def *hg_op_at(int i) { return hg_registry_at(i); }
