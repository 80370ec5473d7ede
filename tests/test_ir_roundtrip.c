/* test_ir_roundtrip.c — print, parse, print gives identical text: for the
 * corpus in tests/ir/ (each file in every print mode; files that do not
 * start with a comment must also print back exactly as written), for graphs built through the API,
 * and for awkward constants (every double, f32 tensors, escaped strings). */
#include <dirent.h>
#include <math.h>

#include "tests/ir_testing.h"

#define CORPUS "tests/ir"

static const unsigned modes[] = {
    0,
    TJ_PRINT_CANONICAL,
    TJ_PRINT_NO_STRIDES,
    TJ_PRINT_NO_TYPES,
    TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES,
    TJ_PRINT_CANONICAL | TJ_PRINT_NO_STRIDES,
};

/* print(g) == print(parse(print(g))) in every mode. */
static void check_round_trip(const tj_graph *g, const char *what) {
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char *a = tj_graph_to_string(g, modes[m]);
        assert_non_null(a);
        tj_status st = TJ_ERR_INTERNAL;
        tj_graph *h = tj_graph_parse(a, &st);
        if (!h) {
            print_message("%s (mode %u) does not parse back: %s\n%s\n", what, modes[m],
                          tj_last_error(), a);
            fail();
        }
        assert_int_equal(st, TJ_OK);
        char *b = tj_graph_to_string(h, modes[m]);
        irt_assert_text(b, a);
        /* a typed print keeps everything: the reparsed graph verifies like the first */
        if (!(modes[m] & TJ_PRINT_NO_TYPES) && !(modes[m] & TJ_PRINT_NO_STRIDES))
            assert_int_equal(tj_graph_verify(h), tj_graph_verify(g));
        free(a);
        free(b);
        tj_graph_free(h);
    }
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_corpus(void **state) {
    (void)state;
    DIR *d = opendir(CORPUS);
    assert_non_null(d);
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".ir") == 0) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], compare_names);
    assert_true(n >= 20);
    int exact = 0;
    for (int k = 0; k < n; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", CORPUS, names[k]);
        char *text = irt_read_file(path);
        assert_non_null(text);
        tj_graph *g = tj_graph_parse(text, NULL);
        if (!g) {
            print_message("%s: %s\n", path, tj_last_error());
            fail();
        }
        if (tj_graph_verify(g) != TJ_OK) {
            print_message("%s: %s\n", path, tj_last_error());
            fail();
        }
        check_round_trip(g, path);
        /* files that do not start with a comment are written as the printer writes them */
        if (text[0] != '#') {
            unsigned flags = strncmp(names[k], "untyped", 7) == 0 ? TJ_PRINT_NO_TYPES : 0;
            char *s = tj_graph_to_string(g, flags);
            if (strcmp(s, text) != 0) print_message("%s does not print back as written\n", path);
            irt_assert_text(s, text);
            free(s);
            exact++;
        }
        /* copies print alike; Graphviz output exists for every file */
        tj_graph *c = tj_graph_clone(g, NULL);
        char *s1 = tj_graph_to_string(g, 0), *s2 = tj_graph_to_string(c, 0);
        irt_assert_text(s2, s1);
        char *dot = tj_graph_to_dot(g, 0);
        assert_non_null(dot);
        assert_true(strncmp(dot, "digraph tjit {\n", 15) == 0);
        free(dot);
        free(s1);
        free(s2);
        tj_graph_free(c);
        tj_graph_free(g);
        free(text);
        free(names[k]);
    }
    print_message("%d corpus files round-trip, %d print back exactly as written\n", n, exact);
    assert_true(exact >= 20);
}

/* Canonical numbering does not depend on the numbers a file uses. */
static void test_canonical_renumbers(void **state) {
    (void)state;
    const char *a = "graph(%7 : Float(2), %3 : Float(2)):\n"
                    "  %100 = aten::mul(%7, %3)\n"
                    "  %5 = aten::neg(%100)\n"
                    "  return (%5)\n";
    const char *b = "graph(%0 : Float(2), %1 : Float(2)):\n"
                    "  %2 = aten::mul(%0, %1)\n"
                    "  %3 = aten::neg(%2)\n"
                    "  return (%3)\n";
    tj_graph *ga = tj_graph_parse(a, NULL), *gb = tj_graph_parse(b, NULL);
    assert_non_null(ga);
    assert_non_null(gb);
    char *ca = tj_graph_to_string(ga, TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES);
    irt_assert_prints(gb, TJ_PRINT_CANONICAL | TJ_PRINT_NO_TYPES, ca);
    irt_assert_prints(gb, TJ_PRINT_NO_TYPES, ca);
    /* the plain form keeps the file's numbers */
    irt_assert_prints(ga, TJ_PRINT_NO_TYPES,
                      "graph(%7,\n      %3):\n  %100 = aten::mul(%7, %3)\n"
                      "  %5 = aten::neg(%100)\n  return (%5)\n");
    /* new values continue after the largest number */
    tj_node *n = tj_node_create_op(ga, irt_op("aten::exp"), (tj_value *[]){tj_graph_input(ga, 0)},
                                   1, NULL, 0, -1);
    assert_int_equal(tj_value_id(tj_node_output(n, 0)), 101);
    free(ca);
    tj_graph_free(ga);
    tj_graph_free(gb);
}

/* Every double survives the text form bit for bit (NaNs as NaN). */
static void test_float_constants(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    double specials[] = {0.0, -0.0, 1.0, 0.1, 1e-300, 5e-324, 2.2250738585072014e-308,
                         1.7976931348623157e308, INFINITY, -INFINITY, NAN, 123456789012345678.0,
                         1e22, 1e23, 3.0e-5};
    int n_special = (int)(sizeof specials / sizeof specials[0]);
    double values[400];
    for (int k = 0; k < 400; k++) {
        if (k < n_special) {
            values[k] = specials[k];
        } else {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            memcpy(&values[k], &seed, sizeof(double));
        }
        tj_node *c = tj_node_create_constant(g, TJ_ATTR_FLOAT, &(tj_attr){.f = values[k]});
        tj_block_append(tj_graph_block(g), c);
        tj_graph_add_output(g, tj_node_output(c, 0));
    }
    /* f32 tensors print the shortest text that reads back as the same float */
    float fv[64];
    for (int k = 0; k < 64; k++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        uint32_t bits = (uint32_t)seed;
        memcpy(&fv[k], &bits, sizeof bits);
    }
    int64_t sizes[] = {4, 16};
    tj_tensor *t = tj_from_array(fv, sizes, 2, TJ_F32);
    tj_node *tc = tj_node_create_tensor_constant(g, t);
    tj_release(t);
    tj_block_append(tj_graph_block(g), tc);
    tj_graph_add_output(g, tj_node_output(tc, 0));
    check_round_trip(g, "float constants");
    char *text = tj_graph_to_string(g, 0);
    tj_graph *h = tj_graph_parse(text, NULL);
    assert_non_null(h);
    for (int k = 0; k < 400; k++) {
        double got = tj_node_attr(tj_value_node(tj_graph_output(h, k)), 0)->f;
        if (isnan(values[k])) assert_true(isnan(got));
        else assert_memory_equal(&got, &values[k], sizeof got);
    }
    tj_tensor *ht = tj_node_tensor(tj_value_node(tj_graph_output(h, 400)));
    for (int k = 0; k < 64; k++) {
        float got = ((const float *)tj_data(ht))[k];
        if (isnan(fv[k])) assert_true(isnan(got));
        else assert_memory_equal(&got, &fv[k], sizeof got);
    }
    free(text);
    tj_graph_free(h);
    tj_graph_free(g);
}

static void test_strings(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    char all[256];
    for (int k = 1; k < 256; k++) all[k - 1] = (char)k; /* every byte but NUL */
    all[255] = '\0';
    const char *strs[] = {"", "\"", "\\", "\\\"", "\n\t\r", all, "%x = aten::add(%y)", "]"};
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
        tj_node *c = tj_node_create_constant(g, TJ_ATTR_STR, &(tj_attr){.s = strs[k]});
        tj_block_append(tj_graph_block(g), c);
        tj_graph_add_output(g, tj_node_output(c, 0));
    }
    check_round_trip(g, "strings");
    char *text = tj_graph_to_string(g, 0);
    tj_graph *h = tj_graph_parse(text, NULL);
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
        assert_string_equal(tj_node_attr(tj_value_node(tj_graph_output(h, (int)k)), 0)->s, strs[k]);
    free(text);
    tj_graph_free(h);
    tj_graph_free(g);
}

/* A graph made through the API with every kind of node round-trips. */
static void test_api_graph(void **state) {
    (void)state;
    tj_graph *g = tj_graph_new();
    int64_t sizes[] = {4, 6};
    tj_type ft = tj_type_contiguous(TJ_F32, sizes, 2);
    tj_value *x = tj_graph_add_input(g, &ft, "x");
    tj_type it = tj_type_scalar(TJ_TYPE_INT);
    tj_value *k = tj_graph_add_input(g, &it, NULL);
    tj_node *ch = tj_node_create(g, TJ_NODE_CONSTANT_CHUNK, &x, 1, 3);
    tj_node_set_attr(ch, "chunks", TJ_ATTR_INT, &(tj_attr){.i = 3});
    tj_node_set_attr(ch, "dim", TJ_ATTR_INT, &(tj_attr){.i = -1});
    tj_block_append(tj_graph_block(g), ch);
    tj_value *parts[3] = {tj_node_output(ch, 0), tj_node_output(ch, 1), tj_node_output(ch, 2)};
    tj_node *lc = tj_node_create(g, TJ_NODE_LIST_CONSTRUCT, parts, 3, 1);
    tj_type lt = tj_type_list(TJ_TYPE_TENSOR);
    tj_value_set_type(tj_node_output(lc, 0), &lt);
    tj_block_append(tj_graph_block(g), lc);
    tj_value *lv = tj_node_output(lc, 0);
    tj_node *lu = tj_node_create(g, TJ_NODE_LIST_UNPACK, &lv, 1, 3);
    tj_block_append(tj_graph_block(g), lu);
    tj_node *cat = tj_node_create_op(g, irt_op("aten::cat"), parts, 3, (tj_attr[]){{.i = 1}}, 1, -1);
    tj_block_append(tj_graph_block(g), cat);
    tj_graph *sub = tj_graph_new();
    tj_value *a = tj_graph_add_input(sub, &ft, "a");
    tj_node *s1 = tj_node_create_op(sub, irt_op("aten::gelu"), &a, 1,
                                    (tj_attr[]){{.s = "tanh"}}, 1, -1);
    tj_block_append(tj_graph_block(sub), s1);
    tj_value_set_type(tj_node_output(s1, 0), &ft);
    tj_graph_add_output(sub, tj_node_output(s1, 0));
    tj_value *cat_out = tj_node_output(cat, 0);
    tj_node *fg = tj_node_create_fusion_group(g, sub, &cat_out, 1);
    tj_block_append(tj_graph_block(g), fg);
    tj_graph_add_output(g, tj_node_output(fg, 0));
    tj_graph_add_output(g, tj_node_output(lu, 2));
    tj_graph_add_output(g, k);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    check_round_trip(g, "API graph");
    irt_assert_prints(g, TJ_PRINT_CANONICAL | TJ_PRINT_NO_STRIDES,
                      "graph(%x : Float(4, 6, device=cpu),\n"
                      "      %1 : int):\n"
                      "  %2 : Tensor, %3 : Tensor, %4 : Tensor = prim::ConstantChunk[chunks=3, dim=-1](%x)\n"
                      "  %5 : Tensor[] = prim::ListConstruct(%2, %3, %4)\n"
                      "  %6 : Tensor, %7 : Tensor, %8 : Tensor = prim::ListUnpack(%5)\n"
                      "  %9 : Tensor = aten::cat[dim=1](%2, %3, %4)\n"
                      "  %10 : Float(4, 6, device=cpu) = prim::FusionGroup_0(%9)\n"
                      "  return (%10, %8, %1)\n"
                      "with prim::FusionGroup_0 = graph(%a : Float(4, 6, device=cpu)):\n"
                      "  %1 : Float(4, 6, device=cpu) = aten::gelu[approximate=\"tanh\"](%a)\n"
                      "  return (%1)\n");
    tj_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_canonical_renumbers),
        cmocka_unit_test(test_float_constants),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_api_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
