/* tjo.h — the interchange module: ONNX export and import (docs/onnx.md).
 * Prefix tjo_. It owns everything that knows ONNX: the protobuf-c messages
 * generated from ONNX's onnx.proto, tensors to and from TensorProto
 * (proto.c), the exporter (export.c: graph walk, names, initializers and
 * value_info; export_ops.c and export_nn.c: one rule per tjit op, or why it
 * has none) and the importer (import.c: the model's graph, names and order;
 * import_emit.c: typed nodes, constants folded; import_pointwise.c,
 * import_shape.c, import_reduce.c, import_nn.c: one rule per ONNX op;
 * import_patterns.c: linear and gelu recovered). Nothing below this module
 * knows ONNX; it uses the public graph API, the op table and the shape rules.
 */
#ifndef TJIT_INTERCHANGE_TJO_H
#define TJIT_INTERCHANGE_TJO_H

#include <stdarg.h>

#include "core/core.h"
#include "onnx.pb-c.h"
#include "tjit/onnx.h"

/* ---- proto.c: dtypes, tensors, files ------------------------------------------- */

/* ONNX's TensorProto.DataType of a tjit dtype, and back (-1 when tjit has none). */
int tjo_onnx_dtype(tj_dtype d);
int tjo_dtype_from_onnx(int onnx_type);
const char *tjo_onnx_dtype_name(int onnx_type); /* "FLOAT", "INT32", ... */

/* A tensor from a TensorProto (raw_data or the typed fields); NULL with an
 * error naming `what` on a dtype tjit lacks (TJ_ERR_UNSUPPORTED) or data that
 * does not fit the dims (TJ_ERR_PARSE). */
tj_tensor *tjo_tensor_from_proto(const Onnx__TensorProto *p, const char *what);

/* A growing list of malloc'd blocks, freed together (the exporter's messages). */
typedef struct tjo_pool {
    void **blocks;
    int n, cap;
    bool failed;
} tjo_pool;
void *tjo_alloc(tjo_pool *p, size_t n); /* zeroed; NULL (pool failed) when out of memory */
char *tjo_strdup(tjo_pool *p, const char *s);
void tjo_pool_free(tjo_pool *p);

/* A TensorProto holding t's values as raw_data, allocated in pool. */
Onnx__TensorProto *tjo_tensor_to_proto(tjo_pool *pool, const tj_tensor *t, const char *name);

/* The whole file at path, malloc'd; NULL with TJ_ERR_IO naming it. */
void *tjo_read_file(const char *path, size_t *len);
tj_status tjo_write_file(const char *path, const void *data, size_t len);

/* ---- a string-keyed table (names of values) ------------------------------------- */

typedef struct tjo_names {
    const char **keys;
    void **vals;
    size_t cap, used;
} tjo_names;
void *tjo_names_get(const tjo_names *m, const char *key);
bool tjo_names_put(tjo_names *m, const char *key, void *val); /* key is borrowed */
void tjo_names_free(tjo_names *m);

/* ---- the importer (import*.c) ------------------------------------------------------ */

/* One ONNX value as the importer knows it. */
typedef struct tjo_val {
    const char *name;
    tj_value *v;  /* its graph value, made on first use when only t is known */
    tj_tensor *t; /* its contents when known at import: a constant, or an initializer */
    bool param;   /* t is an initializer: used as a tensor it is a bound graph input */
    tj_type type;
} tjo_val;

/* v as a Scalar operand of x: an integer when x is an integer or bool tensor
 * and v is whole (ONNX keeps x's dtype; a float Scalar would promote it),
 * else a float. None (NaN) stays None. */
tj_scalar tjo_scalar_for(const tjo_val *x, double v);

typedef struct tjo_importer {
    tj_graph *g;
    int opset;
    tjo_names names;       /* ONNX name -> tjo_val */
    tjo_val **all;         /* every tjo_val made, freed at the end */
    int n_all, cap_all;
    const Onnx__NodeProto *node; /* the node being imported */
    int node_index;
    /* node inputs and outputs of the node being imported */
    tjo_val *in[64];
    int n_in;
} tjo_importer;

/* Records an error about the current node: "ONNX node #3 'conv1' (Conv): ..." */
tj_status tjo_node_error(tjo_importer *im, tj_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tj_status tjo_unsupported(tjo_importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error unless the node has lo to hi inputs, the first lo of them present. */
tj_status tjo_need_inputs(tjo_importer *im, int lo, int hi);
/* In an op's importer: return the pending error; and return it unless x. */
#define TJO_FAIL() return tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL
#define TJO_NEED(x) do { if (!(x)) TJO_FAIL(); } while (0)

tjo_val *tjo_val_new(tjo_importer *im, const char *name);
/* A known tensor as a value (takes the reference). */
tjo_val *tjo_const_val(tjo_importer *im, tj_tensor *t);
/* The graph value of v, made now for a constant or an initializer. */
tj_value *tjo_materialize(tjo_importer *im, tjo_val *v);

/* Runs op on ins (NULL for an absent Tensor?) with attrs in schema order:
 * folded into a constant when every input is a constant, else a node typed
 * by the op's shape rule. out receives n_out values. */
tj_status tjo_emit(tjo_importer *im, int op_id, tjo_val *const *ins, int n_in, const tj_attr *attrs,
                   tjo_val **out, int n_out);
/* One-output shorthand; NULL on error. */
tjo_val *tjo_emit1(tjo_importer *im, int op_id, tjo_val *const *ins, int n_in, const tj_attr *attrs);
tjo_val *tjo_unary(tjo_importer *im, int op_id, tjo_val *x);
tjo_val *tjo_binary(tjo_importer *im, int op_id, tjo_val *a, tjo_val *b);
/* A 0-dim constant of dtype d. */
tjo_val *tjo_scalar(tjo_importer *im, double value, tj_dtype d);
tjo_val *tjo_cast(tjo_importer *im, tjo_val *x, tj_dtype d);
tjo_val *tjo_reshape(tjo_importer *im, tjo_val *x, const int64_t *sizes, int ndim);

/* Attributes of the current node. */
const Onnx__AttributeProto *tjo_attr(tjo_importer *im, const char *name);
bool tjo_attr_int(tjo_importer *im, const char *name, int64_t def, int64_t *out);
bool tjo_attr_float(tjo_importer *im, const char *name, double def, double *out);
/* A list attribute, or NULL (n = 0) when absent. */
bool tjo_attr_ints(tjo_importer *im, const char *name, const int64_t **data, int *n);
bool tjo_attr_floats(tjo_importer *im, const char *name, const float **data, int *n);
bool tjo_attr_str(tjo_importer *im, const char *name, const char *def, const char **out);
/* The known contents of input i as int64s (a constant, e.g. Reshape's
 * shape); what names it in errors. */
bool tjo_const_ints(tjo_importer *im, int i, const char *what, int64_t *out, int *n, int cap);
/* Whether input i is given (present and not the empty name). */
bool tjo_has_input(tjo_importer *im, int i);
/* Sizes a model asks for must stay sane: each at most 2^31, their product at
 * most 2^40 (TJ_ERR_UNSUPPORTED naming what otherwise). */
bool tjo_check_sizes(tjo_importer *im, const int64_t *sizes, int n, const char *what);
#define TJO_MAX_NUMEL (INT64_C(1) << 40)
/* Constants folded at import stay below this many elements; larger results
 * are left to the graph. */
#define TJO_MAX_FOLD (INT64_C(1) << 24)
/* Normalises an axis against rank (negative counts from the end). */
bool tjo_axis(tjo_importer *im, int64_t axis, int rank, const char *what, int *out);

/* Recovers high-level ops from their ONNX forms in an imported graph
 * (import_patterns.c): MatMul, Transpose and Add of parameters as linear. */
tj_status tjo_recover_patterns(tj_graph *g);

/* One ONNX op's import rule: fills out[0..n_out) (NULL for outputs it does
 * not give, which then must be unused). */
typedef tj_status (*tjo_import_fn)(tjo_importer *im, tjo_val **out, int n_out);
typedef struct tjo_import_rule {
    const char *op_type;
    const char *attrs; /* the attributes it understands, "axis|keepdims"; others are refused */
    tjo_import_fn fn;
} tjo_import_rule;
extern const tjo_import_rule tjo_rules_pointwise[], tjo_rules_shape[], tjo_rules_nn[],
    tjo_rules_reduce[];

/* ---- the exporter (export*.c) ------------------------------------------------------ */

typedef struct tjo_exporter {
    tjo_pool pool;
    const tj_onnx_export_options *opts;
    int opset;
    Onnx__NodeProto **nodes;
    int n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    int n_inits, cap_inits;
    Onnx__ValueInfoProto **infos;
    int n_infos, cap_infos;
    tjo_names names;  /* tj_value* (as text key) -> ONNX name */
    int next_tmp;
    const tj_node *node; /* the node being exported */
} tjo_exporter;

/* The ONNX name of a graph value (named after it). */
const char *tjo_name_of(tjo_exporter *ex, const tj_value *v);
/* A fresh name for an intermediate of the current node. */
const char *tjo_tmp(tjo_exporter *ex, const char *hint);
/* Appends a node; inputs/outputs are names ("" for an absent optional input).
 * Returns it, to add attributes; NULL when out of memory. */
Onnx__NodeProto *tjo_node(tjo_exporter *ex, const char *op_type, const char *const *ins, int n_in,
                          const char *const *outs, int n_out);
bool tjo_set_int(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, int64_t v);
bool tjo_set_float(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, double v);
bool tjo_set_ints(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, const int64_t *v, int k);
bool tjo_set_str(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, const char *v);
bool tjo_set_tensor(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, const tj_tensor *t);
/* An initializer-free constant: a Constant node holding t; returns its name. */
const char *tjo_x_const_tensor(tjo_exporter *ex, const tj_tensor *t);
const char *tjo_x_const_ints(tjo_exporter *ex, const int64_t *v, int n); /* a 1-D INT64 */
const char *tjo_x_const_scalar(tjo_exporter *ex, double v, tj_dtype d);  /* a 0-dim */
tj_status tjo_export_error(tjo_exporter *ex, tj_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One tjit op's export rule: the node's inputs and outputs are named by
 * in[] and out[] ("" for an absent optional). */
typedef tj_status (*tjo_export_fn)(tjo_exporter *ex, const tj_node *n, const char *const *in,
                                   const char *const *out);
typedef struct tjo_export_entry {
    int op;           /* an op id; -1 ends a table */
    tjo_export_fn fn; /* NULL: not exportable */
    const char *text; /* the ONNX form (NULL: the direct op's name), or why there is none */
} tjo_export_entry;
extern const tjo_export_entry tjo_export_rules_nn[]; /* export_nn.c */
/* The rule of op id, or NULL; *text gives the ONNX form, or why there is none. */
tjo_export_fn tjo_export_rule(int op_id, const char **text);

#endif
