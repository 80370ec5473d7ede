/* test_ir_verifier.c — one test per invariant the verifier claims
 * (ir/verifier.c): each breaks it in a valid graph, through the editing API
 * where the API allows the breakage and through the structures (ir_internal.h)
 * where it does not, and checks the message names the broken invariant. */
#include "ir/ir_internal.h"
#include "tests/ir_testing.h"

static const char *const base_text =
    "graph(%x : Float(4, 8), %y : Float(4, 8), %k : int):\n"
    "  %c : int = prim::Constant[value=2]()\n"
    "  %none : NoneType = prim::None()\n"
    "  %a = aten::mul(%x, %y)\n"
    "  %b = aten::tanh(%a)\n"
    "  %ln = aten::layer_norm[normalized_shape=[8], eps=1e-05](%b, %none, %none)\n"
    "  %p, %q = prim::ConstantChunk[chunks=2, dim=0](%ln)\n"
    "  %l : Tensor[] = prim::ListConstruct(%p, %q)\n"
    "  %u, %v = prim::ListUnpack(%l)\n"
    "  %f = prim::FusionGroup_0(%u, %v)\n"
    "  %g = aten::gelu[approximate=\"none\"](%f)\n"
    "  return (%g, %c)\n"
    "with prim::FusionGroup_0 = graph(%s, %t):\n"
    "  %r = aten::add[alpha=1.](%s, %t)\n"
    "  return (%r)\n";

static tj_graph *base(void) {
    irt_op("aten::layer_norm");
    tj_graph *g = tj_graph_parse(base_text, NULL);
    if (!g) print_message("%s\n", tj_last_error());
    assert_non_null(g);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    return g;
}

/* The value named name in g (or its subgraph). */
static tj_value *val(tj_graph *g, const char *name) {
    tj_value *v = tjir_map_get(&g->names, name);
    if (!v) {
        tj_graph *sub = tj_node_subgraph(tj_value_node(tjir_map_get(&g->names, "f")));
        v = tjir_map_get(&sub->names, name);
    }
    assert_non_null(v);
    return v;
}

static tj_node *def(tj_graph *g, const char *name) { return tj_value_node(val(g, name)); }

static void expect_broken_(tj_graph *g, const char *needle, const char *file, int line) {
    tj_status st = tj_graph_verify(g);
    if (st != TJ_ERR_INTERNAL || !strstr(tj_last_error(), needle)) {
        print_message("%s:%d: expected a verifier error containing \"%s\", got %s: \"%s\"\n", file,
                      line, needle, tj_status_name(st), tj_last_error());
        fail();
    }
}
#define expect_broken(g, needle) expect_broken_(g, needle, __FILE__, __LINE__)

static void test_valid(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    assert_int_equal(tj_graph_verify(NULL), TJ_ERR_ARG);
    tj_graph_free(g);
}

/* ---- 1. the node list and its positions ------------------------------------------ */

static void test_list_prev_link(void **state) {
    (void)state;
    tj_graph *g = base();
    def(g, "a")->prev = NULL;
    expect_broken(g, "its prev link does not match the list");
    tj_graph_free(g);
}

static void test_list_count(void **state) {
    (void)state;
    tj_graph *g = base();
    g->block.n_nodes++;
    expect_broken(g, "the block counts 11 nodes but lists 10");
    tj_graph_free(g);
}

static void test_list_last(void **state) {
    (void)state;
    tj_graph *g = base();
    g->block.last = g->block.first;
    expect_broken(g, "the block's last node is not the list's end");
    tj_graph_free(g);
}

static void test_positions(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_node *a = def(g, "a"), *b = def(g, "b");
    int64_t t = a->pos;
    a->pos = b->pos;
    b->pos = t;
    expect_broken(g, "topological positions do not increase along the block");
    tj_graph_free(g);
}

static void test_destroyed_in_list(void **state) {
    (void)state;
    tj_graph *g = base();
    def(g, "b")->destroyed = true;
    expect_broken(g, "a destroyed node is still in the list");
    def(g, "b")->destroyed = false;
    tj_graph_free(g);
}

static void test_sentinel_kind_in_list(void **state) {
    (void)state;
    tj_graph *g = base();
    def(g, "b")->kind = TJ_NODE_RETURN;
    expect_broken(g, "cannot be in a node list");
    def(g, "b")->kind = TJ_NODE_OP;
    tj_graph_free(g);
}

static void test_sentinels(void **state) {
    (void)state;
    tj_graph *g = base();
    g->block.ret->n_outputs = 1;
    expect_broken(g, "prim::Param has inputs or prim::Return has outputs");
    g->block.ret->n_outputs = 0;
    tj_graph_free(g);
}

/* ---- 2, 3. definitions and uses in order ------------------------------------------------ */

static void test_use_before_definition(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_move_before(def(g, "b"), def(g, "a")), TJ_OK);
    expect_broken(g, "input 0 (%a) is used before its definition (topological order)");
    tj_graph_free(g);
}

static void test_value_not_in_graph(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_node *loose = tj_node_create_constant(g, TJ_ATTR_INT, &(tj_attr){.i = 1}); /* never inserted */
    assert_int_equal(tj_node_set_input(def(g, "l"), 0, tj_node_output(loose, 0)), TJ_OK);
    expect_broken(g, "is not defined in the graph (its node was removed or never inserted)");
    tj_graph_free(g);
}

static void test_output_not_in_graph(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_node *loose = tj_node_create(g, TJ_NODE_NONE, NULL, 0, 1);
    assert_int_equal(tj_graph_add_output(g, tj_node_output(loose, 0)), TJ_OK);
    expect_broken(g, "prim::Return: input 2");
    expect_broken(g, "is not defined in the graph");
    tj_graph_free(g);
}

static void test_value_of_other_graph(void **state) {
    (void)state;
    tj_graph *g = base(), *h = base();
    tj_node *b = def(g, "b");
    tjir_drop_use(b->inputs[0], b, 0);
    b->inputs[0] = val(h, "a"); /* the API refuses this */
    expect_broken(g, "input 0 (%a) comes from another graph");
    b->inputs[0] = val(g, "a");
    tjir_add_use(g, val(g, "a"), b, 0);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(h);
    tj_graph_free(g);
}

static void test_defined_twice(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_node *b = def(g, "b");
    b->outputs[0] = val(g, "a");
    expect_broken(g, "output 0 (%a) names another definer or position");
    tj_graph_free(g);
}

static void test_wrong_offset(void **state) {
    (void)state;
    tj_graph *g = base();
    val(g, "q")->offset = 0;
    expect_broken(g, "output 1 (%q) names another definer or position");
    tj_graph_free(g);
}

/* A live value whose graph field says removed, or names another graph:
 * adding a use trusts the field, so the verifier checks it. */
static void test_value_marked_removed(void **state) {
    (void)state;
    tj_graph *g = base();
    val(g, "b")->graph = NULL;
    expect_broken(g, "output 0 (%b) is marked as removed");
    tj_graph_free(g);
    g = base();
    tj_graph *other = tj_graph_new();
    val(g, "b")->graph = other;
    expect_broken(g, "output 0 (%b) is marked as another graph's");
    tj_graph_free(g);
    tj_graph_free(other);
}

/* ---- 4. use lists ---------------------------------------------------------------------------- */

static void test_use_missing(void **state) {
    (void)state;
    tj_graph *g = base();
    val(g, "b")->n_uses = 0;
    expect_broken(g, "the use list of %b lacks this node's input 0");
    tj_graph_free(g);
}

static void test_use_stale(void **state) {
    (void)state;
    tj_graph *g = base();
    tjir_add_use(g, val(g, "b"), def(g, "g"), 0); /* gelu's input 0 is %f, not %b */
    expect_broken(g, "the use list of %b holds a use that is not an input");
    tj_graph_free(g);
}

static void test_use_repeated(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_value *b = val(g, "b");
    tjir_add_use(g, b, b->uses[0].user, b->uses[0].index);
    expect_broken(g, "the use list of %b holds input 0 of node #");
    tj_graph_free(g);
}

/* A repeated use in place of a missing one keeps the counts equal; a long
 * list is checked by sorting, not pair by pair. */
static void test_use_repeated_long_list(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_value *x = val(g, "x");
    tj_node *last = NULL;
    for (int k = 0; k < 40; k++) {
        assert_non_null(last = tj_node_create_op(g, irt_op("aten::neg"), &x, 1, NULL, 0, -1));
        assert_int_equal(tj_block_append(tj_graph_block(g), last), TJ_OK);
    }
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_use *u = &x->uses[x->n_uses - 1];
    assert_ptr_equal(u->user, last);
    *u = x->uses[x->n_uses - 2]; /* the last neg's use replaced by its neighbour's */
    expect_broken(g, "the use list of %x holds input 0 of node #");
    tj_graph_free(g);
}

static void test_use_by_loose_node(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_value *x = val(g, "x");
    assert_non_null(tj_node_create_op(g, irt_op("aten::neg"), &x, 1, NULL, 0, -1)); /* not inserted */
    expect_broken(g, "the use list of %x holds a use that is not an input");
    tj_graph_free(g);
}

/* ---- 5. names --------------------------------------------------------------------------------- */

static void test_duplicate_name(void **state) {
    (void)state;
    tj_graph *g = base();
    val(g, "b")->name = val(g, "a")->name;
    expect_broken(g, "the name 'a' is held by two values");
    tj_graph_free(g);
}

static void test_name_table(void **state) {
    (void)state;
    tj_graph *g = base();
    tjir_map_del(&g->names, "ln");
    expect_broken(g, "the graph's name table does not map 'ln' to its value");
    tj_graph_free(g);
}

/* ---- 6. types ---------------------------------------------------------------------------------- */

static void test_malformed_type(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_type bad = *val(g, "x")->type; /* past the API, which checks types */
    bad.ndim = 12;
    val(g, "x")->type = &bad;
    expect_broken(g, "the type of %x is malformed: type: invalid rank 12");
    tj_graph_free(g);
}

/* ---- 7. op nodes against their schema ------------------------------------------------------------ */

static void test_op_input_count(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_remove_input(def(g, "a"), 1), TJ_OK);
    expect_broken(g, "aten::mul (line 4): expected 2 inputs by its schema, got 1");
    tj_graph_free(g);
}

static void test_op_input_type(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_set_input(def(g, "a"), 1, val(g, "c")), TJ_OK);
    expect_broken(g, "input 1 (other) must be a tensor, got int");
    tj_graph_free(g);
}

static void test_op_none_for_tensor(void **state) {
    (void)state;
    tj_graph *g = base();
    /* layer_norm takes None for its optional weight (base verifies); mul does not */
    assert_int_equal(tj_node_set_input(def(g, "a"), 0, val(g, "none")), TJ_OK);
    expect_broken(g, "input 0 (self) must be a tensor, got NoneType");
    tj_graph_free(g);
}

static void test_op_optional_tensor(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_set_input(def(g, "ln"), 2, val(g, "k")), TJ_OK);
    expect_broken(g, "input 2 (bias) must be a tensor or None, got int");
    tj_graph_free(g);
}

static void test_op_output_count(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_non_null(tj_node_add_output(def(g, "b"), NULL));
    expect_broken(g, "aten::tanh (line 5): expected 1 outputs by its schema, got 2");
    tj_graph_free(g);
}

static void test_op_output_type(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_type it = tj_type_scalar(TJ_TYPE_INT);
    assert_int_equal(tj_value_set_type(val(g, "b"), &it), TJ_OK);
    expect_broken(g, "aten::tanh (line 5): output 0 must be a tensor, got int");
    tj_graph_free(g);
}

static void test_op_attr_count(void **state) {
    (void)state;
    tj_graph *g = base();
    def(g, "g")->n_attrs = 0;
    expect_broken(g, "aten::gelu (line 11): expected 1 attributes by its schema, got 0");
    tj_graph_free(g);
}

static void test_op_attr_name(void **state) {
    (void)state;
    tj_graph *g = base();
    def(g, "g")->attr_names[0] = "approx";
    expect_broken(g, "attribute 0 is named 'approx', the schema says 'approximate'");
    tj_graph_free(g);
}

static void test_op_attr_kind(void **state) {
    (void)state;
    tj_graph *g = base();
    def(g, "g")->attr_kinds[0] = TJ_ATTR_INT;
    expect_broken(g, "attribute 'approximate' of aten::gelu: expected str, got int");
    tj_graph_free(g);
}

static void test_op_attr_value(void **state) {
    (void)state;
    tj_graph *g = base();
    def(g, "g")->attrs[0].s = "fast";
    expect_broken(g, "attribute 'approximate' of aten::gelu: expected one of none|tanh, got \"fast\"");
    tj_graph_free(g);
}

static void test_op_attr_fixed_length(void **state) {
    (void)state;
    const tj_op_info *conv = irt_op("aten::conv2d"); /* int[2] stride */
    tj_graph *g = base();
    tj_value *in[3] = {val(g, "x"), val(g, "y"), val(g, "none")};
    tj_node *n = tj_node_create_op(g, conv, in, 3, NULL, 0, -1);
    assert_non_null(n);
    tj_block_append(&g->block, n);
    int i = tj_node_attr_index(n, "stride");
    static const int64_t three[] = {1, 1, 1};
    n->attrs[i].ints.data = three;
    n->attrs[i].ints.n = 3;
    expect_broken(g, "attribute 'stride' of aten::conv2d: expected 2 values (or 1), got 3");
    tj_graph_free(g);
}

/* ---- 8. prim nodes against their kind --------------------------------------------------------------- */

static void test_constant_type(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_type ft = tj_type_scalar(TJ_TYPE_FLOAT);
    assert_int_equal(tj_value_set_type(val(g, "c"), &ft), TJ_OK);
    expect_broken(g, "prim::Constant (line 2): its output is typed float, its value is a int");
    tj_graph_free(g);
}

static void test_constant_tensor_sizes(void **state) {
    (void)state;
    tj_graph *g = base();
    int64_t sizes[] = {2, 3};
    tj_tensor *t = tj_zeros(sizes, 2, TJ_F32);
    tj_node *c = tj_node_create_tensor_constant(g, t);
    tj_release(t);
    tj_block_append(&g->block, c);
    int64_t wrong[] = {2, 4};
    tj_type ty = tj_type_tensor_of(TJ_F32, wrong, 2);
    assert_int_equal(tj_value_set_type(tj_node_output(c, 0), &ty), TJ_OK);
    expect_broken(g, "its output's size at dim 1 differs from its tensor's");
    tj_graph_free(g);
}

static void test_constant_arity(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_add_input(def(g, "c"), val(g, "x")), TJ_OK);
    expect_broken(g, "expected no inputs and 1 output, got 1 and 1");
    tj_graph_free(g);
}

static void test_none_type(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_type t = tj_type_tensor();
    assert_int_equal(tj_value_set_type(val(g, "none"), &t), TJ_OK);
    expect_broken(g, "prim::None (line 3): expected no inputs and one NoneType output");
    tj_graph_free(g);
}

static void test_chunk_count(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_set_attr(def(g, "p"), "chunks", TJ_ATTR_INT, &(tj_attr){.i = 3}), TJ_OK);
    expect_broken(g, "prim::ConstantChunk (line 7): chunks=3 but 2 outputs");
    tj_graph_free(g);
}

static void test_list_construct_element(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_set_input(def(g, "l"), 0, val(g, "c")), TJ_OK);
    expect_broken(g, "prim::ListConstruct (line 8): input 0 is a int in a list of Tensor");
    tj_graph_free(g);
}

static void test_list_unpack_input(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_set_input(def(g, "u"), 0, val(g, "x")), TJ_OK);
    expect_broken(g, "prim::ListUnpack (line 9): expected one list input");
    tj_graph_free(g);
}

/* ---- 9. fusion groups and their subgraphs ------------------------------------------------------------ */

static void test_fusion_without_subgraph(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_node *n = tj_node_create(g, TJ_NODE_FUSION_GROUP, NULL, 0, 0);
    tj_block_append(&g->block, n);
    expect_broken(g, "a fusion group without a subgraph");
    tj_graph_free(g);
}

static void test_fusion_input_count(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_add_input(def(g, "f"), val(g, "x")), TJ_OK);
    expect_broken(g, "prim::FusionGroup (line 10): it has 3 inputs, its subgraph 2");
    tj_graph_free(g);
}

static void test_fusion_output_count(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_non_null(tj_node_add_output(def(g, "f"), NULL));
    expect_broken(g, "it has 2 outputs, its subgraph 1");
    tj_graph_free(g);
}

static void test_fusion_kinds(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_set_input(def(g, "f"), 1, val(g, "k")), TJ_OK);
    expect_broken(g, "input 1 is a int, the subgraph's a Tensor");
    tj_graph_free(g);
}

static void test_fusion_owner(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_node_subgraph(def(g, "f"))->owner = def(g, "g");
    expect_broken(g, "its subgraph names another owner");
    tj_node_subgraph(def(g, "f"))->owner = def(g, "f");
    tj_graph_free(g);
}

static void test_subgraph_broken_inside(void **state) {
    (void)state;
    tj_graph *g = base();
    assert_int_equal(tj_node_remove_input(def(g, "r"), 1), TJ_OK);
    expect_broken(g, "graph verify: in the subgraph of node #");
    expect_broken(g, "aten::add (line 14): expected 2 inputs by its schema, got 1");
    tj_graph_free(g);
}

static void test_subgraph_uses_outer_value(void **state) {
    (void)state;
    tj_graph *g = base();
    tj_node *r = def(g, "r");
    tjir_drop_use(r->inputs[0], r, 0);
    r->inputs[0] = val(g, "x"); /* a subgraph must be closed: the API refuses this */
    expect_broken(g, "in the subgraph of node #");
    expect_broken(g, "input 0 (%x) comes from another graph");
    tj_graph_free(g);
}

/* A group is pure (invariant 9): a member that writes in place or draws
 * random numbers breaks it, whoever built the graph. */
static void expect_impure_group(const char *member, const char *needle) {
    char text[512];
    snprintf(text, sizeof text,
             "graph(%%x : Float(4)):\n"
             "  %%f = prim::FusionGroup_0(%%x)\n"
             "  return (%%f)\n"
             "with prim::FusionGroup_0 = graph(%%s : Float(4)):\n"
             "  %s\n"
             "  return (%%r)\n",
             member);
    tj_graph *g = tj_graph_parse(text, NULL);
    if (!g) { /* the parser verifies what it read */
        if (!strstr(tj_last_error(), needle)) print_message("got: %s\n", tj_last_error());
        assert_non_null(strstr(tj_last_error(), needle));
        return;
    }
    expect_broken(g, needle);
    tj_graph_free(g);
}

static void test_fusion_member_effects(void **state) {
    (void)state;
    expect_impure_group("%r : Float(4) = aten::relu_(%s)",
                        "its member aten::relu_ writes its input in place; a fusion group holds only "
                        "ops without effects");
    expect_impure_group("%r : Float(4) = aten::dropout[p=0.5, train=True, generator=None](%s)",
                        "its member aten::dropout draws random numbers");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_list_prev_link),
        cmocka_unit_test(test_list_count),
        cmocka_unit_test(test_list_last),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_destroyed_in_list),
        cmocka_unit_test(test_sentinel_kind_in_list),
        cmocka_unit_test(test_sentinels),
        cmocka_unit_test(test_use_before_definition),
        cmocka_unit_test(test_value_not_in_graph),
        cmocka_unit_test(test_output_not_in_graph),
        cmocka_unit_test(test_value_of_other_graph),
        cmocka_unit_test(test_defined_twice),
        cmocka_unit_test(test_wrong_offset), cmocka_unit_test(test_value_marked_removed),
        cmocka_unit_test(test_use_missing),
        cmocka_unit_test(test_use_stale),
        cmocka_unit_test(test_use_repeated),
        cmocka_unit_test(test_use_repeated_long_list),
        cmocka_unit_test(test_use_by_loose_node),
        cmocka_unit_test(test_duplicate_name),
        cmocka_unit_test(test_name_table),
        cmocka_unit_test(test_malformed_type),
        cmocka_unit_test(test_op_input_count),
        cmocka_unit_test(test_op_input_type),
        cmocka_unit_test(test_op_none_for_tensor),
        cmocka_unit_test(test_op_optional_tensor),
        cmocka_unit_test(test_op_output_count),
        cmocka_unit_test(test_op_output_type),
        cmocka_unit_test(test_op_attr_count),
        cmocka_unit_test(test_op_attr_name),
        cmocka_unit_test(test_op_attr_kind),
        cmocka_unit_test(test_op_attr_value),
        cmocka_unit_test(test_op_attr_fixed_length),
        cmocka_unit_test(test_constant_type),
        cmocka_unit_test(test_constant_tensor_sizes),
        cmocka_unit_test(test_constant_arity),
        cmocka_unit_test(test_none_type),
        cmocka_unit_test(test_chunk_count),
        cmocka_unit_test(test_list_construct_element),
        cmocka_unit_test(test_list_unpack_input),
        cmocka_unit_test(test_fusion_without_subgraph),
        cmocka_unit_test(test_fusion_input_count),
        cmocka_unit_test(test_fusion_output_count),
        cmocka_unit_test(test_fusion_kinds),
        cmocka_unit_test(test_fusion_owner),
        cmocka_unit_test(test_fusion_member_effects),
        cmocka_unit_test(test_subgraph_broken_inside),
        cmocka_unit_test(test_subgraph_uses_outer_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
