/* passes_internal.h — what the graph passes share (prefix tjp_): facts about
 * nodes read from the op table (effects, commutativity, fresh outputs), a
 * conservative alias analysis, structural hashing and equality of
 * attributes and tensor constants, and small editing helpers.
 *
 * Passes use only the public IR API (tjit/ir.h) and the op table's rows
 * (core/core.h); none of them knows the IR's data structures. */
#ifndef TJIT_PASSES_INTERNAL_H
#define TJIT_PASSES_INTERNAL_H

#include <stdint.h>

#include "core/core.h"
#include "core/ptrmap.h"
#include "tjit/passes.h"

/* ---- effects ---------------------------------------------------------------------
 * A node has an effect when removing, merging or reordering it could change
 * what a program computes beyond its own outputs: it writes into one of its
 * inputs (a Tensor(a!) argument given a tensor, not None), or it draws random
 * numbers (kind TJ_KIND_RANDOM or a Generator? argument), which advances a
 * generator. A fusion group has an effect when a node of its subgraph has. */

/* Whether op node n writes into its input i in place. */
bool tjp_writes_input(const tj_node *n, int i);
/* Whether n writes into any of its inputs (fusion groups: their subgraphs). */
bool tjp_mutates(const tj_node *n);
bool tjp_is_random(const tj_node *n);
bool tjp_has_effect(const tj_node *n);

/* Whether the two inputs of n may be swapped without changing its result:
 * add with alpha=1, mul, maximum, minimum, eq, ne, logical_and, logical_or.
 * (maximum and minimum may then return the other zero of a (-0, +0) pair.) */
bool tjp_is_commutative(const tj_node *n);

/* Whether n is an op node running op id (TJ_OP_mul, ...). */
bool tjp_is_op(const tj_node *n, int id);

/* ---- alias analysis ----------------------------------------------------------------
 * Values that may share memory fall in one class: a view's (or reshape's,
 * contiguous's, an in-place op's) output with its input 0, chunks and list
 * elements with their list, a fusion group's outputs with its inputs, and all
 * graph inputs together (a caller may pass overlapping tensors). Each class
 * records whether some value of it is written in place, returned by the
 * graph, or comes from outside the program (a graph input or a constant). */

enum {
    TJP_ALIAS_MUTATED = 1u << 0,
    TJP_ALIAS_OUTPUT = 1u << 1,
    TJP_ALIAS_EXTERNAL = 1u << 2
};

typedef struct tjp_alias {
    tjc_ptrmap index; /* value -> its number + 1 */
    int *parent;      /* union-find over value numbers */
    unsigned *flags;  /* TJP_ALIAS_* at each class's root */
    int n, cap;
} tjp_alias;

/* Analyses the top-level block of g. TJ_OK or TJ_ERR_MEMORY. A pass that
 * only asks whether a value may be written (CSE, constant folding, the
 * order canonicalize keeps between reads and writes) skips it when
 * tj_graph_writes_in_place(g) says no node writes: building it hashes every
 * value. */
tj_status tjp_alias_build(tjp_alias *a, tj_graph *g);
void tjp_alias_free(tjp_alias *a);
/* The class of v (its root's number), or -1 for a value the analysis does not know. */
int tjp_alias_class(tjp_alias *a, const tj_value *v);
/* The flags of v's class; unknown values answer every flag, to stay safe. */
unsigned tjp_alias_flags(tjp_alias *a, const tj_value *v);
/* Records that x takes r's place (r's uses now read x): their classes become
 * one, so x's flags gain r's. Keeps the analysis safe across a rewrite without
 * building it again; a value it does not know stays unknown (every flag). */
void tjp_alias_replaced(tjp_alias *a, const tj_value *r, const tj_value *x);

/* ---- layout ----------------------------------------------------------------------- */

/* Whether the strides in type t are contiguous for its sizes (size-1 dims
 * ignored). False when anything is unknown. */
bool tjp_type_contiguous(const tj_type *t);
/* Whether v is contiguous at every replay whatever sizes its inputs have: a
 * contiguous constant, the fresh output of an op, aten::contiguous's output,
 * or a view/reshape/flatten/squeeze/unsqueeze of such a value that its type
 * says is contiguous. */
bool tjp_surely_contiguous(const tj_value *v);
/* Whether two tensor types agree on dtype, rank, sizes and device, all known. */
bool tjp_same_shape_type(const tj_type *a, const tj_type *b);

/* ---- hashing and equality ---------------------------------------------------------- */

uint64_t tjp_hash_u64(uint64_t h, uint64_t x);
uint64_t tjp_hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t tjp_hash_str(uint64_t h, const char *s);

/* Constants up to this many elements are compared by value; larger ones by
 * identity. Hashes read at most this many elements. */
#define TJP_VALUE_COMPARE_MAX ((int64_t)1 << 16)

uint64_t tjp_hash_tensor(uint64_t h, const tj_tensor *t);
/* Bitwise equal values (NaN equals NaN, -0 differs from +0), same dtype and sizes. */
bool tjp_tensor_equal(const tj_tensor *a, const tj_tensor *b);
/* Attributes: kinds and values, tensors by tjp_tensor_equal, subgraphs by
 * their canonical text (hashed by structure, which equal texts share). */
uint64_t tjp_hash_attrs(uint64_t h, const tj_node *n);
bool tjp_attrs_equal(const tj_node *a, const tj_node *b);
/* Whether constant node n holds a tensor every element of which equals v
 * (CPU tensors of at most TJP_VALUE_COMPARE_MAX elements). */
bool tjp_constant_all(const tj_node *n, double v);

/* ---- editing ------------------------------------------------------------------------- */

/* Destroys n when none of its outputs is used and it has no effect, then the
 * definers of its inputs that this leaves unused, and so on. Returns the
 * number of nodes destroyed. */
int tjp_remove_if_dead(tj_node *n);
/* Runs pass on the subgraph of every fusion group of g's block. */
tj_status tjp_for_subgraphs(tj_graph *g, tj_pass_fn pass);
/* A node of op op_id before pos, on inputs (NULL: an absent Tensor?, which
 * becomes a new prim::None; a prim::None's output stands for one too) with attrs, all of them in schema order (NULL
 * only for an op without attributes), its output typed by the op's shape rule. Returns that output, or
 * NULL with an error; the graph is unchanged when the shape rule refuses. */
tj_value *tjp_emit_before(tj_node *pos, int op_id, tj_value *const *inputs, int n_inputs,
                          const tj_attr *attrs);
/* The same for an op of n_outs results (at most 4), written to outs; the
 * count, or -1 with an error. */
int tjp_emit_n_before(tj_node *pos, int op_id, tj_value *const *inputs, int n_inputs,
                      const tj_attr *attrs, tj_value **outs, int n_outs);
/* now replaces old wherever old is read, and takes old's name. */
tj_status tjp_replace_value(tj_value *old, tj_value *now);
/* Destroys n, whose results nobody reads, and the prim::None nodes that fed
 * it and feed nothing else now: for ops that dce keeps because their schema
 * marks an argument written (an eval-mode batch_norm's running statistics). */
tj_status tjp_destroy_with_nones(tj_node *n);
/* Whether t is a tensor type whose dims and sizes are all known. */
bool tjp_known_sizes(const tj_type *t);
/* Whether v is a [c] vector of dtype on the CPU (a normalisation's weight,
 * bias or running statistic), or absent when optional. */
bool tjp_channel_vector(const tj_value *v, int dtype, int64_t c, bool optional);
/* Whether v is the output of a prim::None (an absent optional tensor). */
bool tjp_is_none(const tj_value *v);

#endif
