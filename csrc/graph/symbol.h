/* Symbols: a DAG of reference-counted nodes (variables and op applications), as MXNet's nnvm
 * builds them. A symbol is a list of head entries (node, output index). Composing never copies
 * nodes, so symbols share structure. Graph algorithms walk the DAG iteratively (deep networks
 * must not overflow the C stack).
 */
#ifndef HG_GRAPH_SYMBOL_H
#define HG_GRAPH_SYMBOL_H

#include "core/op.h"

typedef struct hg_snode hg_snode;

typedef struct hg_sentry {
    hg_snode *node;
    int32_t index;
    int32_t version;
} hg_sentry;

struct hg_snode {
    atomic_long refcount;
    const hg_op_def *op; /* NULL: a variable */
    char *name;
    int nattr;           /* attributes as given, sorted by key (MXNet writes them so) */
    char **keys, **vals;
    hg_attrs *attrs;     /* op nodes: the parsed op attributes */
    int nin;
    hg_sentry *in;       /* each input holds a reference to its node */
    int nout, nvisible;
    char *origin; /* where the node was made ("net.features.2, model.py:31"), for errors; NULL */
    /* What a layer above attaches to the node (the autograd tape keeps its record here: the
     * values kept for backward, a variable's gradient buffer); the graph never looks inside,
     * it only calls ext_release(ext) when the node is freed. NULL: none. */
    void *ext;
    void (*ext_release)(void *ext);
    /* Control flow (_foreach, _while_loop, _cond and their backward ops): the graphs the node
     * runs, each owned by the node (MXNet keeps them in the node's attributes and writes them
     * under "subgraphs" in JSON). 0 / NULL for every other node. */
    int nsub;
    struct hg_symbol **sub;
};

typedef struct hg_symbol {
    int n;
    hg_sentry *heads; /* each head holds a reference to its node */
} hg_symbol;

/* A variable. Attribute keys should look like __x__ (shape, dtype, init, lr_mult...). */
HG_API hg_status hg_symbol_var(const char *name, int nattr, const char *const *keys,
                               const char *const *vals, hg_symbol **out);
/* Applies op to inputs (each a single-output symbol). Keys that are not __x__ annotations are
 * parsed against the op's schema; errors name the node and the op. The result's heads are the
 * op's visible outputs. */
HG_API hg_status hg_symbol_op(const hg_op_def *op, const char *name, int nattr,
                              const char *const *keys, const char *const *vals, int nin,
                              const hg_symbol *const *inputs, hg_symbol **out);
/* A new op node over entries (each retained); *out holds one reference. */
hg_status hg_snode_new_op(const hg_op_def *op, const char *name, int nattr, const char *const *keys,
                          const char *const *vals, int nin, const hg_sentry *in, hg_snode **out);
/* The same from attributes already parsed (the imperative tape): the set attributes are also
 * printed to keys/vals so rules and JSON see them. */
hg_status hg_snode_new_parsed(const hg_op_def *op, const char *name, const hg_attrs *a, int nin,
                              const hg_sentry *in, hg_snode **out);
/* Adds attributes to node n (an existing key takes the new value): any key on a variable,
 * annotations (__x__) only on an op node, whose parameters were parsed when it was made. The
 * node is unchanged on error. Not safe against a concurrent reader of the node's attributes. */
HG_API hg_status hg_snode_set_attrs(hg_snode *n, int nattr, const char *const *keys,
                                    const char *const *vals);
/* Gives node n copies of the symbols subs[0..nsub) (sharing their nodes) as its subgraphs;
 * a node has its subgraphs set once, right after it is made. */
hg_status hg_snode_set_subgraphs(hg_snode *n, int nsub, const struct hg_symbol *const *subs);
/* A variable node (no op). */
hg_status hg_snode_new_var(const char *name, hg_snode **out);
void hg_snode_retain(hg_snode *n);
void hg_snode_release(hg_snode *n);
/* hg_symbol_op for a node that holds subgraphs (control flow): the node gets copies of
 * subs[0..nsub). */
HG_API hg_status hg_symbol_op_sub(const hg_op_def *op, const char *name, int nattr,
                                  const char *const *keys, const char *const *vals, int nin,
                                  const struct hg_symbol *const *inputs, int nsub,
                                  const struct hg_symbol *const *subs, struct hg_symbol **out);
/* MXNet's MXSymbolCutSubgraph: the nodes of s whose "__subgraph_name__" attribute equals its
 * first head node's form the subgraph; every input edge of those nodes that comes from a node
 * outside it is replaced by a new variable named after that output ("fc_output", or the
 * variable's own name), one variable per distinct outside value. *out is the cut graph (new
 * nodes where inputs changed), cut[0..*ncut) the outside values in the order of the
 * variables (single-output symbols, malloc'ed array). Without the attribute nothing is cut. */
HG_API hg_status hg_symbol_cut_subgraph(const struct hg_symbol *s, struct hg_symbol **out,
                                        int *ncut, struct hg_symbol ***cut);
/* A symbol whose heads are the given entries (retained). */
hg_status hg_symbol_from_entries(int n, const hg_sentry *e, hg_symbol **out);
HG_API hg_status hg_symbol_group(int n, const hg_symbol *const *syms, hg_symbol **out);
HG_API hg_status hg_symbol_output(const hg_symbol *s, int i, hg_symbol **out);
HG_API void hg_symbol_free(hg_symbol *s);

/* The nodes reachable from the heads in MXNet's order (post-order DFS, inputs in order).
 * *nodes is malloc'ed (free it); the node pointers are borrowed from s. */
HG_API hg_status hg_symbol_topo(const hg_symbol *s, hg_snode ***nodes, int *n);

/* Lookup from node pointers to their positions in an array of nodes (a hash of the pointers),
 * for passes that ask "where is node x" many times: building is O(n), a lookup O(1). The map
 * borrows nothing; it only compares pointers. Immutable once built (threads may share it). */
typedef struct hg_nodemap hg_nodemap;
hg_status hg_nodemap_new(hg_snode *const *nodes, int n, hg_nodemap **out);
int hg_nodemap_get(const hg_nodemap *m, const hg_snode *x); /* -1: not in the array */
void hg_nodemap_free(hg_nodemap *m);

/* Topological positions of every node's inputs and of the heads, for nodes as returned by
 * hg_symbol_topo: in_idx[off[i] + k] is the position of input k of node i, off has n+1 entries,
 * head_idx[h] the position of head h. All three are malloc'ed. */
HG_API hg_status hg_symbol_topo_positions(const hg_symbol *s, hg_snode **nodes, int n, int **off,
                                          int **in_idx, int **head_idx);
/* The input values of node nd at topological position i, for a runner that keeps each node's
 * outputs in val[position][output] (off/in_idx from hg_symbol_topo_positions): ins[k] is
 * input k's value (ins holds HG_MAX_IO). HG_ERR_VALUE, naming the op, for a node with more
 * inputs than that. */
hg_status hg_snode_input_values(const hg_snode *nd, int i, hg_tensor **const *val, const int *off,
                                const int *in_idx, hg_tensor **ins);

/* A copy of s in which the variables named names[i] are replaced by the (single-output)
 * symbols with[i]; the rest of the graph is copied (new nodes, same attributes). */
HG_API hg_status hg_symbol_compose(const hg_symbol *s, int n, const char *const *names,
                                   const hg_symbol *const *with, hg_symbol **out);

/* MXNet 1.x JSON, byte-identical layout (dmlc JSONWriter). *out is malloc'ed. */
HG_API hg_status hg_symbol_to_json(const hg_symbol *s, char **out);
/* Reads MXNet JSON (current and older keys). Errors name the node and what was wrong. */
HG_API hg_status hg_symbol_from_json(const char *text, size_t len, hg_symbol **out);

#endif
