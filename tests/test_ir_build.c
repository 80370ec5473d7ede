/* test_ir_build.c — building and editing graphs through the API: types,
 * nodes, attributes, names, positions, use lists, replacement, cloning,
 * inlining, and canonical printing of graphs built in different orders. */
#include "tests/ir_testing.h"

static const int64_t S2x3[] = {2, 3};

static tj_value *add_input(tj_graph *g, const char *name) {
    tj_type t = tj_type_contiguous(TJ_F32, S2x3, 2);
    tj_value *v = tj_graph_add_input(g, &t, name);
    assert_non_null(v);
    return v;
}

/* A node appended to g running op on inputs with default attributes. */
static tj_node *append_op(tj_graph *g, const char *name, tj_value *a, tj_value *b) {
    tj_value *in[2] = {a, b};
    tj_node *n = tj_node_create_op(g, irt_op(name), in, b ? 2 : 1, NULL, 0, -1);
    assert_non_null(n);
    assert_int_equal(tj_block_append(tj_graph_block(g), n), TJ_OK);
    return n;
}

static void test_build_and_print(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_value *x = add_input(g, "x"), *w = add_input(g, "w");
    tj_node *mul = append_op(g, "aten::mul", x, w);
    tj_node *th = append_op(g, "aten::tanh", tj_node_output(mul, 0), NULL);
    tj_attr alpha = {.f = 2.0};
    tj_value *in[2] = {tj_node_output(th, 0), x};
    tj_node *add = tj_node_create_op(g, irt_op("aten::add"), in, 2, &alpha, 1, -1);
    assert_non_null(add);
    assert_int_equal(tj_node_insert_after(add, th), TJ_OK);
    tj_type out = tj_type_tensor_of(TJ_F32, S2x3, 2);
    assert_int_equal(tj_value_set_type(tj_node_output(add, 0), &out), TJ_OK);
    assert_int_equal(tj_graph_add_output(g, tj_node_output(add, 0)), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    assert_int_equal(tj_block_num_nodes(tj_graph_block(g)), 3);
    assert_string_equal(tj_node_name(add), "aten::add");
    assert_int_equal(tj_node_kind_of(add), TJ_NODE_OP);
    assert_int_equal(tj_value_num_uses(x), 2);
    irt_assert_prints(g, TJ_PRINT_CANONICAL,
                      "graph(%x : Float(2, 3, strides=[3, 1], device=cpu),\n"
                      "      %w : Float(2, 3, strides=[3, 1], device=cpu)):\n"
                      "  %2 : Tensor = aten::mul(%x, %w)\n"
                      "  %3 : Tensor = aten::tanh(%2)\n"
                      "  %4 : Float(2, 3, device=cpu) = aten::add[alpha=2.](%3, %x)\n"
                      "  return (%4)\n");
    irt_assert_prints(g, TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES,
                      "graph(%x,\n      %w):\n"
                      "  %2 = aten::mul(%x, %w)\n"
                      "  %3 = aten::tanh(%2)\n"
                      "  %4 = aten::add[alpha=2.](%3, %x)\n"
                      "  return (%4)\n");
    tj_graph_free(g);
}

static void test_type_text(void **state) {
    (void)state;
    struct {
        tj_type t;
        unsigned flags;
        const char *text;
    } cases[] = {
        {tj_type_tensor(), 0, "Tensor"},
        {tj_type_contiguous(TJ_F32, S2x3, 2), 0, "Float(2, 3, strides=[3, 1], device=cpu)"},
        {tj_type_contiguous(TJ_F64, S2x3, 2), TJ_PRINT_NO_STRIDES, "Double(2, 3, device=cpu)"},
        {tj_type_tensor_of(TJ_I64, NULL, 0), 0, "Long(device=cpu)"},
        {tj_type_scalar(TJ_TYPE_INT), 0, "int"},
        {tj_type_scalar(TJ_TYPE_NONE), 0, "NoneType"},
        {tj_type_list(TJ_TYPE_TENSOR), 0, "Tensor[]"},
        {tj_type_list(TJ_TYPE_FLOAT), 0, "float[]"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *s = tj_type_to_string(&cases[k].t, cases[k].flags);
        irt_assert_text(s, cases[k].text);
        free(s);
    }
    tj_type t = tj_type_tensor();
    t.dtype = TJ_BOOL;
    t.device_type = TJ_CUDA;
    t.device_index = 2;
    t.requires_grad = TJ_UNKNOWN;
    char *s = tj_type_to_string(&t, 0);
    irt_assert_text(s, "Bool(..., requires_grad=*, device=cuda:2)");
    free(s);
    t.ndim = 2;
    t.sizes[1] = 5;
    t.strides[1] = 1;
    t.requires_grad = 1;
    s = tj_type_to_string(&t, 0);
    irt_assert_text(s, "Bool(*, 5, strides=[*, 1], requires_grad=1, device=cuda:2)");
    free(s);
    tj_type u = t;
    assert_true(tj_type_equal(&t, &u));
    u.strides[1] = 2;
    assert_false(tj_type_equal(&t, &u));
    /* malformed types are refused with a message naming the part */
    t.sizes[0] = -3;
    assert_int_equal(tj_type_check(&t), TJ_ERR_ARG);
    irt_assert_error("negative size -3 at dim 0");
    t.sizes[0] = 1;
    t.ndim = TJ_MAX_DIMS + 1;
    assert_null(tj_type_to_string(&t, 0));
    irt_assert_error("invalid rank 9");
    /* a real tensor's type carries everything */
    int64_t sizes[] = {4, 5};
    tj_tensor *x = tj_zeros(sizes, 2, TJ_F64);
    tj_type tx = tj_type_of_tensor(x);
    s = tj_type_to_string(&tx, 0);
    irt_assert_text(s, "Double(4, 5, strides=[5, 1], device=cpu)");
    free(s);
    tj_release(x);
}

static void test_names(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_value *a = add_input(g, "x"), *b = add_input(g, "x"), *c = add_input(g, "x.1");
    assert_string_equal(tj_value_name(a), "x");
    assert_string_equal(tj_value_name(b), "x.1");
    assert_string_equal(tj_value_name(c), "x.2");
    tj_value *d = add_input(g, "fc1 weight/2"), *e = add_input(g, "1st"), *f = add_input(g, NULL);
    assert_string_equal(tj_value_name(d), "fc1_weight_2");
    assert_string_equal(tj_value_name(e), "_1st");
    assert_null(tj_value_name(f));
    /* renaming frees the old name; clearing too */
    assert_int_equal(tj_value_set_name(a, "y"), TJ_OK);
    assert_int_equal(tj_value_set_name(f, "x"), TJ_OK);
    assert_string_equal(tj_value_name(f), "x");
    assert_int_equal(tj_value_set_name(f, NULL), TJ_OK);
    assert_null(tj_value_name(f));
    assert_int_equal(tj_value_set_name(e, "x"), TJ_OK);
    assert_string_equal(tj_value_name(e), "x");
    /* a destroyed node's outputs give their names back */
    tj_node *n = append_op(g, "aten::neg", a, NULL);
    assert_int_equal(tj_value_set_name(tj_node_output(n, 0), "out"), TJ_OK);
    assert_int_equal(tj_node_destroy(n), TJ_OK);
    assert_int_equal(tj_value_set_name(f, "out"), TJ_OK);
    assert_string_equal(tj_value_name(f), "out");
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
}

/* Positions stay consistent with list order under any insertion pattern. */
static void check_order(tj_block *b) {
    int i = 0;
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n), i++) {
        assert_true(tj_node_is_before(tj_block_param(b), n));
        assert_true(tj_node_is_before(n, tj_block_return(b)));
        assert_false(tj_node_is_before(n, n));
        int j = 0;
        for (tj_node *m = tj_block_first(b); m; m = tj_node_next(m), j++)
            if (tj_node_is_before(n, m) != (i < j)) {
                print_message("is_before(%d, %d) wrong\n", i, j);
                fail();
            }
    }
}

static void test_is_before_under_insertion(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_block *b = tj_graph_block(g);
    tj_value *x = add_input(g, "x");
    tj_node *first = append_op(g, "aten::neg", x, NULL);
    tj_node *last = append_op(g, "aten::neg", x, NULL);
    /* always between the same two neighbours: gaps halve until a respace */
    for (int k = 0; k < 150; k++) {
        tj_node *n = tj_node_create_op(g, irt_op("aten::abs"), &x, 1, NULL, 0, -1);
        assert_int_equal(tj_node_insert_after(n, first), TJ_OK);
        assert_true(tj_node_is_before(first, n) && tj_node_is_before(n, last));
        assert_true(tj_node_is_before(n, tj_node_next(n)));
    }
    check_order(b);
    /* at the front, the back and pseudo-random places, and moves */
    uint32_t seed = 12345;
    for (int k = 0; k < 300; k++) {
        seed = seed * 1664525u + 1013904223u;
        tj_node *pos = tj_block_first(b);
        for (uint32_t steps = (seed >> 8) % (uint32_t)tj_block_num_nodes(b); steps; steps--)
            pos = tj_node_next(pos);
        tj_node *n = tj_node_create_op(g, irt_op("aten::abs"), &x, 1, NULL, 0, -1);
        if (k % 5 == 0) assert_int_equal(tj_node_insert_after(n, tj_block_param(b)), TJ_OK);
        else if (k % 5 == 1) assert_int_equal(tj_node_insert_before(n, tj_block_return(b)), TJ_OK);
        else if (k % 5 == 2) assert_int_equal(tj_node_insert_before(n, pos), TJ_OK);
        else assert_int_equal(tj_node_insert_after(n, pos), TJ_OK);
        if (k % 7 == 0) assert_int_equal(tj_node_move_before(pos, tj_block_first(b)) ,
                                         pos == tj_block_first(b) ? TJ_ERR_ARG : TJ_OK);
    }
    check_order(b);
    assert_int_equal(tj_block_num_nodes(b), 452);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    /* nodes of different graphs are never ordered */
    tj_graph *h = tj_graph_new();
    tj_value *hx = add_input(h, "x");
    tj_node *other = append_op(h, "aten::neg", hx, NULL);
    assert_false(tj_node_is_before(first, other));
    assert_false(tj_node_is_before(other, first));
    tj_graph_free(h);
    tj_graph_free(g);
}

static void test_edit_errors(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_block *b = tj_graph_block(g);
    tj_value *x = add_input(g, "x");
    tj_node *n = append_op(g, "aten::neg", x, NULL);
    tj_node *m = append_op(g, "aten::exp", tj_node_output(n, 0), NULL);
    assert_int_equal(tj_node_insert_before(n, m), TJ_ERR_ARG);
    irt_assert_error("already in a block");
    assert_int_equal(tj_node_move_after(tj_block_param(b), m), TJ_ERR_ARG);
    irt_assert_error("prim::Param cannot move");
    assert_int_equal(tj_node_move_before(n, tj_block_param(b)), TJ_ERR_ARG);
    irt_assert_error("nothing goes before prim::Param");
    assert_int_equal(tj_node_destroy(n), TJ_ERR_ARG);
    irt_assert_error("output 0 of aten::neg still has 1 uses");
    assert_int_equal(tj_node_destroy(tj_block_return(b)), TJ_ERR_ARG);
    /* arity and attributes are checked when a node is made */
    assert_null(tj_node_create_op(g, irt_op("aten::add"), &x, 1, NULL, 0, -1));
    irt_assert_error("aten::add takes 2 inputs, got 1");
    tj_value *two[2] = {x, x};
    tj_attr bad = {.s = "fast"};
    assert_null(tj_node_create_op(g, irt_op("aten::add"), two, 2, &bad, 0, -1));
    irt_assert_error("aten::add takes 1 attributes, got 0");
    assert_null(tj_node_create_op(g, irt_op("aten::gelu"), &x, 1, &bad, 1, -1));
    irt_assert_error("attribute 'approximate' of aten::gelu: expected one of none|tanh, got \"fast\"");
    assert_null(tj_node_create_op(g, irt_op("aten::lerp.Scalar"), two, 2, NULL, 0, -1));
    irt_assert_error("attribute 'weight' has no default");
    assert_null(tj_node_create_op(g, irt_op("aten::chunk"), &x, 1, (tj_attr[]){{.i = 2}, {.i = 0}},
                                  2, -1));
    irt_assert_error("give the number of outputs");
    assert_null(tj_node_create_op(g, irt_op("aten::neg"), &x, 1, NULL, 0, 2));
    irt_assert_error("aten::neg has 1 outputs, not 2");
    /* values of other graphs are refused */
    tj_graph *h = tj_graph_new();
    tj_value *y = add_input(h, "y");
    assert_int_equal(tj_node_set_input(m, 0, y), TJ_ERR_ARG);
    irt_assert_error("belongs to another graph");
    assert_int_equal(tj_value_replace_uses(x, y), TJ_ERR_ARG);
    tj_node *elsewhere = append_op(h, "aten::neg", y, NULL);
    assert_int_equal(tj_node_move_before(m, elsewhere), TJ_ERR_ARG);
    irt_assert_error("the nodes belong to different graphs");
    tj_graph_free(h);
    /* a failed creation leaves no uses behind */
    assert_int_equal(tj_value_num_uses(x), 1);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
}

static void test_replace_and_destroy(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_value *x = add_input(g, "x");
    tj_node *a = append_op(g, "aten::neg", x, NULL);
    tj_node *b = append_op(g, "aten::mul", tj_node_output(a, 0), tj_node_output(a, 0));
    tj_node *c = append_op(g, "aten::add", tj_node_output(a, 0), tj_node_output(b, 0));
    tj_graph_add_output(g, tj_node_output(a, 0));
    tj_graph_add_output(g, tj_node_output(c, 0));
    assert_int_equal(tj_value_num_uses(tj_node_output(a, 0)), 4);
    /* only the uses after b (c's and the block output) */
    assert_int_equal(tj_value_replace_uses_after(tj_node_output(a, 0), x, b), TJ_OK);
    assert_int_equal(tj_value_num_uses(tj_node_output(a, 0)), 2);
    assert_ptr_equal(tj_node_input(c, 0), x);
    assert_ptr_equal(tj_graph_output(g, 0), x);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    /* every use; then a can go */
    assert_int_equal(tj_value_replace_uses(tj_node_output(a, 0), x), TJ_OK);
    assert_int_equal(tj_value_num_uses(tj_node_output(a, 0)), 0);
    assert_int_equal(tj_value_num_uses(x), 5);
    assert_int_equal(tj_node_destroy(a), TJ_OK);
    assert_int_equal(tj_node_destroy(a), TJ_ERR_ARG);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    /* removing an input renumbers the uses of those after it */
    assert_int_equal(tj_node_remove_input(b, 0), TJ_OK);
    assert_int_equal(tj_node_add_input(b, x), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_use u = tj_value_use(x, tj_value_num_uses(x) - 1);
    assert_ptr_equal(u.user, b);
    assert_int_equal(u.index, 1);
    /* block outputs: set, remove */
    assert_int_equal(tj_block_set_output(tj_graph_block(g), 0, tj_node_output(b, 0)), TJ_OK);
    assert_int_equal(tj_block_remove_output(tj_graph_block(g), 1), TJ_OK);
    assert_int_equal(tj_graph_num_outputs(g), 1);
    assert_int_equal(tj_node_destroy(c), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    irt_assert_prints(g, TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES,
                      "graph(%x):\n  %1 = aten::mul(%x, %x)\n  return (%1)\n");
    /* a graph knows whether it writes in place: an in-place op's node, its
     * copy's, none once destroyed */
    {
        tj_graph *h = tj_graph_new();
        tj_value *x = add_input(h, "x"), *y = add_input(h, "y");
        assert_false(tj_graph_writes_in_place(h));
        tj_value *xy[2] = {x, y};
        tj_node *add = tj_node_create_op(h, irt_op("aten::add"), xy, 2, NULL, 0, 1);
        assert_non_null(add);
        assert_false(tj_graph_writes_in_place(h));
        tj_node *add_ = tj_node_create_op(h, irt_op("aten::add_"), xy, 2, NULL, 0, 1);
        assert_non_null(add_);
        assert_int_equal(tj_block_append(tj_graph_block(h), add_), TJ_OK);
        assert_true(tj_graph_writes_in_place(h));
        tj_graph *copy = tj_graph_clone(h, NULL);
        assert_non_null(copy);
        assert_true(tj_graph_writes_in_place(copy));
        assert_int_equal(tj_node_destroy(add_), TJ_OK);
        assert_false(tj_graph_writes_in_place(h));
        tj_graph_free(copy);
        tj_graph_free(h);
    }
    /* many outputs and unused inputs removed at once keep the others' order */
    {
        tj_graph *h = tj_graph_new();
        tj_value *in[6];
        for (int i = 0; i < 6; i++) in[i] = add_input(h, NULL);
        for (int i = 0; i < 6; i++) assert_int_equal(tj_graph_add_output(h, in[5 - i]), TJ_OK);
        assert_int_equal(tj_graph_add_output(h, in[0]), TJ_OK);
        bool out_gone[7] = {true, false, true, true, false, false, true};
        assert_int_equal(tj_block_remove_outputs(tj_graph_block(h), out_gone), TJ_OK);
        assert_int_equal(tj_graph_num_outputs(h), 3); /* in4, in1, in0 */
        bool used_gone[6] = {false, true, true, false, false, true};
        assert_int_equal(tj_block_remove_inputs(tj_graph_block(h), used_gone), TJ_ERR_ARG);
        assert_int_equal(tj_graph_num_inputs(h), 6); /* in[1] is read: nothing removed */
        bool in_gone[6] = {false, false, true, true, false, true};
        assert_int_equal(tj_block_remove_inputs(tj_graph_block(h), in_gone), TJ_OK);
        assert_int_equal(tj_graph_num_inputs(h), 3);
        assert_ptr_equal(tj_graph_input(h, 0), in[0]);
        assert_ptr_equal(tj_graph_input(h, 1), in[1]);
        assert_ptr_equal(tj_graph_input(h, 2), in[4]);
        assert_ptr_equal(tj_graph_output(h, 0), in[4]);
        assert_ptr_equal(tj_graph_output(h, 1), in[1]);
        assert_ptr_equal(tj_graph_output(h, 2), in[0]);
        assert_int_equal(tj_graph_verify(h), TJ_OK);
        tj_graph_free(h);
    }
    /* an unused input can be removed; a used one cannot */
    tj_value *spare = add_input(g, "spare");
    assert_int_equal(tj_block_remove_input(tj_graph_block(g), 0), TJ_ERR_ARG);
    assert_int_equal(tj_block_remove_input(tj_graph_block(g), 1), TJ_OK);
    (void)spare;
    assert_int_equal(tj_graph_num_inputs(g), 1);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
}

static void test_constants_and_attrs(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_block *b = tj_graph_block(g);
    int64_t ints[] = {1, -2};
    double floats[] = {0.5, -1e300};
    tj_node *cs[] = {
        tj_node_create_constant(g, TJ_ATTR_INT, &(tj_attr){.i = -7}),
        tj_node_create_constant(g, TJ_ATTR_FLOAT, &(tj_attr){.f = 0.1}),
        tj_node_create_constant(g, TJ_ATTR_BOOL, &(tj_attr){.b = true}),
        tj_node_create_constant(g, TJ_ATTR_STR, &(tj_attr){.s = "a\"b\n"}),
        tj_node_create_constant(g, TJ_ATTR_INTS, &(tj_attr){.ints = {ints, 2}}),
        tj_node_create_constant(g, TJ_ATTR_FLOATS, &(tj_attr){.floats = {floats, 2}}),
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        assert_non_null(cs[k]);
        assert_int_equal(tj_block_append(b, cs[k]), TJ_OK);
        tj_graph_add_output(g, tj_node_output(cs[k], 0));
    }
    double data[] = {1.5, -2, 3.25, 4};
    int64_t sizes[] = {2, 2};
    tj_tensor *t = tj_from_array(data, sizes, 2, TJ_F64);
    tj_node *tc = tj_node_create_tensor_constant(g, t);
    tj_release(t); /* the graph keeps its own reference */
    assert_non_null(tc);
    assert_ptr_equal(tj_node_tensor(tc), t);
    tj_block_append(b, tc);
    tj_graph_add_output(g, tj_node_output(tc, 0));
    tj_node *none = tj_node_create(g, TJ_NODE_NONE, NULL, 0, 1);
    tj_block_append(b, none);
    tj_graph_add_output(g, tj_node_output(none, 0));
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    irt_assert_prints(g, TJ_PRINT_CANONICAL,
                      "graph():\n"
                      "  %0 : int = prim::Constant[value=-7]()\n"
                      "  %1 : float = prim::Constant[value=0.1]()\n"
                      "  %2 : bool = prim::Constant[value=True]()\n"
                      "  %3 : str = prim::Constant[value=\"a\\\"b\\n\"]()\n"
                      "  %4 : int[] = prim::Constant[value=[1, -2]]()\n"
                      "  %5 : float[] = prim::Constant[value=[0.5, -1e+300]]()\n"
                      "  %6 : Double(2, 2, strides=[2, 1], device=cpu) = prim::Constant[value="
                      "tensor([1.5, -2., 3.25, 4.], dtype=Double, sizes=[2, 2])]()\n"
                      "  %7 : NoneType = prim::None()\n"
                      "  return (%0, %1, %2, %3, %4, %5, %6, %7)\n");
    assert_int_equal(tj_node_num_attrs(cs[0]), 1);
    assert_string_equal(tj_node_attr_name(cs[0], 0), "value");
    assert_int_equal(tj_node_attr_kind(cs[4], 0), TJ_ATTR_INTS);
    assert_int_equal(tj_node_attr_kind(tc, 0), TJ_ATTR_TENSOR);
    /* op attributes by name, in schema order */
    tj_value *x = tj_node_output(tc, 0);
    tj_node *sl = append_op(g, "aten::slice.Tensor", x, NULL);
    assert_int_equal(tj_node_num_attrs(sl), 4);
    assert_int_equal(tj_node_attr_index(sl, "end"), 2);
    assert_int_equal(tj_node_attr(sl, 2)->i, INT64_MAX);
    assert_int_equal(tj_node_set_attr(sl, "end", TJ_ATTR_INT, &(tj_attr){.i = 1}), TJ_OK);
    assert_int_equal(tj_node_set_attr(sl, "end", TJ_ATTR_FLOAT, &(tj_attr){.f = 1}), TJ_ERR_ARG);
    irt_assert_error("attribute 'end' of aten::slice.Tensor: expected int, got float");
    assert_int_equal(tj_node_set_attr(sl, "stop", TJ_ATTR_INT, &(tj_attr){.i = 1}), TJ_ERR_ARG);
    irt_assert_error("has no attribute 'stop'");
    tj_node *cl = append_op(g, "aten::clamp", x, NULL);
    assert_int_equal(tj_node_attr_kind(cl, 0), TJ_ATTR_NONE);
    assert_true(tj_is_none(tj_node_attr(cl, 0)->f));
    assert_int_equal(tj_node_set_attr(cl, "max", TJ_ATTR_SCALAR, &(tj_attr){.scalar = tj_scalar_int(6)}), TJ_OK);
    assert_int_equal(tj_node_attr(cl, 1)->scalar.kind, TJ_SCALAR_INT);
    assert_int_equal(tj_node_set_attr(cl, "max", TJ_ATTR_FLOAT, &(tj_attr){.f = 6}), TJ_ERR_ARG);
    irt_assert_error("attribute 'max' of aten::clamp: expected Scalar, got float");
    assert_int_equal(tj_node_set_attr(cl, "max", TJ_ATTR_NONE, &(tj_attr){.f = 0}), TJ_OK);
    assert_true(tj_is_none(tj_node_attrs(cl)[1].f));
    tj_node *ch = tj_node_create(g, TJ_NODE_CONSTANT_CHUNK, &x, 1, 2);
    assert_int_equal(tj_node_set_attr(ch, "chunks", TJ_ATTR_INT, &(tj_attr){.i = 2}), TJ_OK);
    assert_int_equal(tj_node_set_attr(ch, "dim", TJ_ATTR_FLOAT, &(tj_attr){.f = 2}), TJ_ERR_ARG);
    tj_block_append(b, ch);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
}

/* Attributes are stored the way tj_invoke takes them. */
static void test_attrs_invoke(void **state) {
    (void)state;
    const tj_op_info *add = irt_op("aten::add");
    tj_graph *g = tj_graph_new();
    tj_value *x = add_input(g, "x");
    tj_value *in[2] = {x, x};
    tj_attr alpha = {.f = 3};
    tj_node *n = tj_node_create_op(g, add, in, 2, &alpha, 1, -1);
    double a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30, 40, 50, 60};
    tj_tensor *ta = tj_from_array(a, S2x3, 2, TJ_F64), *tb = tj_from_array(b, S2x3, 2, TJ_F64);
    tj_tensor *args[2] = {ta, tb}, *out = NULL;
    assert_int_equal(tj_invoke(tj_op_id(tj_node_op(n)), args, 2, tj_node_attrs(n),
                               tj_node_num_attrs(n), &out, 1), 1);
    double want[] = {31, 62, 93, 124, 155, 186};
    tt_assert_values(out, want, 6, 0);
    tj_release(out);
    tj_release(ta);
    tj_release(tb);
    tj_graph_free(g);
}

/* The same graph built in two orders and with a detour prints alike. */
static tj_graph *build_ordered(bool reversed, bool detour) {
    tj_graph *g = tj_graph_new();
    tj_block *b = tj_graph_block(g);
    tj_value *x = add_input(g, NULL), *y = add_input(g, "y");
    if (detour) { /* made and thrown away: ids move on, canonical numbers do not */
        for (int k = 0; k < 3; k++) {
            tj_node *junk = append_op(g, "aten::exp", x, NULL);
            tj_node_destroy(junk);
        }
    }
    tj_value *in[2] = {x, y};
    tj_node *mul = tj_node_create_op(g, irt_op("aten::mul"), in, 2, NULL, 0, -1);
    tj_node *sig = tj_node_create_op(g, irt_op("aten::sigmoid"), &y, 1, NULL, 0, -1);
    if (reversed) { /* sigmoid made and placed first, mul put before it after */
        tj_block_append(b, sig);
        tj_node_insert_before(mul, sig);
    } else {
        tj_block_append(b, mul);
        tj_block_append(b, sig);
    }
    tj_value *in2[2] = {tj_node_output(mul, 0), tj_node_output(sig, 0)};
    tj_node *sub = tj_node_create_op(g, irt_op("aten::sub"), in2, 2, NULL, 0, -1);
    tj_block_append(b, sub);
    tj_graph_add_output(g, tj_node_output(sub, 0));
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    return g;
}

static void test_canonical_order(void **state) {
    (void)state;
    tj_graph *a = build_ordered(false, false), *b = build_ordered(true, false);
    tj_graph *c = build_ordered(true, true);
    const char *want = "graph(%0 : Float(2, 3, strides=[3, 1], device=cpu),\n"
                       "      %y : Float(2, 3, strides=[3, 1], device=cpu)):\n"
                       "  %2 : Tensor = aten::mul(%0, %y)\n"
                       "  %3 : Tensor = aten::sigmoid(%y)\n"
                       "  %4 : Tensor = aten::sub[alpha=1](%2, %3)\n"
                       "  return (%4)\n";
    irt_assert_prints(a, TJ_PRINT_CANONICAL, want);
    irt_assert_prints(b, TJ_PRINT_CANONICAL, want);
    irt_assert_prints(c, TJ_PRINT_CANONICAL, want);
    /* the plain form shows ids, which keep the history */
    char *pa = tj_graph_to_string(a, 0), *pc = tj_graph_to_string(c, 0);
    assert_string_not_equal(pa, pc);
    free(pa);
    free(pc);
    tj_graph_free(a);
    tj_graph_free(b);
    tj_graph_free(c);
}

static void test_clone(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_value *x = add_input(g, "x");
    tj_node *n = append_op(g, "aten::tanh", x, NULL);
    tj_graph *sub = tj_graph_new();
    tj_value *sa = add_input(sub, NULL);
    tj_node *sn = append_op(sub, "aten::exp", sa, NULL);
    tj_graph_add_output(sub, tj_node_output(sn, 0));
    tj_value *fin = tj_node_output(n, 0);
    tj_node *fg = tj_node_create_fusion_group(g, sub, &fin, 1);
    assert_non_null(fg);
    tj_block_append(tj_graph_block(g), fg);
    tj_graph_add_output(g, tj_node_output(fg, 0));
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_value_map *map = tj_value_map_new();
    tj_graph *c = tj_graph_clone(g, map);
    assert_non_null(c);
    assert_ptr_equal(tj_value_map_get(map, x), tj_graph_input(c, 0));
    assert_int_equal(tj_graph_verify(c), TJ_OK);
    for (unsigned flags = 0; flags < 8; flags++) {
        char *s1 = tj_graph_to_string(g, flags), *s2 = tj_graph_to_string(c, flags);
        irt_assert_text(s2, s1);
        free(s1);
        free(s2);
    }
    /* the copy is independent: editing it leaves the original alone */
    tj_node *cfg = tj_value_node(tj_graph_output(c, 0));
    assert_ptr_not_equal(tj_node_subgraph(cfg), sub);
    char *before = tj_graph_to_string(g, 0);
    tj_node *extra = append_op(c, "aten::neg", tj_graph_input(c, 0), NULL);
    assert_non_null(extra);
    irt_assert_prints(g, 0, before);
    free(before);
    /* a node copied into another graph through a map */
    tj_graph *h = tj_graph_new();
    tj_value *hx = add_input(h, "hx");
    tj_value_map *m2 = tj_value_map_new();
    assert_null(tj_node_clone(h, n, m2)); /* its input is not mapped yet */
    irt_assert_error("no counterpart in the map");
    tj_value_map_set(m2, x, hx);
    tj_node *cn = tj_node_clone(h, n, m2);
    assert_non_null(cn);
    tj_block_append(tj_graph_block(h), cn);
    tj_node *cf = tj_node_clone(h, fg, m2); /* its input is n's output: mapped by the first clone */
    assert_non_null(cf);
    tj_block_append(tj_graph_block(h), cf);
    tj_graph_add_output(h, tj_value_map_get(m2, tj_node_output(fg, 0)));
    assert_int_equal(tj_graph_verify(h), TJ_OK);
    irt_assert_prints(h, TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES,
                      "graph(%hx):\n"
                      "  %1 = aten::tanh(%hx)\n"
                      "  %2 = prim::FusionGroup_0(%1)\n"
                      "  return (%2)\n"
                      "with prim::FusionGroup_0 = graph(%0):\n"
                      "  %1 = aten::exp(%0)\n"
                      "  return (%1)\n");
    tj_value_map_free(m2);
    tj_value_map_free(map);
    tj_graph_free(h);
    tj_graph_free(c);
    tj_graph_free(g);
}

/* Unfusing: a fusion group replaced by copies of its subgraph's nodes. */
static void test_insert_graph(void **state) {
    (void)state;
    tj_graph *g = tj_graph_parse("graph(%x, %y):\n"
                                 "  %2 = prim::FusionGroup_0(%x, %y)\n"
                                 "  %3 = aten::relu(%2)\n"
                                 "  return (%3)\n"
                                 "with prim::FusionGroup_0 = graph(%a, %b):\n"
                                 "  %c = aten::mul(%a, %b)\n"
                                 "  %d = aten::tanh(%c)\n"
                                 "  return (%d)\n",
                                 NULL);
    assert_non_null(g);
    tj_node *fg = tj_block_first(tj_graph_block(g));
    assert_int_equal(tj_node_kind_of(fg), TJ_NODE_FUSION_GROUP);
    tj_value *ins[2] = {tj_node_input(fg, 0), tj_node_input(fg, 1)}, *outs[1];
    assert_int_equal(tj_graph_insert_before(fg, tj_node_subgraph(fg), ins, outs), TJ_OK);
    assert_int_equal(tj_value_replace_uses(tj_node_output(fg, 0), outs[0]), TJ_OK);
    assert_int_equal(tj_node_destroy(fg), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    irt_assert_prints(g, TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES,
                      "graph(%x,\n      %y):\n"
                      "  %c = aten::mul(%x, %y)\n"
                      "  %d = aten::tanh(%c)\n"
                      "  %4 = aten::relu(%d)\n"
                      "  return (%4)\n");
    tj_graph_free(g);
}

static void test_fusion_group_ownership(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    tj_value *x = add_input(g, "x");
    tj_graph *sub = tj_graph_new();
    tj_graph_add_output(sub, add_input(sub, "a"));
    tj_node *fg = tj_node_create_fusion_group(g, sub, &x, 1);
    assert_non_null(fg);
    assert_ptr_equal(tj_graph_owner(sub), fg);
    tj_graph_free(sub); /* ignored: the node owns it */
    assert_null(tj_node_create_fusion_group(g, sub, &x, 1));
    irt_assert_error("already belongs to a node");
    assert_null(tj_node_create_fusion_group(g, g, &x, 1));
    irt_assert_error("a graph cannot contain itself");
    /* a node inside the subgraph cannot take its own ancestor */
    tj_node *inner = tj_node_create(sub, TJ_NODE_FUSION_GROUP, NULL, 0, 0);
    assert_int_equal(tj_node_set_subgraph(inner, g), TJ_ERR_ARG);
    irt_assert_error("a graph cannot contain itself");
    tj_block_append(tj_graph_block(g), fg);
    tj_graph_add_output(g, tj_node_output(fg, 0));
    tj_graph *sub2 = tj_graph_new();
    tj_graph_add_output(sub2, add_input(sub2, "b"));
    assert_int_equal(tj_node_set_subgraph(fg, sub2), TJ_OK); /* the old one is freed */
    assert_ptr_equal(tj_node_subgraph(fg), sub2);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_and_print),
        cmocka_unit_test(test_type_text),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_is_before_under_insertion),
        cmocka_unit_test(test_edit_errors),
        cmocka_unit_test(test_replace_and_destroy),
        cmocka_unit_test(test_constants_and_attrs),
        cmocka_unit_test(test_attrs_invoke),
        cmocka_unit_test(test_canonical_order),
        cmocka_unit_test(test_clone),
        cmocka_unit_test(test_insert_graph),
        cmocka_unit_test(test_fusion_group_ownership),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
