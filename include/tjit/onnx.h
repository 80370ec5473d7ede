/* onnx.h — ONNX interchange: exporting a graph as an ONNX model and importing
 * an ONNX model as a graph (interchange/, docs/onnx.md). Built when tjit is
 * configured with TJIT_ONNX (protobuf-c and ONNX's onnx.proto found); without
 * it the functions fail with TJ_ERR_UNSUPPORTED and say so.
 */
/* the umbrella header first, outside this guard: it includes every public
 * header in dependency order, whichever of them a user includes first */
#include "tjit/tjit.h"
#ifndef TJIT_ONNX_H
#define TJIT_ONNX_H

#include "tjit/ir.h"
#include "tjit/tjit.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TJ_ONNX_DEFAULT_OPSET 17
#define TJ_ONNX_MAX_OPSET 17        /* the newest the installed ONNX (1.12) defines */
#define TJ_ONNX_MIN_EXPORT_OPSET 13 /* Softmax and ReduceSum as tjit needs them */
/* Import reads opsets 11 to 17, and 6 to 10 for the ops whose older forms it
 * knows (legacy broadcasting, attribute axes, is_test; docs/onnx.md). */
#define TJ_ONNX_MIN_IMPORT_OPSET 6

typedef struct tj_onnx_export_options {
    int opset;             /* the default domain's opset: 0 for 17; 13 to 17 */
    /* Parameters (bound inputs) become graph inputs that the caller feeds,
     * instead of initializers holding their values. */
    bool params_as_inputs;
    /* The graph is run with allow_size_change: the unbound inputs' sizes are
     * symbolic (NAME_dimK) and size-bearing ops are written in forms that
     * follow the input sizes (docs/onnx.md says which). */
    bool allow_size_change;
} tj_onnx_export_options;

/* Writes g as an ONNX model (opts may be NULL). Every node must have an ONNX
 * form and every value a known type; fusion groups are written as their
 * subgraph's ops. Errors name the node: "node #12 aten::native_dropout: ...". */
tj_status tj_graph_export_onnx(const tj_graph *g, const char *path,
                               const tj_onnx_export_options *opts);
/* The same into memory: *data is malloc'd (free with free()). */
tj_status tj_graph_export_onnx_bytes(const tj_graph *g, const tj_onnx_export_options *opts,
                                     void **data, size_t *len);

typedef struct tj_onnx_import_options {
    /* Sizes for inputs the model leaves symbolic (or to replace the model's):
     * input_types[k] is the type of the graph input named input_names[k]
     * (input_names NULL, or a NULL entry: the k-th graph input). */
    const char *const *input_names;
    const tj_type *input_types;
    int n_inputs;
} tj_onnx_import_options;

/* Reads an ONNX model (default-domain opsets 6 to 17) as a graph of tjit's
 * ops. Graph inputs that are not initializers become the graph's inputs, in
 * order; initializers become inputs bound to their values (parameters, named
 * as in the model). Malformed models, unsupported ops, attributes or dtypes
 * give NULL with a message naming the node and the field; an op or attribute
 * tjit has no form for gives TJ_ERR_UNSUPPORTED, a malformed model
 * TJ_ERR_PARSE. */
tj_graph *tj_graph_import_onnx(const char *path);
tj_graph *tj_graph_import_onnx_ex(const char *path, const tj_onnx_import_options *opts);
tj_graph *tj_graph_import_onnx_bytes(const void *data, size_t len,
                                     const tj_onnx_import_options *opts);

/* A tensor stored as a serialized ONNX TensorProto (the input_0.pb and
 * output_0.pb files of ONNX's test data); NULL with a message otherwise. */
tj_tensor *tj_onnx_load_tensor(const char *path);

/* How op is written in ONNX ("Gemm (2-D input), else ..."), with *exportable
 * true; or why it is not, with *exportable false. */
const char *tj_onnx_export_form(const tj_op_info *op, bool *exportable);

/* Whether this build has ONNX interchange (TJIT_ONNX). */
bool tj_onnx_available(void);

#ifdef __cplusplus
}
#endif

#endif
