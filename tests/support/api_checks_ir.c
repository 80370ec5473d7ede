/* api_checks_ir.c — test_public_api's checks of ir.h, passes.h and onnx.h:
 * each function given NULL or invalid arguments fails with a message. */
#include <stdlib.h>
#include <string.h>

#include "tests/support/api_checks.h"


/* ---- ir.h -------------------------------------------------------------------------------- */

void tt_api_types(void) {
    tj_type t = tj_type_tensor(), bad = t;
    bad.kind = (tj_type_kind)99;
    WORKS(tj_type_tensor());
    FAILS_SILENTLY(assert_int_equal(tj_type_tensor_of(TJ_F32, NULL, 2).ndim, TJ_UNKNOWN));
    FAILS_SILENTLY(tj_type_tensor_of(TJ_F32, SIZES, TJ_MAX_DIMS + 1));
    FAILS_SILENTLY(tj_type_tensor_of((tj_dtype)9, SIZES, 2));
    FAILS_SILENTLY(tj_type_contiguous(TJ_F32, NULL, 2));
    FAILS_SILENTLY(tj_type_of_tensor(NULL));
    FAILS_SILENTLY(tj_type_scalar(TJ_TYPE_TENSOR));
    FAILS_SILENTLY(tj_type_scalar((tj_type_kind)99));
    FAILS_SILENTLY(tj_type_list(TJ_TYPE_LIST));
    FAILS_WITH(tj_type_equal(NULL, &t), false);
    FAILS_STATUS(tj_type_check(NULL));
    FAILS_STATUS(tj_type_check(&bad));
    FAILS_NULL(tj_type_to_string(NULL, 0));
    FAILS_NULL(tj_type_to_string(&bad, 0));
}

void tt_api_graphs(void) {
    tj_graph *g = NULL;
    tj_type bad = tj_type_tensor();
    bad.ndim = 99;
    WORKS(g = tj_graph_new());
    WORKS(tj_graph_free(g));
    WORKS(tj_graph_free(NULL));
    FAILS_NULL(tj_graph_block(NULL));
    FAILS_NULL(tj_graph_owner(NULL));
    FAILS_NULL(tj_graph_add_input(NULL, NULL, "x"));
    FAILS_NULL(tj_graph_add_input(G, &bad, NULL));
    FAILS_WITH(tj_graph_num_inputs(NULL), -1);
    FAILS_NULL(tj_graph_input(NULL, 0));
    FAILS_NULL(tj_graph_input(G, 1));
    FAILS_NULL(tj_graph_input(G, -1));
    FAILS_STATUS(tj_graph_add_output(NULL, V));
    FAILS_STATUS(tj_graph_add_output(G, NULL));
    FAILS_WITH(tj_graph_num_outputs(NULL), -1);
    FAILS_NULL(tj_graph_output(NULL, 0));
    FAILS_WITH(tj_graph_writes_in_place(NULL), false);
    FAILS_NULL(tj_graph_output(G, 1));
    assert_int_equal(tj_graph_num_inputs(G), 1);
    assert_int_equal(tj_graph_num_outputs(G), 1);
}

void tt_api_blocks(void) {
    FAILS_NULL(tj_block_graph(NULL));
    FAILS_WITH(tj_block_num_inputs(NULL), -1);
    FAILS_NULL(tj_block_input(NULL, 0));
    FAILS_NULL(tj_block_input(B, 1));
    FAILS_NULL(tj_block_add_input(NULL, NULL, "x"));
    FAILS_STATUS(tj_block_remove_input(NULL, 0));
    FAILS_STATUS(tj_block_remove_input(B, 4));
    FAILS_STATUS(tj_block_remove_input(B, 0)); /* still used */
    FAILS_WITH(tj_block_num_outputs(NULL), -1);
    FAILS_NULL(tj_block_output(NULL, 0));
    FAILS_NULL(tj_block_output(B, 1));
    FAILS_STATUS(tj_block_add_output(NULL, V));
    FAILS_STATUS(tj_block_add_output(B, NULL));
    FAILS_STATUS(tj_block_set_output(NULL, 0, V));
    FAILS_STATUS(tj_block_set_output(B, 3, V));
    FAILS_STATUS(tj_block_remove_output(NULL, 0));
    FAILS_STATUS(tj_block_remove_output(B, 3));
    bool remove_all[4] = {true, true, true, true};
    FAILS_STATUS(tj_block_remove_inputs(NULL, remove_all));
    FAILS_STATUS(tj_block_remove_inputs(B, NULL));
    FAILS_STATUS(tj_block_remove_inputs(B, remove_all)); /* input 0 is still used */
    FAILS_STATUS(tj_block_remove_outputs(NULL, remove_all));
    FAILS_STATUS(tj_block_remove_outputs(B, NULL));
    FAILS_NULL(tj_block_first(NULL));
    FAILS_NULL(tj_block_last(NULL));
    FAILS_NULL(tj_block_param(NULL));
    FAILS_NULL(tj_block_return(NULL));
    FAILS_WITH(tj_block_num_nodes(NULL), -1);
    FAILS_STATUS(tj_block_append(NULL, N));
    FAILS_STATUS(tj_block_append(B, NULL));
    FAILS_STATUS(tj_block_append(B, N)); /* already in a block */
}

void tt_api_node_creation(void) {
    const tj_op_info *relu = tj_op_find("aten::relu");
    tj_value *in[1] = {V};
    tj_attr one = {.i = 1};
    FAILS_SILENTLY(assert_string_equal(tj_node_kind_name((tj_node_kind)99), "invalid"));
    FAILS_SILENTLY(assert_string_equal(tj_attr_kind_name((tj_attr_kind)99), "invalid"));
    FAILS_NULL(tj_node_create_op(NULL, relu, in, 1, NULL, 0, -1));
    FAILS_NULL(tj_node_create_op(G, NULL, in, 1, NULL, 0, -1));
    FAILS_NULL(tj_node_create_op(G, relu, in, 2, NULL, 0, -1));
    FAILS_NULL(tj_node_create_op(G, relu, NULL, 1, NULL, 0, -1));
    FAILS_NULL(tj_node_create(NULL, TJ_NODE_NONE, NULL, 0, 1));
    FAILS_NULL(tj_node_create(G, TJ_NODE_OP, NULL, 0, 1));
    FAILS_NULL(tj_node_create(G, (tj_node_kind)99, NULL, 0, 1));
    FAILS_NULL(tj_node_create(G, TJ_NODE_LIST_CONSTRUCT, NULL, 0, -1));
    FAILS_NULL(tj_node_create_constant(NULL, TJ_ATTR_INT, &one));
    FAILS_NULL(tj_node_create_constant(G, TJ_ATTR_INT, NULL));
    FAILS_NULL(tj_node_create_constant(G, TJ_ATTR_TENSOR, &one));
    FAILS_NULL(tj_node_create_constant(G, (tj_attr_kind)99, &one));
    FAILS_NULL(tj_node_create_tensor_constant(NULL, T));
    FAILS_NULL(tj_node_create_tensor_constant(G, NULL));
    FAILS_NULL(tj_node_create_fusion_group(NULL, NULL, NULL, 0));
    FAILS_NULL(tj_node_create_fusion_group(G, NULL, NULL, 0));
    FAILS_NULL(tj_node_create_fusion_group(G, G, NULL, 0)); /* not a subgraph of its own */
}

void tt_api_node_access(void) {
    FAILS_WITH(tj_node_kind_of(NULL), TJ_NUM_NODE_KINDS);
    FAILS_NULL(tj_node_op(NULL));
    FAILS_NULL(tj_node_name(NULL));
    FAILS_WITH(tj_node_id(NULL), -1);
    FAILS_NULL(tj_node_graph(NULL));
    FAILS_NULL(tj_node_block(NULL));
    FAILS_WITH(tj_node_num_inputs(NULL), -1);
    FAILS_NULL(tj_node_input(NULL, 0));
    FAILS_NULL(tj_node_input(N, 1));
    FAILS_NULL(tj_node_input(N, -1));
    FAILS_WITH(tj_node_num_outputs(NULL), -1);
    FAILS_NULL(tj_node_output(NULL, 0));
    FAILS_NULL(tj_node_output(N, 1));
    FAILS_NULL(tj_node_next(NULL));
    FAILS_NULL(tj_node_prev(NULL));
    FAILS_WITH(tj_node_is_before(NULL, N), false);
    FAILS_WITH(tj_node_is_before(N, NULL), false);
    FAILS_WITH(tj_node_scratch(NULL), 0);
    FAILS_STATUS(tj_node_set_scratch(NULL, 1));
    WORKS(assert_int_equal(tj_node_set_scratch(N, 42), TJ_OK));
    WORKS(assert_int_equal(tj_node_scratch(N), 42));
}

void tt_api_node_attrs(void) {
    tj_attr one = {.i = 1};
    tj_graph *sub = tj_graph_new();
    FAILS_WITH(tj_node_num_attrs(NULL), -1);
    FAILS_NULL(tj_node_attr_name(NULL, 0));
    FAILS_NULL(tj_node_attr_name(N, 0)); /* relu has none */
    FAILS_WITH(tj_node_attr_kind(N, 0), TJ_NUM_ATTR_KINDS);
    FAILS_NULL(tj_node_attr(N, -1));
    FAILS_NULL(tj_node_attrs(NULL));
    FAILS_WITH(tj_node_attr_index(NULL, "dim"), -1);
    FAILS_WITH(tj_node_attr_index(N, NULL), -1);
    FAILS_STATUS(tj_node_set_attr(NULL, "dim", TJ_ATTR_INT, &one));
    FAILS_STATUS(tj_node_set_attr(N, NULL, TJ_ATTR_INT, &one));
    FAILS_STATUS(tj_node_set_attr(N, "dim", TJ_ATTR_INT, &one));
    FAILS_NULL(tj_node_tensor(NULL));
    FAILS_NULL(tj_node_subgraph(NULL));
    FAILS_STATUS(tj_node_set_subgraph(NULL, sub));
    FAILS_STATUS(tj_node_set_subgraph(N, sub)); /* relu holds no subgraph */
    tj_graph_free(sub);
}

void tt_api_editing(void) {
    tj_node *ret = tj_block_return(B);
    FAILS_STATUS(tj_node_insert_before(NULL, ret));
    FAILS_STATUS(tj_node_insert_before(N, NULL));
    FAILS_STATUS(tj_node_insert_after(NULL, ret));
    FAILS_STATUS(tj_node_insert_after(N, ret)); /* already in a block */
    FAILS_STATUS(tj_node_move_before(NULL, ret));
    FAILS_STATUS(tj_node_move_before(N, NULL));
    FAILS_STATUS(tj_node_move_after(NULL, N));
    FAILS_STATUS(tj_node_move_after(N, ret)); /* after prim::Return */
    FAILS_STATUS(tj_node_destroy(NULL));
    FAILS_STATUS(tj_node_destroy(N)); /* its output is still used */
    FAILS_STATUS(tj_node_destroy(ret));
    FAILS_STATUS(tj_node_set_input(NULL, 0, V));
    FAILS_STATUS(tj_node_set_input(N, 3, V));
    FAILS_STATUS(tj_node_set_input(N, 0, NULL));
    FAILS_STATUS(tj_node_add_input(NULL, V));
    FAILS_STATUS(tj_node_add_input(N, NULL));
    FAILS_STATUS(tj_node_remove_input(NULL, 0));
    FAILS_STATUS(tj_node_remove_input(N, 5));
    FAILS_NULL(tj_node_add_output(NULL, NULL));
    FAILS_NULL(tj_node_add_output(ret, NULL));
    FAILS_STATUS(tj_node_remove_output(NULL, 0));
    FAILS_STATUS(tj_node_remove_output(N, 5));
    FAILS_STATUS(tj_node_remove_output(N, 0)); /* still used */
}

void tt_api_values(void) {
    tj_type bad = tj_type_tensor();
    bad.dtype = 42;
    FAILS_NULL(tj_value_type(NULL));
    FAILS_STATUS(tj_value_set_type(NULL, &bad));
    FAILS_STATUS(tj_value_set_type(V, NULL));
    FAILS_STATUS(tj_value_set_type(V, &bad));
    FAILS_NULL(tj_value_name(NULL));
    FAILS_STATUS(tj_value_set_name(NULL, "x"));
    FAILS_WITH(tj_value_id(NULL), -1);
    FAILS_NULL(tj_value_node(NULL));
    FAILS_WITH(tj_value_offset(NULL), -1);
    FAILS_NULL(tj_value_graph(NULL));
    FAILS_WITH(tj_value_num_uses(NULL), -1);
    FAILS_NULL(tj_value_use(NULL, 0).user);
    FAILS_NULL(tj_value_use(V, 5).user);
    FAILS_STATUS(tj_value_replace_uses(NULL, V));
    FAILS_STATUS(tj_value_replace_uses(V, NULL));
    FAILS_STATUS(tj_value_replace_uses_after(NULL, V, N));
    FAILS_STATUS(tj_value_replace_uses_after(V, NULL, N));
    FAILS_WITH(tj_value_scratch(NULL), 0);
    FAILS_STATUS(tj_value_set_scratch(NULL, 1));
    WORKS(assert_int_equal(tj_value_set_scratch(V, -7), TJ_OK));
    WORKS(assert_int_equal(tj_value_scratch(V), -7));
}

void tt_api_cloning(void) {
    tj_value_map *m = NULL;
    WORKS(m = tj_value_map_new());
    FAILS_STATUS(tj_value_map_set(NULL, V, V));
    FAILS_STATUS(tj_value_map_set(m, NULL, V));
    FAILS_STATUS(tj_value_map_set(m, V, NULL));
    FAILS_NULL(tj_value_map_get(NULL, V));
    FAILS_NULL(tj_value_map_get(m, NULL));
    WORKS(assert_null(tj_value_map_get(m, V))); /* absent: not an error */
    FAILS_NULL(tj_graph_clone(NULL, m));
    FAILS_NULL(tj_node_clone(NULL, N, m));
    FAILS_NULL(tj_node_clone(G, NULL, m));
    FAILS_NULL(tj_node_clone(G, N, NULL));
    FAILS_NULL(tj_node_clone(G, N, m)); /* its input is not in the map */
    tj_value *outs[1];
    FAILS_STATUS(tj_graph_insert_before(NULL, G, (tj_value *[]){V}, outs));
    FAILS_STATUS(tj_graph_insert_before(N, NULL, (tj_value *[]){V}, outs));
    FAILS_STATUS(tj_graph_insert_before(N, G, NULL, outs));
    tj_value_map_free(m);
    WORKS(tj_value_map_free(NULL));
}

void tt_api_text(void) {
    tj_status st = TJ_OK;
    FAILS_NULL(tj_graph_to_string(NULL, 0));
    FAILS_NULL(tj_graph_parse(NULL, &st));
    assert_int_equal(st, TJ_ERR_ARG);
    FAILS_NULL(tj_graph_parse("graph(%x : Float(2)):\n  return (%y)\n", &st));
    FAILS_NULL(tj_graph_parse_n(NULL, 4, NULL));
    FAILS_NULL(tj_graph_parse_n("graph(", 6, NULL));
    FAILS_STATUS(tj_graph_verify(NULL));
    FAILS_NULL(tj_graph_to_dot(NULL, 0));
}


/* ---- passes.h, onnx.h ---- */


void tt_api_passes(void) {
    bool wrt[1] = {true};
    tj_gradient gr;
    FAILS_STATUS(tj_run_passes(NULL, "dce"));
    FAILS_STATUS(tj_run_passes(G, NULL));
    FAILS_STATUS(tj_run_passes(G, "dce,no_such_pass"));
    WORKS(assert_non_null(tj_default_pipeline()));
    FAILS_NULL(tj_find_pass(NULL));
    FAILS_NULL(tj_find_pass("no_such_pass"));
    WORKS(assert_true(tj_num_passes() > 0));
    FAILS_NULL(tj_pass_name(-1));
    FAILS_NULL(tj_pass_name(tj_num_passes()));
    FAILS_STATUS(tj_pass_dce(NULL));
    FAILS_STATUS(tj_pass_functionalize(NULL));
    FAILS_STATUS(tj_pass_cse(NULL));
    FAILS_STATUS(tj_pass_constant_fold(NULL));
    FAILS_STATUS(tj_pass_peephole(NULL));
    FAILS_STATUS(tj_pass_canonicalize(NULL));
    FAILS_STATUS(tj_pass_fuse(NULL));
    FAILS_STATUS(tj_pass_merge_linears(NULL));
    FAILS_STATUS(tj_pass_fold_batch_norm(NULL));
    FAILS_STATUS(tj_pass_split_batch_norm(NULL));
    FAILS_NULL(tj_fusion_report(NULL));
    FAILS_STATUS(tj_autodiff(NULL, wrt, &gr));
    FAILS_STATUS(tj_autodiff(G, NULL, &gr));
    FAILS_STATUS(tj_autodiff(G, wrt, NULL));
    WORKS(tj_gradient_free(NULL));
    FAILS_NULL(tj_grad_graph(NULL, wrt));
    FAILS_NULL(tj_grad_graph(G, NULL));
}

void tt_api_onnx(void) {
    void *data = NULL;
    size_t len = 0;
    bool ok = true;
    FAILS_STATUS(tj_graph_export_onnx(NULL, "/nonexistent/x.onnx", NULL));
    FAILS_STATUS(tj_graph_export_onnx(G, NULL, NULL));
    FAILS_STATUS(tj_graph_export_onnx_bytes(NULL, NULL, &data, &len));
    FAILS_STATUS(tj_graph_export_onnx_bytes(G, NULL, NULL, &len));
    FAILS_STATUS(tj_graph_export_onnx_bytes(G, NULL, &data, NULL));
    FAILS_NULL(tj_graph_import_onnx(NULL));
    FAILS_NULL(tj_graph_import_onnx("/nonexistent/x.onnx"));
    FAILS_NULL(tj_graph_import_onnx_ex(NULL, NULL));
    FAILS_NULL(tj_graph_import_onnx_bytes(NULL, 4, NULL));
    FAILS_NULL(tj_graph_import_onnx_bytes("\xff\xff\xff\xff", 4, NULL));
    FAILS_NULL(tj_onnx_load_tensor(NULL));
    FAILS_NULL(tj_onnx_load_tensor("/nonexistent/x.pb"));
    FAILS_NULL(tj_onnx_export_form(tj_op_find("aten::relu"), NULL));
    FAILS_SILENTLY(tj_onnx_export_form(NULL, &ok));
    assert_false(ok);
    WORKS(tj_onnx_available());
}
