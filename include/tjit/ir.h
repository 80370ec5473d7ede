/* ir.h — the graph IR: graphs, blocks, nodes, values and their types; the
 * editing API that passes use; the text form (printer and parser), the
 * verifier and the Graphviz form. docs/ir.md describes the text form.
 *
 * A graph owns one block. A block has inputs (the outputs of its prim::Param
 * node), a list of nodes in topological order, and outputs (the inputs of its
 * prim::Return node); neither sentinel is in the node list. A node has a kind
 * (an op of the table or a prim:: kind), input values, output values and
 * attributes. A value is defined by exactly one node and keeps a list of its
 * uses, the return node's included.
 *
 * Memory: every node, value and string of a graph lives in the graph's arena
 * and is freed whole by tj_graph_free. Destroying a node unlinks it; its memory
 * stays until the graph is freed. A subgraph belongs to the node that holds it.
 * Functions that can fail return NULL or a tj_status, with tj_last_error().
 */
/* Outside the guard: tjit.h includes this header at its end, after the types
 * used here, so whichever of the two comes first, these declarations follow
 * tjit.h's. */
#include "tjit/tjit.h"

/* the umbrella header first, outside this guard: it includes every public
 * header in dependency order, whichever of them a user includes first */
#include "tjit/tjit.h"
#ifndef TJIT_IR_H
#define TJIT_IR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_graph tj_graph;
typedef struct tj_block tj_block;
typedef struct tj_node tj_node;
typedef struct tj_value tj_value;
typedef struct tj_value_map tj_value_map;

/* ---- types -------------------------------------------------------------------
 * Text forms: Float(64, 512, strides=[512, 1], requires_grad=1, device=cpu),
 * Tensor (nothing known), Long(*, 3) (one size unknown), Float(..., device=cpu)
 * (rank unknown); int, float, bool, str, NoneType; Tensor[], int[], ... */

#define TJ_UNKNOWN (-1)            /* an unknown dtype, rank, device or requires_grad */
#define TJ_UNKNOWN_DIM INT64_MIN   /* an unknown size or stride */

typedef enum tj_type_kind {
    TJ_TYPE_TENSOR,
    TJ_TYPE_INT,
    TJ_TYPE_FLOAT,
    TJ_TYPE_BOOL,
    TJ_TYPE_STR,
    TJ_TYPE_NONE,  /* NoneType: the type of prim::None, an absent optional tensor */
    TJ_TYPE_LIST,
    TJ_NUM_TYPE_KINDS
} tj_type_kind;

typedef struct tj_type {
    tj_type_kind kind;
    tj_type_kind elem;            /* TJ_TYPE_LIST: the kind of the elements */
    /* TJ_TYPE_TENSOR only; each part may be TJ_UNKNOWN / TJ_UNKNOWN_DIM */
    int dtype;                    /* a tj_dtype */
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    int64_t strides[TJ_MAX_DIMS]; /* all TJ_UNKNOWN_DIM when the layout is unknown */
    int device_type;              /* a tj_device_type */
    int device_index;
    int requires_grad;            /* 0, 1 or TJ_UNKNOWN */
} tj_type;

tj_type tj_type_tensor(void);                    /* a tensor, nothing known */
/* A tensor type with dtype and sizes; strides unknown; device cpu. */
tj_type tj_type_tensor_of(tj_dtype dtype, const int64_t *sizes, int ndim);
/* Like tj_type_tensor_of with contiguous strides. */
tj_type tj_type_contiguous(tj_dtype dtype, const int64_t *sizes, int ndim);
tj_type tj_type_of_tensor(const tj_tensor *t);   /* everything known */
tj_type tj_type_scalar(tj_type_kind kind);       /* int, float, bool, str, NoneType */
tj_type tj_type_list(tj_type_kind elem);
bool tj_type_equal(const tj_type *a, const tj_type *b);
/* TJ_OK when every part of t is in range; a message names the part. */
tj_status tj_type_check(const tj_type *t);
/* The text form (flags: TJ_PRINT_NO_STRIDES); malloc'd, free with free(). */
char *tj_type_to_string(const tj_type *t, unsigned flags);

/* ---- graphs and blocks ------------------------------------------------------ */

tj_graph *tj_graph_new(void);
/* Frees g with every node, value and subgraph it holds and releases its
 * tensor constants. NULL is ignored; so is a subgraph still held by a node
 * (it is freed with that node's graph). */
void tj_graph_free(tj_graph *g);
tj_block *tj_graph_block(tj_graph *g);
tj_node *tj_graph_owner(const tj_graph *g); /* the node holding this subgraph, or NULL */

/* The inputs and outputs of the graph's block. */
tj_value *tj_graph_add_input(tj_graph *g, const tj_type *type, const char *name);
int tj_graph_num_inputs(const tj_graph *g);
tj_value *tj_graph_input(const tj_graph *g, int i);
tj_status tj_graph_add_output(tj_graph *g, tj_value *v);
int tj_graph_num_outputs(const tj_graph *g);
tj_value *tj_graph_output(const tj_graph *g, int i);
/* Whether some op node of g (its own block, not a group's subgraph) writes
 * an input in place, by its op's schema (a Tensor(a!) argument): false means
 * no value of g is ever written, which passes use to skip alias analysis. */
bool tj_graph_writes_in_place(const tj_graph *g);

tj_graph *tj_block_graph(const tj_block *b);
int tj_block_num_inputs(const tj_block *b);
tj_value *tj_block_input(const tj_block *b, int i);
/* type NULL: an unknown tensor; name NULL: unnamed. */
tj_value *tj_block_add_input(tj_block *b, const tj_type *type, const char *name);
tj_status tj_block_remove_input(tj_block *b, int i); /* an unused input only */
int tj_block_num_outputs(const tj_block *b);
tj_value *tj_block_output(const tj_block *b, int i);
tj_status tj_block_add_output(tj_block *b, tj_value *v);
tj_status tj_block_set_output(tj_block *b, int i, tj_value *v);
tj_status tj_block_remove_output(tj_block *b, int i);
/* Remove every input (output) i with remove[i] (an array of the block's
 * input (output) count) at once, the others keeping their order: linear,
 * where removing many one by one shifts the rest each time. Inputs must be
 * unused; on an error nothing is removed. */
tj_status tj_block_remove_inputs(tj_block *b, const bool *remove);
tj_status tj_block_remove_outputs(tj_block *b, const bool *remove);
tj_node *tj_block_first(const tj_block *b); /* NULL when empty */
tj_node *tj_block_last(const tj_block *b);
tj_node *tj_block_param(const tj_block *b);  /* defines the inputs */
tj_node *tj_block_return(const tj_block *b); /* uses the outputs */
int tj_block_num_nodes(const tj_block *b);
/* Appends a node made by a tj_node_create_* function. */
tj_status tj_block_append(tj_block *b, tj_node *n);

/* ---- nodes ------------------------------------------------------------------ */

typedef enum tj_node_kind {
    TJ_NODE_OP,             /* an op of the table: tj_node_op */
    TJ_NODE_CONSTANT,       /* prim::Constant[value=...]: int, float, bool, str, int[], float[], tensor */
    TJ_NODE_NONE,           /* prim::None: an absent optional tensor, of type NoneType */
    TJ_NODE_FUSION_GROUP,   /* prim::FusionGroup: runs its subgraph on its inputs */
    TJ_NODE_CONSTANT_CHUNK, /* prim::ConstantChunk[chunks, dim]: `chunks` pieces of its input */
    TJ_NODE_LIST_CONSTRUCT, /* prim::ListConstruct: one list of its inputs */
    TJ_NODE_LIST_UNPACK,    /* prim::ListUnpack: the elements of one list */
    TJ_NODE_PARAM,          /* prim::Param: defines a block's inputs; not in the node list */
    TJ_NODE_RETURN,         /* prim::Return: uses a block's outputs; not in the node list */
    TJ_NUM_NODE_KINDS
} tj_node_kind;

const char *tj_node_kind_name(tj_node_kind k); /* "prim::Constant"; "op" for TJ_NODE_OP */

/* Attribute kinds. An op's attributes are its non-tensor schema arguments, in
 * schema order, so tj_node_attrs(n) can be passed to tj_invoke as they are. */
typedef enum tj_attr_kind {
    TJ_ATTR_INT,
    TJ_ATTR_FLOAT,
    TJ_ATTR_BOOL,
    TJ_ATTR_STR,
    TJ_ATTR_INTS,
    TJ_ATTR_FLOATS,
    TJ_ATTR_DTYPE,
    TJ_ATTR_NONE,      /* an optional left out: float? (f = TJ_NONE), Generator? (gen = NULL) */
    TJ_ATTR_GENERATOR, /* a user's generator: printed as <generator>, never read back */
    TJ_ATTR_TENSOR,    /* prim::Constant of a tensor: tj_node_tensor */
    TJ_ATTR_GRAPH,     /* a subgraph: tj_node_subgraph */
    TJ_ATTR_SCALAR,    /* a Scalar argument: tj_attr.scalar, printed 2, 2. or True */
    TJ_NUM_ATTR_KINDS
} tj_attr_kind;

const char *tj_attr_kind_name(tj_attr_kind k); /* "int", "float[]", ... */

/* A node running op, not yet in a block. inputs are the op's tensor arguments
 * in schema order (a Tensor[] argument contributes all its elements; an absent
 * Tensor? is the output of a prim::None node); attrs its other arguments in
 * schema order, or NULL for the schema's defaults. n_outputs -1 takes the
 * schema's count. Outputs start as unknown tensors. Lists and strings in attrs
 * are copied. */
tj_node *tj_node_create_op(tj_graph *g, const tj_op_info *op, tj_value *const *inputs,
                           int n_inputs, const tj_attr *attrs, int n_attrs, int n_outputs);
/* A prim node of kind (None, FusionGroup, ConstantChunk, ListConstruct,
 * ListUnpack), not yet in a block. Outputs start as unknown tensors (NoneType
 * for prim::None); attributes start at 0 until tj_node_set_attr. */
tj_node *tj_node_create(tj_graph *g, tj_node_kind kind, tj_value *const *inputs, int n_inputs,
                        int n_outputs);
/* prim::Constant of an int, float, bool, str, int[] or float[]; its output is
 * typed accordingly. */
tj_node *tj_node_create_constant(tj_graph *g, tj_attr_kind kind, const tj_attr *value);
/* prim::Constant of a tensor: the graph keeps a reference to t. */
tj_node *tj_node_create_tensor_constant(tj_graph *g, tj_tensor *t);
/* prim::FusionGroup over subgraph (the node takes ownership of it, which must
 * not be held elsewhere), one output per subgraph output with its type. */
tj_node *tj_node_create_fusion_group(tj_graph *g, tj_graph *subgraph, tj_value *const *inputs,
                                     int n_inputs);

tj_node_kind tj_node_kind_of(const tj_node *n);
const tj_op_info *tj_node_op(const tj_node *n); /* NULL for prim nodes */
const char *tj_node_name(const tj_node *n);     /* "aten::add", "prim::Constant" */
int tj_node_id(const tj_node *n);               /* unique in its graph */
tj_graph *tj_node_graph(const tj_node *n);
tj_block *tj_node_block(const tj_node *n);      /* NULL while not in a block */
int tj_node_num_inputs(const tj_node *n);
tj_value *tj_node_input(const tj_node *n, int i);
int tj_node_num_outputs(const tj_node *n);
tj_value *tj_node_output(const tj_node *n, int i);
tj_node *tj_node_next(const tj_node *n); /* NULL after the last node */
tj_node *tj_node_prev(const tj_node *n);
/* Whether a comes before b in their block, in O(1). prim::Param is before
 * every node and prim::Return after. False when they are in different blocks. */
bool tj_node_is_before(const tj_node *a, const tj_node *b);

/* Attributes, by position (schema order for ops) or by name. */
int tj_node_num_attrs(const tj_node *n);
const char *tj_node_attr_name(const tj_node *n, int i);
tj_attr_kind tj_node_attr_kind(const tj_node *n, int i);
const tj_attr *tj_node_attr(const tj_node *n, int i);
const tj_attr *tj_node_attrs(const tj_node *n);
int tj_node_attr_index(const tj_node *n, const char *name); /* -1 when absent */
/* Sets an attribute the node's kind has, with a kind its schema allows
 * (lists and strings are copied). */
tj_status tj_node_set_attr(tj_node *n, const char *name, tj_attr_kind kind, const tj_attr *value);
tj_tensor *tj_node_tensor(const tj_node *n);  /* a tensor constant's value, borrowed */
tj_graph *tj_node_subgraph(const tj_node *n); /* a fusion group's subgraph, borrowed */
/* Replaces a fusion group's subgraph (the old one is freed). */
tj_status tj_node_set_subgraph(tj_node *n, tj_graph *subgraph);

/* ---- editing ------------------------------------------------------------------
 * pos may be a block's prim::Param (insert after it: at the front) or
 * prim::Return (insert before it: at the end). A node belongs to the graph
 * that created it and moves only within it. */
tj_status tj_node_insert_before(tj_node *n, tj_node *pos);
tj_status tj_node_insert_after(tj_node *n, tj_node *pos);
tj_status tj_node_move_before(tj_node *n, tj_node *pos);
tj_status tj_node_move_after(tj_node *n, tj_node *pos);
/* Unlinks n, drops its uses of its inputs and frees its subgraph and tensor.
 * Its outputs must have no uses left. */
tj_status tj_node_destroy(tj_node *n);
tj_status tj_node_set_input(tj_node *n, int i, tj_value *v);
tj_status tj_node_add_input(tj_node *n, tj_value *v);
tj_status tj_node_remove_input(tj_node *n, int i);
tj_value *tj_node_add_output(tj_node *n, const tj_type *type); /* type NULL: unknown tensor */
tj_status tj_node_remove_output(tj_node *n, int i);            /* an unused output only */

/* ---- values ----------------------------------------------------------------- */

typedef struct tj_use {
    tj_node *user; /* prim::Return for a block output */
    int index;     /* which input of user */
} tj_use;

const tj_type *tj_value_type(const tj_value *v);
tj_status tj_value_set_type(tj_value *v, const tj_type *type);
const char *tj_value_name(const tj_value *v); /* NULL when unnamed */
/* Names a value (NULL clears). Characters other than letters, digits, '_' and
 * '.' become '_', and a leading digit gets a '_' before it; a name another
 * value of the graph holds gets a suffix: x, x.1, x.2, ... */
tj_status tj_value_set_name(tj_value *v, const char *name);
int tj_value_id(const tj_value *v); /* unique in its graph, not dense */
/* A word each node and value carries for the pass that runs: a pass sets
 * every one it reads (what an earlier pass left there means nothing), so it
 * can keep a number per node or value without a hash map. NULL: 0 (getters)
 * or TJ_ERR_ARG (setters), with an error. */
int64_t tj_node_scratch(const tj_node *n);
tj_status tj_node_set_scratch(tj_node *n, int64_t x);
int64_t tj_value_scratch(const tj_value *v);
tj_status tj_value_set_scratch(tj_value *v, int64_t x);
tj_node *tj_value_node(const tj_value *v); /* the definer; prim::Param for block inputs */
int tj_value_offset(const tj_value *v);    /* index among its node's outputs */
tj_graph *tj_value_graph(const tj_value *v);
int tj_value_num_uses(const tj_value *v);
tj_use tj_value_use(const tj_value *v, int i);
/* Makes every use of v (block outputs included) use `with` instead. */
tj_status tj_value_replace_uses(tj_value *v, tj_value *with);
/* The same for uses by nodes after `after` in its block (and block outputs). */
tj_status tj_value_replace_uses_after(tj_value *v, tj_value *with, const tj_node *after);

/* ---- cloning ------------------------------------------------------------------ */

tj_value_map *tj_value_map_new(void);
void tj_value_map_free(tj_value_map *m);
tj_status tj_value_map_set(tj_value_map *m, const tj_value *from, tj_value *to);
tj_value *tj_value_map_get(const tj_value_map *m, const tj_value *from); /* NULL when absent */

/* A deep copy of g (subgraphs copied, tensor constants shared). When map is
 * given, it receives every value of g mapped to its copy. */
tj_graph *tj_graph_clone(const tj_graph *g, tj_value_map *map);
/* A copy of n in graph dst, not yet in a block: its inputs are map[input]
 * (each must be there), and map receives n's outputs mapped to the copy's. */
tj_node *tj_node_clone(tj_graph *dst, const tj_node *n, tj_value_map *map);
/* Copies the nodes of src before pos, with src's inputs standing for inputs[]
 * (one per src input); outputs[] receives what src's outputs became. */
tj_status tj_graph_insert_before(tj_node *pos, const tj_graph *src, tj_value *const *inputs,
                                 tj_value **outputs);

/* ---- text form, verifier, Graphviz ------------------------------------------- */

enum {
    TJ_PRINT_CANONICAL = 1u << 0,  /* unnamed values numbered in order of definition */
    TJ_PRINT_NO_STRIDES = 1u << 1, /* tensor types without strides */
    TJ_PRINT_NO_TYPES = 1u << 2,   /* no types at all */
    TJ_PRINT_PLAIN_NAMES = 1u << 3 /* op names without overload, as PyTorch prints them (aten::add);
                                      the parser resolves them back */
};

/* The text form; malloc'd, free with free(). NULL on error. */
char *tj_graph_to_string(const tj_graph *g, unsigned flags);
/* Reads the text form back. Malformed text gives NULL, with tj_last_error()
 * "line:col: expected X, got Y"; status (may be NULL) receives the status.
 * The result is well formed as far as the text says; tj_graph_verify checks
 * the rest (types against schemas, fusion-group arity). */
tj_graph *tj_graph_parse(const char *text, tj_status *status);
/* The same for len bytes that need not end in a NUL. */
tj_graph *tj_graph_parse_n(const char *text, size_t len, tj_status *status);
/* Checks every invariant of docs/ir.md, subgraphs included. TJ_OK, or
 * TJ_ERR_INTERNAL with a message naming the node and the broken invariant. */
tj_status tj_graph_verify(const tj_graph *g);
/* Graphviz: ops as nodes, values as edges labelled with their types, fusion
 * groups as clusters (flags: TJ_PRINT_NO_TYPES drops the labels). */
char *tj_graph_to_dot(const tj_graph *g, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif
