/* The op registry: indexes the op families (ops/families.c) by name and alias.
 * Built once, on first use, under pthread_once; read-only afterwards (so lock-free to read).
 * Every definition is validated as it is registered (hg_op_def_validate): a schema that cannot
 * work is a bug in an op file, reported on stderr and by hg_registry_check(), which the Python
 * module runs at import, so it cannot pass unnoticed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/op.h"

/* The op families, installed by the ops layer at load time (ops/families.c): core names no
 * op. NULL until installed; hg_registry_check reports a registry built without them. */
static const hg_op_def *const *g_families;

void hg_registry_install_families(const hg_op_def *const *families) { g_families = families; }

#define MAX_OPS 1024
#define TABLE 4096 /* hash slots for names and aliases; power of two */

static const hg_op_def *g_ops[MAX_OPS];
static hg_attrs *g_defaults[MAX_OPS];
static int g_count;
static struct {
    const char *key;
    int op;
} g_table[TABLE];
static struct {
    const hg_op_def *def;
    int op;
} g_by_ptr[TABLE];
static hg_kernel_fn g_gpu[MAX_OPS]; /* each op's GPU kernel (CUDA build), by op index */
static bool g_gpu_ws[MAX_OPS];      /* ... and whether it uses the op's workspace */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void build(void);
static char g_invalid[512]; /* the first definition that failed validation; "" when none */

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

/* Checks what the registry and the attribute parser rely on; the message names the op and the
 * attribute. */
hg_status hg_op_def_validate(const hg_op_def *op)
{
    if (!op || !op->name) return hg_error(HG_ERR_INTERNAL, "an op definition has no name");
    if (op->num_attrs < 0 || op->num_attrs > HG_MAX_ATTRS || (op->num_attrs && !op->attrs))
        return hg_error(HG_ERR_INTERNAL, "op %s: %d attributes (at most %d, with a schema)",
                        op->name, op->num_attrs, HG_MAX_ATTRS);
    for (int i = 0; i < op->num_attrs; i++) {
        const hg_attr_spec *sp = &op->attrs[i];
        if (!sp->name)
            return hg_error(HG_ERR_INTERNAL,
                            "op %s: schema entry %d of %d has no name (a gap in "
                            "its table?)",
                            op->name, i, op->num_attrs);
        if ((unsigned)sp->type >= HG_NUM_ATTR_TYPES || (sp->type == HG_ATTR_ENUM && !sp->choices))
            return hg_error(HG_ERR_INTERNAL, "op %s: attribute %s has a bad type or no choices",
                            op->name, sp->name);
        for (int j = 0; j < i; j++)
            if (strcmp(op->attrs[j].name, sp->name) == 0)
                return hg_error(HG_ERR_INTERNAL, "op %s: attribute %s is declared twice", op->name,
                                sp->name);
        hg_attrs a;
        memset(&a, 0, sizeof a);
        a.n = op->num_attrs;
        if (sp->def && hg_attr_parse(op, i, sp->def, &a) != HG_OK)
            return hg_error_prefix(HG_ERR_INTERNAL,
                                   "op %s: the default of attribute %s does not "
                                   "parse: ",
                                   op->name, sp->name);
    }
    return HG_OK;
}

/* The index of a registered definition, -1 for one the registry does not hold. */
static int index_of(const hg_op_def *op)
{
    for (uint64_t i = ((uintptr_t)op >> 4) * 0x9E3779B97F4A7C15ull >> 52; g_by_ptr[i].def;
         i = (i + 1) & (TABLE - 1))
        if (g_by_ptr[i].def == op) return g_by_ptr[i].op;
    return -1;
}

static const hg_gpu_kernel *const *g_gpu_tables;

void hg_registry_install_gpu_kernels(const hg_gpu_kernel *const *tables) { g_gpu_tables = tables; }

/* Attaches each GPU kernel to its op. A row naming no registered op, or an op twice, is a
 * definition error (hg_registry_check reports it). */
static void attach_gpu_kernels(void)
{
    for (const hg_gpu_kernel *const *t = g_gpu_tables; t && *t; t++) {
        for (const hg_gpu_kernel *k = *t; k->op; k++) {
            int i = -1; /* not hg_registry_find: it waits for this build to finish */
            for (uint64_t h = hash(k->op) & (TABLE - 1); g_table[h].key; h = (h + 1) & (TABLE - 1))
                if (strcmp(g_table[h].key, k->op) == 0) {
                    i = g_table[h].op;
                    break;
                }
            if (i < 0 || strcmp(g_ops[i]->name, k->op) != 0 || g_gpu[i]) {
                if (!g_invalid[0])
                    snprintf(g_invalid, sizeof g_invalid, "GPU kernel table: '%s' is %s", k->op,
                             i < 0      ? "not a registered op"
                             : g_gpu[i] ? "listed twice"
                                        : "an alias, not the op's name");
                continue;
            }
            g_gpu[i] = k->forward;
            g_gpu_ws[i] = k->workspace != 0;
        }
    }
}

hg_kernel_fn hg_gpu_kernel_ws(const hg_op_def *op, bool *workspace)
{
    pthread_once(&g_once, build);
    int i = index_of(op);
    if (workspace) *workspace = i >= 0 && g_gpu_ws[i];
    return i < 0 ? NULL : g_gpu[i];
}

hg_kernel_fn hg_gpu_kernel_of(const hg_op_def *op) { return hg_gpu_kernel_ws(op, NULL); }

static void add_family(const hg_op_def *fam)
{
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
    if (!g_families) {
        snprintf(g_invalid, sizeof g_invalid, "no op families are installed (ops/families.c)");
        return;
    }
    for (const hg_op_def *const *fam = g_families; *fam; fam++) add_family(*fam);
    for (int i = 0; i < g_count; i++) {
        if (hg_op_def_validate(g_ops[i]) != HG_OK) {
            if (!g_invalid[0]) {
                snprintf(g_invalid, sizeof g_invalid, "%s", hg_last_error());
                fprintf(stderr, "hybridgluon: invalid op definition: %s\n", g_invalid);
            }
            hg_error_clear();
            continue; /* no pre-parsed defaults; hg_registry_check says why */
        }
        g_defaults[i] = calloc(1, sizeof(hg_attrs));
        if (g_defaults[i]) hg_attrs_init_defaults(g_ops[i], g_defaults[i]); /* validated */
    }
    attach_gpu_kernels();
}

hg_status hg_registry_check(void)
{
    pthread_once(&g_once, build);
    if (g_invalid[0]) return hg_error(HG_ERR_INTERNAL, "invalid op definition: %s", g_invalid);
    return HG_OK;
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
    int k = index_of(op);
    if (k >= 0 && g_defaults[k]) {
        a->n = op->num_attrs;
        memcpy(a->v, g_defaults[k]->v, sizeof(hg_attr_value) * (size_t)op->num_attrs);
        if (op->parse_free) /* its private state: unset until parse_free fills it */
            memset(a->v + op->num_attrs, 0,
                   sizeof(hg_attr_value) * (size_t)(HG_MAX_ATTRS - op->num_attrs));
        return;
    }
    hg_attrs_init_defaults(op, a);
}

const hg_op_def *hg_op_find(const char *name) { return hg_registry_find(name); }
const char *hg_op_name(const hg_op_def *op) { return op ? op->name : NULL; }
int hg_op_count(void) { return hg_registry_count(); }
const hg_op_def *hg_op_at(int i) { return hg_registry_at(i); }
