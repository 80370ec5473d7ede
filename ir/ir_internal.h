/* ir_internal.h — the IR's data structures and the helpers the files of ir/
 * share: the arena, hash tables, a growing string buffer, the prim kind table
 * and the text form's small pieces (float and string literals). Prefix tjir_.
 */
#ifndef TJIT_IR_INTERNAL_H
#define TJIT_IR_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "core/core.h"
#include "tjit/ir.h"

/* ---- arena ------------------------------------------------------------------- */

typedef struct tjir_chunk tjir_chunk;
typedef struct tjir_arena {
    tjir_chunk *head;
    size_t chunk_bytes; /* of the next chunk: small for a fusion group's few nodes, doubling */
} tjir_arena;

/* Zeroed memory that lives until tjir_arena_free; NULL (with an error set)
 * when out of memory. */
void *tjir_alloc(tjir_arena *a, size_t n);
char *tjir_strdup(tjir_arena *a, const char *s);
char *tjir_strndup(tjir_arena *a, const char *s, size_t n);
void tjir_arena_free(tjir_arena *a);
/* Grows *arr (elements of size elem) to hold at least need; old contents are
 * copied and the old array is left to the arena. */
bool tjir_grow(tjir_arena *a, void **arr, int *cap, int need, size_t elem);

/* The same for malloc'd arrays (freed by their owner). */
bool tjir_grow_heap(void **arr, int *cap, int need, size_t elem);

/* ---- hash tables --------------------------------------------------------------
 * Open addressing keyed by pointer identity or by C string. */

typedef struct tjir_map {
    struct tjir_slot *slots;
    size_t cap, used, tombs;
    bool str_keys;
} tjir_map;

void tjir_map_init(tjir_map *m, bool str_keys);
void tjir_map_clear(tjir_map *m);
void *tjir_map_get(const tjir_map *m, const void *key);
bool tjir_map_put(tjir_map *m, const void *key, void *val); /* false when out of memory */
void tjir_map_del(tjir_map *m, const void *key);

/* ---- the structures -------------------------------------------------------------- */

struct tj_value {
    /* what adding a use reads, together: checking the value is live and of
     * the node's graph needs no read of its defining node, which in a large
     * graph is a cache miss of its own */
    tj_node *node; /* the definer */
    tj_graph *graph; /* the definer's; NULL once the node is destroyed or the value removed */
    tj_use *uses;
    int n_uses, cap_uses;
    int offset;    /* among node's outputs */
    int id;
    const char *name; /* in the arena; NULL when unnamed */
    const tj_type *type; /* the graph's one copy of it (tjir_intern_type) */
    int64_t scratch; /* the running pass's */
};

enum { TJIR_INLINE_INPUTS = 2, TJIR_INLINE_OUTPUTS = 1 };

struct tj_node {
    /* what every walk reads first, in the node's first 64 bytes: a pass over
     * a graph too large for the caches misses once per node, not three times */
    tj_node_kind kind;
    int n_inputs, n_outputs;
    const tj_op_info *op; /* TJ_NODE_OP */
    tj_node *prev, *next; /* block order */
    tj_value **inputs;
    tj_value **outputs;
    int64_t pos;          /* topological position, increasing along the block */
    /* the rest */
    tj_block *block;      /* NULL while not in a block */
    tj_graph *graph;
    int *use_at; /* where input i's use sits in inputs[i]->uses: O(1) removal */
    int cap_inputs;       /* of inputs and use_at both */
    int cap_outputs;
    /* attributes: parallel arrays so that attrs can go to tj_invoke as it is */
    tj_attr *attrs;
    tj_attr_kind *attr_kinds;
    const char **attr_names; /* the schema's or the prim table's strings */
    int n_attrs;
    int id;
    tj_tensor *tensor;   /* TJ_ATTR_TENSOR, owned reference */
    tj_graph *subgraph;  /* TJ_ATTR_GRAPH, owned */
    int line; /* the text line it was parsed from, else 0 */
    bool destroyed;
    tj_node *all_next; /* every node the graph made, for tj_graph_free */
    int64_t scratch;   /* the running pass's */
    /* inputs, their use positions and outputs live here while they fit (most
     * nodes): a walk reads them without leaving the node */
    tj_value *inline_inputs[TJIR_INLINE_INPUTS];
    int inline_use_at[TJIR_INLINE_INPUTS];
    tj_value *inline_outputs[TJIR_INLINE_OUTPUTS];
};

struct tj_block {
    tj_graph *graph;
    tj_node *param, *ret; /* sentinels: block inputs and outputs */
    tj_node *first, *last;
    int n_nodes;
};

struct tj_graph {
    tjir_arena arena;
    /* nodes and values each in an arena of their own, one after another at a
     * fixed stride: a walk over a graph larger than the caches then reads
     * memory in a pattern the hardware prefetches, where nodes interleaved
     * with arrays of every size made each step a miss */
    tjir_arena node_arena, value_arena;
    tj_block block;
    tj_node *owner;
    tj_node *all_nodes;
    int next_value_id, next_node_id;
    tjir_map names; /* name -> value */
    /* base name -> k + 1 where base.1 ... base.k are all taken (graph.c),
     * so uniquing a name does not retry every suffix from 1 */
    tjir_map suffixes;
    struct tjir_meta *meta; /* bound inputs and trace warnings (meta.c); NULL when none */
    /* every distinct type of the graph's values, once (open addressing): a
     * value holds a pointer, not 160 bytes of sizes and strides */
    const tj_type **types;
    size_t types_cap, types_n;
    const tj_type *last_type; /* the one interned last */
    /* op nodes made and not destroyed whose op writes an input in place: none
     * means no value of the graph is ever written (tj_graph_writes_in_place) */
    int n_writers;
};

/* Gives n its op (and counts it among the graph's writers). */
void tjir_set_op(tj_node *n, const tj_op_info *op);

/* g's copy of t (its entries past ndim ignored); NULL when out of memory. */
const tj_type *tjir_intern_type(tj_graph *g, const tj_type *t);

/* Frees what meta.c keeps for g. */
void tjir_meta_free(tj_graph *g);

/* Positions: nodes are spaced so that most insertions find a gap; a block is
 * renumbered when one runs out. Param and Return sit outside the range. */
#define TJIR_POS_MIN (-(INT64_C(1) << 61))
#define TJIR_POS_MAX (INT64_C(1) << 61)
#define TJIR_POS_STEP (INT64_C(1) << 32)

/* ---- graph internals (graph.c) ----------------------------------------------------- */

tj_node *tjir_node_new(tj_graph *g, tj_node_kind kind, int n_outputs);
tj_value *tjir_value_new(tj_graph *g, tj_node *n, const tj_type *type);
/* Use lists: a value's uses in no set order (a removal moves the last use
 * into the gap); user->use_at[index] says where each one is. add_use needs
 * user's inputs to have room for index. */
bool tjir_add_use(tj_graph *g, tj_value *v, tj_node *user, int index);
/* Room for need inputs in n (and their use positions), in one array each. */
bool tjir_reserve_inputs(tj_node *n, int need);
void tjir_drop_use(tj_value *v, tj_node *user, int index);
/* Sets a value's name exactly (no suffixing); false when taken. */
bool tjir_claim_name(tj_value *v, const char *name);
void tjir_release_node(tj_node *n); /* its tensor and subgraph */

/* ---- kinds and attributes (attrs.c) ------------------------------------------------- */

typedef struct tjir_prim {
    const char *name;       /* "prim::Constant" */
    const char *attrs[2];   /* attribute names, NULL-terminated */
    tj_attr_kind kinds[2];  /* their kinds (Constant's value: any constant kind) */
    int n_attrs;
    bool writable;          /* may appear in the text form */
} tjir_prim;

const tjir_prim *tjir_prim_info(tj_node_kind k);
/* The kind of an op attribute value under its schema type. */
tj_attr_kind tjir_attr_kind_for(const tj_arg *arg, const tj_attr *v);
/* Whether kind may stand for a schema argument of this type. */
bool tjir_attr_fits(const tj_arg *arg, tj_attr_kind kind);
/* Why v (of kind) cannot be attribute i of op, or TJ_OK. */
tj_status tjir_check_op_attr(const tj_op_info *op, int i, tj_attr_kind kind, const tj_attr *v);
/* Copies v (lists and strings into g's arena) into slot i of n. */
tj_status tjir_store_attr(tj_node *n, int i, tj_attr_kind kind, const tj_attr *v);
/* Sizes n's attribute arrays for its kind (schema defaults for ops). */
tj_status tjir_init_attrs(tj_node *n, bool defaults);
bool tjir_kind_is_constant_value(tj_attr_kind k); /* kinds prim::Constant holds */
tj_type tjir_constant_type(tj_attr_kind kind, const tj_attr *v, const tj_tensor *t);

/* ---- text helpers (types.c) ----------------------------------------------------------- */

typedef struct tjir_buf {
    char *data;
    size_t len, cap;
    bool failed; /* out of memory: further appends are dropped */
} tjir_buf;

void tjir_buf_put(tjir_buf *b, const char *s);
void tjir_buf_putn(tjir_buf *b, const char *s, size_t n);
void tjir_buf_printf(tjir_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string (caller frees), or NULL with an error when out of memory. */
char *tjir_buf_finish(tjir_buf *b);

/* The shortest text that reads back as the same double (or float, when
 * single), always with a '.', 'e', "inf" or "nan" so it reads as a float. */
void tjir_put_float(tjir_buf *b, double v, bool single);
void tjir_put_string(tjir_buf *b, const char *s); /* quoted, escaped */
void tjir_put_type(tjir_buf *b, const tj_type *t, unsigned flags);
void tjir_put_attr(tjir_buf *b, const tj_node *n, int i);

const char *tjir_dtype_ir_name(int dtype); /* "Float", or NULL */
/* op's name without its overload ("aten::add" for aten::add.Scalar), into buf
 * (plain_names.c). */
const char *tjir_plain_name(const tj_op_info *op, char *buf, size_t n);
int tjir_dtype_from_ir_name(const char *s, size_t n); /* a tj_dtype or -1 */

#endif
