/* test_onnx_errors.c — malformed and unsupported ONNX models give clear
 * errors naming the node and the field (truncated files, wrong wire types,
 * dangling names, cycles, missing initializers, unsupported ops, attributes
 * and dtypes, absurd sizes, data that does not fit its dims); graphs with a
 * node that has no ONNX form fail to export naming it; and the command line:
 * tjit export, tjit dump FILE.onnx, tjit run FILE.onnx --input with .npy and
 * .pb files. The models are built here with the protobuf-c messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "examples/models/models.h"
#include "onnx.pb-c.h"
#include "tests/support/runtime_testing.h"

/* ---- building models ------------------------------------------------------------------ */

typedef struct model {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto nodes[4], *node_ptrs[4];
    Onnx__AttributeProto attrs[4], *attr_ptrs[4];
    Onnx__ValueInfoProto vin, vout, *vins[1], *vouts[1];
    Onnx__TypeProto tin, tout;
    Onnx__TypeProto__Tensor ttin, ttout;
    Onnx__TensorShapeProto shape;
    Onnx__TensorShapeProto__Dimension dims[2], *dim_ptrs[2];
    Onnx__TensorProto init, *init_ptrs[1];
    char *node_in[4][3], *node_out[4][1];
} model;

/* x: Float(2, 3) -> y through one node op(x) (more set by the caller). */
static void init_model(model *md, const char *op) {
    memset(md, 0, sizeof *md);
    onnx__model_proto__init(&md->m);
    onnx__graph_proto__init(&md->g);
    onnx__operator_set_id_proto__init(&md->opset);
    md->opset.domain = "";
    md->opset.has_version = true;
    md->opset.version = 17;
    md->opsets[0] = &md->opset;
    md->m.opset_import = md->opsets;
    md->m.n_opset_import = 1;
    md->m.has_ir_version = true;
    md->m.ir_version = 8;
    md->m.graph = &md->g;
    onnx__value_info_proto__init(&md->vin);
    onnx__type_proto__init(&md->tin);
    onnx__type_proto__tensor__init(&md->ttin);
    onnx__tensor_shape_proto__init(&md->shape);
    for (int d = 0; d < 2; d++) {
        onnx__tensor_shape_proto__dimension__init(&md->dims[d]);
        md->dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        md->dims[d].dim_value = d ? 3 : 2;
        md->dim_ptrs[d] = &md->dims[d];
    }
    md->shape.dim = md->dim_ptrs;
    md->shape.n_dim = 2;
    md->ttin.has_elem_type = true;
    md->ttin.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    md->ttin.shape = &md->shape;
    md->tin.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    md->tin.tensor_type = &md->ttin;
    md->vin.name = "x";
    md->vin.type = &md->tin;
    md->vins[0] = &md->vin;
    md->g.input = md->vins;
    md->g.n_input = 1;
    onnx__value_info_proto__init(&md->vout);
    md->vout.name = "y";
    md->vouts[0] = &md->vout;
    md->g.output = md->vouts;
    md->g.n_output = 1;
    for (int i = 0; i < 4; i++) {
        onnx__node_proto__init(&md->nodes[i]);
        md->node_ptrs[i] = &md->nodes[i];
        onnx__attribute_proto__init(&md->attrs[i]);
        md->attr_ptrs[i] = &md->attrs[i];
    }
    md->g.node = md->node_ptrs;
    md->g.n_node = 1;
    Onnx__NodeProto *n = &md->nodes[0];
    n->op_type = (char *)op;
    n->name = "the_node";
    md->node_in[0][0] = "x";
    md->node_out[0][0] = "y";
    n->input = md->node_in[0];
    n->n_input = 1;
    n->output = md->node_out[0];
    n->n_output = 1;
}

static void add_attr(model *md, int i, const char *name, Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = &md->attrs[i];
    a->name = (char *)name;
    a->has_type = true;
    a->type = type;
    md->nodes[0].attribute = md->attr_ptrs;
    md->nodes[0].n_attribute = (size_t)i + 1;
}

/* Imports the model; expects failure with status and a message holding needle. */
static void expect_import_error(model *md, tj_status status, const char *needle) {
    size_t len = onnx__model_proto__get_packed_size(&md->m);
    uint8_t *buf = malloc(len ? len : 1);
    onnx__model_proto__pack(&md->m, buf);
    tj_graph *g = tj_graph_import_onnx_bytes(buf, len, NULL);
    free(buf);
    if (g) fail_msg("expected an error with '%s', the model imported", needle);
    if (!strstr(tj_last_error(), needle))
        fail_msg("expected an error with '%s', got '%s'", needle, tj_last_error());
    assert_int_equal(tj_last_status(), status);
    tj_clear_error();
}

static void expect_bytes_error(const void *data, size_t len, const char *needle) {
    tj_graph *g = tj_graph_import_onnx_bytes(data, len, NULL);
    assert_null(g);
    if (!strstr(tj_last_error(), needle)) fail_msg("expected '%s', got '%s'", needle, tj_last_error());
    assert_int_equal(tj_last_status(), TJ_ERR_PARSE);
}

/* ---- malformed models ------------------------------------------------------------------ */

static void test_good_model_imports(void **state) {
    (void)state;
    model md;
    init_model(&md, "Relu");
    size_t len = onnx__model_proto__get_packed_size(&md.m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&md.m, buf);
    tj_graph *g = tj_graph_import_onnx_bytes(buf, len, NULL);
    if (!g) fail_msg("%s", tj_last_error());
    assert_string_equal(tj_node_name(tj_block_first(tj_graph_block(g))), "aten::relu");
    assert_string_equal(tj_value_name(tj_graph_output(g, 0)), "y");
    tj_graph_free(g);
    /* every prefix is truncated: it fails (or, cut at a field boundary, imports) cleanly */
    for (size_t cut = 0; cut < len; cut++) {
        g = tj_graph_import_onnx_bytes(buf, cut, NULL);
        if (!g) assert_true(tj_last_error()[0] != '\0');
        tj_graph_free(g);
    }
    free(buf);
}

static void test_encoding(void **state) {
    (void)state;
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
    expect_bytes_error(garbage, sizeof garbage, "the protobuf encoding is malformed");
    /* field 7 (graph, a message) sent as a varint */
    static const uint8_t wrong_wire_type[] = {0x38, 0x01};
    expect_bytes_error(wrong_wire_type, sizeof wrong_wire_type, "a field of the wrong wire type");
    /* a length running past the end */
    static const uint8_t truncated[] = {0x3a, 0x40, 0x0a};
    expect_bytes_error(truncated, sizeof truncated, "a truncated file");
    static const uint8_t empty[] = {0x08, 0x08};
    expect_bytes_error(empty, sizeof empty, "it has no graph");
}

static void test_names_and_order(void **state) {
    (void)state;
    model md;
    init_model(&md, "Relu");
    md.node_in[0][0] = "nope";
    expect_import_error(&md, TJ_ERR_PARSE, "ONNX node #0 'the_node' (Relu): input[0] 'nope' is not defined");
    /* a cycle: a reads b, b reads a */
    init_model(&md, "Add");
    md.g.n_node = 2;
    md.node_in[0][1] = "b";
    md.nodes[0].n_input = 2;
    md.node_out[0][0] = "a";
    md.nodes[1].op_type = "Relu";
    md.node_in[1][0] = "a";
    md.node_out[1][0] = "b";
    md.nodes[1].input = md.node_in[1];
    md.nodes[1].n_input = 1;
    md.nodes[1].output = md.node_out[1];
    md.nodes[1].n_output = 1;
    expect_import_error(&md, TJ_ERR_PARSE, "input[1] 'b' is not defined by an earlier node, a graph input "
                                           "or an initializer (a dangling name, or nodes out of order or in a cycle)");
    /* a missing initializer */
    init_model(&md, "MatMul");
    md.node_in[0][1] = "W";
    md.nodes[0].n_input = 2;
    expect_import_error(&md, TJ_ERR_PARSE, "input[1] 'W' is not defined");
    /* an output nothing defines */
    init_model(&md, "Relu");
    md.vout.name = "z";
    expect_import_error(&md, TJ_ERR_PARSE, "ONNX graph output #0 'z' is not defined");
    /* a name defined twice */
    init_model(&md, "Relu");
    md.node_out[0][0] = "x";
    expect_import_error(&md, TJ_ERR_PARSE, "'x' is defined twice");
}

static void test_unsupported(void **state) {
    (void)state;
    model md;
    init_model(&md, "Foo");
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "ONNX node #0 'the_node' (Foo): op_type: tjit has no form of Foo");
    init_model(&md, "Softmax");
    add_attr(&md, 0, "bogus", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "(Softmax): attribute 'bogus' is not supported");
    init_model(&md, "Relu");
    md.nodes[0].domain = "com.example";
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "domain 'com.example'");
    init_model(&md, "Relu");
    md.ttin.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "ONNX graph input #0 'x': elem_type INT32 has no tjit dtype");
    init_model(&md, "Relu");
    md.opset.version = 21;
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "opset 21 of the default domain; tjit imports opsets 6 to 17");
    init_model(&md, "Relu");
    md.dims[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    md.dims[0].dim_param = "N";
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "shape.dim[0] is symbolic ('N')");
}

static void test_attribute_types_and_sizes(void **state) {
    (void)state;
    model md;
    init_model(&md, "Softmax");
    add_attr(&md, 0, "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    md.attrs[0].has_f = true;
    expect_import_error(&md, TJ_ERR_PARSE, "(Softmax): attribute 'axis': expected an int");
    init_model(&md, "Softmax");
    add_attr(&md, 0, "axis", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    md.attrs[0].has_i = true;
    md.attrs[0].i = 5;
    expect_import_error(&md, TJ_ERR_PARSE, "(Softmax): axis 5 is out of range for rank 2");
    /* absurd dims */
    init_model(&md, "Relu");
    md.dims[0].dim_value = INT64_C(1) << 50;
    expect_import_error(&md, TJ_ERR_PARSE, "shape.dim[0] is 1125899906842624");
    init_model(&md, "Relu");
    md.dims[0].dim_value = INT64_C(1) << 30;
    md.dims[1].dim_value = INT64_C(1) << 30;
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "more than 2^40 elements");
    /* a Reshape to absurd sizes, and an initializer whose data does not fit its dims */
    init_model(&md, "Reshape");
    md.node_in[0][1] = "shape";
    md.nodes[0].n_input = 2;
    int64_t big[2] = {INT64_C(1) << 30, INT64_C(1) << 30}, dims = 2;
    onnx__tensor_proto__init(&md.init);
    md.init.name = "shape";
    md.init.has_data_type = true;
    md.init.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    md.init.dims = &dims;
    md.init.n_dims = 1;
    md.init.int64_data = big;
    md.init.n_int64_data = 2;
    md.init_ptrs[0] = &md.init;
    md.g.initializer = md.init_ptrs;
    md.g.n_initializer = 1;
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "(Reshape): shape: more than 2^40 elements");
    md.init.n_int64_data = 1;
    expect_import_error(&md, TJ_ERR_PARSE, "ONNX initializer #0 'shape': int64_data holds 1 values, the dims need 2");
    md.init.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
    expect_import_error(&md, TJ_ERR_UNSUPPORTED, "data_type UINT8 (2) has no tjit dtype");
}

/* ---- export errors ------------------------------------------------------------------------- */

static void test_export_errors(void **state) {
    (void)state;
    tj_graph *g = tj_graph_parse("graph(%x : Float(4, device=cpu)):\n"
                                 "  %1 : Float(4), %2 : Bool(4) = aten::native_dropout[p=0.5, train=True](%x)\n"
                                 "  return (%1)\n", NULL);
    assert_non_null(g);
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(tj_graph_export_onnx_bytes(g, NULL, &data, &len), TJ_ERR_UNSUPPORTED);
    tt_assert_error("ONNX export: node #");
    tt_assert_error("aten::native_dropout: not exportable in training mode");
    tj_graph_free(g);
    g = tj_graph_parse("graph(%g : Float(4, 3), %w : Float(3, 3)):\n"
                       "  %1 : Float(4, 3, 3, 3) = tjit::conv2d_backward_input[input_size=[4, 3, 3, 3]](%g, %w)\n"
                       "  return (%1)\n", NULL);
    assert_non_null(g);
    assert_int_equal(tj_graph_export_onnx_bytes(g, NULL, &data, &len), TJ_ERR_UNSUPPORTED);
    tt_assert_error("tjit::conv2d_backward_input: not exportable: a gradient op");
    tj_graph_free(g);
    g = tj_graph_parse("graph(%x : Float(4)):\n  %1 : Float(4) = aten::exp_(%x)\n  return (%1)\n", NULL);
    assert_int_equal(tj_graph_export_onnx_bytes(g, NULL, &data, &len), TJ_ERR_UNSUPPORTED);
    tt_assert_error("aten::exp_: not exportable: writes into its input (in place)");
    tj_graph_free(g);
    g = tj_graph_parse("graph(%x : Float(4)):\n  %1 = aten::exp(%x)\n  return (%1)\n", NULL);
    assert_int_equal(tj_graph_export_onnx_bytes(g, NULL, &data, &len), TJ_ERR_UNSUPPORTED);
    tt_assert_error("aten::exp: its output 0 has no known dtype and sizes");
    tj_graph_free(g);
    tj_onnx_export_options o = {.opset = 9};
    g = tj_graph_parse("graph(%x : Float(4)):\n  %1 : Float(4) = aten::exp(%x)\n  return (%1)\n", NULL);
    assert_int_equal(tj_graph_export_onnx_bytes(g, &o, &data, &len), TJ_ERR_ARG);
    tt_assert_error("opset 9; tjit writes opsets 13 to 17");
    tj_graph_free(g);
    tj_clear_error();
    /* every op has a form or a reason */
    for (int i = 0; i < tj_op_count(); i++) {
        bool ok;
        const char *form = tj_onnx_export_form(tj_op_at(i), &ok);
        assert_non_null(form);
        if (!ok && !strcmp(form, "tjit has no ONNX form for it")) fail_msg("%s has no reason", tj_op_name(tj_op_at(i)));
    }
}

/* ---- the command line ---------------------------------------------------------------------- */

static int sh(const char *cmd) {
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_cli(void **state) {
    (void)state;
    char *dir = tt_mkdtemp(), cmd[4096];
    const char *t = TJIT_BUILD_DIR "/tjit";
    snprintf(cmd, sizeof cmd, "%s export mlp --onnx %s/mlp.onnx", t, dir);
    assert_int_equal(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s dump %s/mlp.onnx > %s/dump.txt", t, dir, dir);
    assert_int_equal(sh(cmd), 0);
    char *path = tt_path(dir, "dump.txt"), *text = tt_read_file(path);
    assert_non_null(strstr(text, "aten::linear(%_0, %fc1.weight, %fc1.bias)"));
    assert_non_null(strstr(text, "aten::log_softmax[dim=1]"));
    free(text);
    free(path);
    /* an input from a .npy file, and the outputs saved */
    tj_scope_begin();
    int64_t sizes[2] = {64, 784};
    tj_tensor *x = tj_ones(sizes, 2, TJ_F32);
    path = tt_path(dir, "x.npy");
    assert_int_equal(tj_save_npy(path, x), TJ_OK);
    free(path);
    tj_scope_end();
    snprintf(cmd, sizeof cmd, "%s run %s/mlp.onnx --input _0=%s/x.npy --out %s > %s/run.txt", t, dir, dir, dir, dir);
    assert_int_equal(sh(cmd), 0);
    path = tt_path(dir, "run.txt");
    text = tt_read_file(path);
    assert_non_null(strstr(text, "Float(64, 10, device=cpu)"));
    free(text);
    free(path);
    /* a node test's model with its .pb input */
    snprintf(cmd, sizeof cmd, "%s run /usr/share/libonnx-testdata/data/node/test_relu/model.onnx "
             "--input x=/usr/share/libonnx-testdata/data/node/test_relu/test_data_set_0/input_0.pb > /dev/null", t);
    assert_int_equal(sh(cmd), 0);
    /* errors */
    snprintf(cmd, sizeof cmd, "%s export mlp 2> /dev/null", t);
    assert_int_equal(sh(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s export no_such.ir --onnx %s/x.onnx 2> /dev/null", t, dir);
    assert_int_equal(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "%s dump %s/x.npy.onnx 2> /dev/null", t, dir);
    assert_int_equal(sh(cmd), 1);
    snprintf(cmd, sizeof cmd, "%s export --ops | grep -q '| `aten::linear` | Gemm'", t);
    assert_int_equal(sh(cmd), 0);
    tt_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_model_imports),
        cmocka_unit_test(test_encoding),
        cmocka_unit_test(test_names_and_order),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_attribute_types_and_sizes),
        cmocka_unit_test(test_export_errors),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
