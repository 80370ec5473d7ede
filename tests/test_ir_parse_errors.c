/* test_ir_parse_errors.c — malformed text: each case gives NULL, the status
 * TJ_ERR_PARSE and exactly the message listed ("line:col: expected X, got
 * Y"); unknown ops suggest the nearest known one. Then a sweep that cuts and
 * corrupts the corpus files, which must never crash or leak. */
#include <dirent.h>

#include "tests/ir_testing.h"

typedef struct bad_case {
    const char *text;
    const char *message;
} bad_case;

static const bad_case cases[] = {
    /* structure */
    {"", "1:1: expected 'graph', got end of input"},
    {"grap(%x):\n  return (%x)\n", "1:1: expected 'graph', got 'grap'"},
    {"graph(%x):\n  %1 = aten::neg(%x)\n", "3:1: expected a statement or 'return', got end of input"},
    {"graph(%x):\n  return (%x\n", "3:1: expected ',' or ')', got end of input"},
    {"graph(%x) \n  return (%x)\n", "2:3: expected ':', got 'return'"},
    {"graph(%x):\n  return (%x)\nfoo\n", "3:1: expected 'with' or the end of input, got 'foo'"},
    {"graph(%x):\n  %1 aten::neg(%x)\n  return (%1)\n",
     "2:6: expected ',', ':' or '=', got 'aten::neg'"},
    {"graph(%x):\n  %1 = neg(%x)\n  return (%1)\n",
     "2:8: expected an op name like aten::add, got 'neg'"},
    /* tokens */
    {"graph(%x):\n  %1 = aten::neg(%x) @\n  return (%1)\n", "2:22: expected a token, got character '@'"},
    {"graph(%x):\n  return (%x)\0\n", "2:14: expected a token, got byte 0x00"},
    {"graph(% x):\n  return (%x)\n", "1:8: expected a value name after '%', got ' '"},
    {"graph(%007):\n  return (%007)\n",
     "1:7: expected a value number below 10^9 without leading zeros or a name starting with a "
     "letter or '_', got %007"},
    {"graph():\n  %1 = prim::Constant[value=\"abc]()\n  return (%1)\n",
     "2:36: expected '\"' closing the string, got end of line"},
    {"graph():\n  %1 = prim::Constant[value=\"a\\qb\"]()\n  return (%1)\n",
     "2:31: expected an escape (\\n \\t \\r \\\" \\\\ \\xHH), got '\\q'"},
    {"graph():\n  %1 = prim::Constant[value=\"\\x0\"]()\n  return (%1)\n",
     "2:30: expected two hex digits (not 00) after \\x"},
    {"graph():\n  %1 = prim::Constant[value=9223372036854775808]()\n  return (%1)\n",
     "2:29: expected an integer that fits in 64 bits, got '9223372036854775808'"},
    /* values */
    {"graph(%x):\n  %1 = aten::neg(%y)\n  return (%1)\n",
     "2:18: expected a value defined above, got value %y"},
    {"graph(%x):\n  %1 = aten::neg(%1)\n  return (%1)\n",
     "2:18: expected a value defined above, got value %1"},
    {"graph(%x):\n  %x = aten::neg(%x)\n  return (%x)\n",
     "2:3: expected a new value, got %x (defined before)"},
    {"graph(%x, %x):\n  return (%x)\n", "1:11: expected a new value, got %x (defined before)"},
    /* ops: names, arity, attributes */
    {"graph(%x):\n  %1 = aten::tanhh(%x)\n  return (%1)\n",
     "2:8: expected a known op, got 'aten::tanhh' (did you mean 'aten::tanh'?)"},
    {"graph(%x):\n  %1 = aten::slise(%x)\n  return (%1)\n",
     "2:8: expected a known op, got 'aten::slise' (did you mean 'aten::slice.Tensor'?)"},
    {"graph(%x):\n  %1 = aten::sigmod(%x)\n  return (%1)\n",
     "2:8: expected a known op, got 'aten::sigmod' (did you mean 'aten::sigmoid'?)"},
    {"graph():\n  %1 = prim::Constnt[value=1]()\n  return (%1)\n",
     "2:8: expected a known op, got 'prim::Constnt' (did you mean 'prim::Constant'?)"},
    {"graph(%x):\n  %1 = foo::zzzzzzzzzzzz(%x)\n  return (%1)\n",
     "2:8: expected a known op, got 'foo::zzzzzzzzzzzz'"},
    {"graph(%x):\n  %1 = aten::add(%x)\n  return (%1)\n",
     "2:8: expected 2 inputs for aten::add, got 1"},
    {"graph(%x):\n  %1, %2 = aten::tanh(%x)\n  return (%1)\n",
     "2:12: expected 1 output for aten::tanh, got 2"},
    {"graph(%x):\n  = aten::chunk[chunks=2](%x)\n  return (%x)\n",
     "2:5: expected outputs for aten::chunk, got none"},
    {"graph(%x, %y):\n  %1 = aten::add[beta=2.](%x, %y)\n  return (%1)\n",
     "2:18: expected an attribute of aten::add (alpha), got 'beta'"},
    {"graph(%x):\n  %1 = aten::neg[alpha=2.](%x)\n  return (%1)\n",
     "2:18: expected an attribute of aten::neg (none), got 'alpha'"},
    {"graph(%x):\n  %1 = aten::slice.Tensor[dim=\"a\"](%x)\n  return (%1)\n",
     "2:31: expected an int for 'dim', got string \"a\""},
    {"graph(%x):\n  %1 = aten::slice.Tensor[dim=None](%x)\n  return (%1)\n",
     "2:31: expected an int for 'dim', got 'None'"},
    {"graph(%x):\n  %1 = aten::slice.Tensor[dim=0, dim=1](%x)\n  return (%1)\n",
     "2:34: expected each attribute once, got 'dim' again"},
    {"graph(%x, %y):\n  %1 = aten::lerp.Scalar(%x, %y)\n  return (%1)\n",
     "2:8: expected attribute 'weight' of aten::lerp.Scalar (it has no default), got none"},
    {"graph(%x):\n  %1 = aten::gelu[approximate=\"fast\"](%x)\n  return (%1)\n",
     "2:31: attribute 'approximate' of aten::gelu: expected one of none|tanh, got \"fast\""},
    {"graph(%x):\n  %1 = aten::clamp[min=nan](%x)\n  return (%1)\n",
     "2:24: attribute 'min' of aten::clamp: nan would read as None"},
    {"graph(%x):\n  %1 = aten::to.dtype[dtype=f32](%x)\n  return (%1)\n",
     "2:29: expected a dtype (Float, Double, Long or Bool), got 'f32'"},
    {"graph(%x):\n  %1 = aten::view[size=[2, 1.5]](%x)\n  return (%1)\n",
     "2:28: expected an integer, got a float"},
    /* prim nodes */
    {"graph():\n  %1 = prim::Constant()\n  return (%1)\n",
     "2:8: expected attribute 'value' of prim::Constant (it has no default), got none"},
    {"graph(%x):\n  %1, %2 = prim::ConstantChunk[chunks=3, dim=0](%x)\n  return (%1)\n",
     "2:12: expected 3 outputs for prim::ConstantChunk, got 2"},
    {"graph(%x):\n  %1 = prim::Constant[value=1](%x)\n  return (%1)\n",
     "2:8: expected 0 inputs for prim::Constant, got 1"},
    {"graph():\n  %1 = prim::Constant[value=maybe]()\n  return (%1)\n",
     "2:29: expected a constant (a number, True, False, a string, a list or tensor(...)), got "
     "'maybe'"},
    {"graph():\n  %1 = prim::Constant[value=tensor([1., 2., 3.], dtype=Float, sizes=[2, 2])]()\n"
     "  return (%1)\n",
     "2:29: expected 4 values for sizes [2, 2], got 3"},
    {"graph():\n  %1 = prim::Constant[value=tensor([1.5], dtype=Long, sizes=[1])]()\n"
     "  return (%1)\n",
     "2:37: expected an integer for a Long tensor, got 1.5"},
    {"graph():\n  %1 = prim::Constant[value=tensor([], dtype=Float, sizes=[4294967296, "
     "4294967296])]()\n  return (%1)\n",
     "2:29: expected a tensor of fewer than 2^63 values, got sizes [4294967296, 4294967296]"},
    /* subgraphs */
    {"graph(%x):\n  %1 = prim::FusionGroup(%x)\n  return (%1)\n",
     "2:8: expected prim::FusionGroup_<k> naming its 'with' section, got 'prim::FusionGroup'"},
    {"graph(%x):\n  %1 = prim::FusionGroup_3(%x)\n  return (%1)\n",
     "2:8: expected a subgraph defined by a 'with' section, got prim::FusionGroup_3"},
    {"graph(%x):\n  return (%x)\nwith prim::FusionGroup_0 = graph(%a):\n  return (%a)\n",
     "3:6: expected every subgraph used, got prim::FusionGroup_0 unused"},
    {"graph(%x):\n  %1 = prim::FusionGroup_0(%x)\n  %2 = prim::FusionGroup_0(%x)\n  return (%2)\n"
     "with prim::FusionGroup_0 = graph(%a):\n  return (%a)\n",
     "3:8: expected each subgraph used once, got prim::FusionGroup_0 again"},
    {"graph(%x):\n  return (%x)\nwith prim::FusionGroup_0 = graph(%a):\n"
     "  %b = prim::FusionGroup_0(%a)\n  return (%b)\n",
     "4:8: expected a subgraph defined after the graph using it, got prim::FusionGroup_0"},
    {"graph(%x):\n  %1 = prim::FusionGroup_0(%x)\n  return (%1)\n"
     "with prim::FusionGroup_0 = graph(%a):\n  return (%a)\n"
     "with prim::FusionGroup_0 = graph(%a):\n  return (%a)\n",
     "6:6: expected a new subgraph name, got prim::FusionGroup_0 (defined at 4:6)"},
    {"graph(%x):\n  return (%x)\nwith aten::add = graph(%a):\n  return (%a)\n",
     "3:6: expected a subgraph name like prim::FusionGroup_0, got 'aten::add'"},
    /* types */
    {"graph(%x : Foo(2)):\n  return (%x)\n",
     "1:12: expected a type (Float, Double, Long, Bool, Tensor, int, float, bool, str, NoneType or "
     "a list), got 'Foo'"},
    {"graph(%x : Float(2, 3, strides=[1])):\n  return (%x)\n",
     "1:24: expected 2 strides (one per dim), got 1"},
    {"graph(%x : Float(2, -3)):\n  return (%x)\n", "1:21: expected a size >= 0, got -3"},
    {"graph(%x : Float(1, 1, 1, 1, 1, 1, 1, 1, 1)):\n  return (%x)\n",
     "1:42: expected at most 8 sizes, got '1'"},
    {"graph(%x : Float(2, device=tpu)):\n  return (%x)\n",
     "1:28: expected a device (cpu, cuda:N or '*'), got 'tpu'"},
    {"graph(%x : Float(device=cpu, 2)):\n  return (%x)\n",
     "1:30: expected strides=, requires_grad= or device=, got '2'"},
    {"graph(%x : Float(2, ...)):\n  return (%x)\n",
     "1:21: expected a size or '*' (\"...\" stands alone), got '...'"},
    {"graph(%x : Float(2, requires_grad=2)):\n  return (%x)\n",
     "1:35: expected 0, 1 or '*', got 2"},
    {"graph(%x : Float(2, device=cpu, device=cpu)):\n  return (%x)\n",
     "1:33: expected each of strides=, requires_grad=, device= once, got a second device="},
    {"graph(%x : Float(..., strides=[1])):\n  return (%x)\n",
     "1:23: expected sizes before strides, got strides of a tensor of unknown rank"},
    {"graph(%x : Float(2, device=cuda:70000)):\n  return (%x)\n",
     "1:33: expected a device index in [0, 65535], got 70000"},
    {"graph(%x : Float[]):\n  return (%x)\n", "1:17: expected ',' or ')', got '['"},
};

static void test_bad_inputs(void **state) {
    (void)state;
    size_t n = sizeof cases / sizeof cases[0];
    assert_true(n >= 20);
    for (size_t k = 0; k < n; k++) {
        /* lengths are given so that a NUL inside a case is part of it */
        size_t len = strlen(cases[k].text);
        if (strstr(cases[k].message, "byte 0x00")) len += 2;
        tj_status st = TJ_OK;
        tj_clear_error();
        tj_graph *g = tj_graph_parse_n(cases[k].text, len, &st);
        if (g || st != TJ_ERR_PARSE || strcmp(tj_last_error(), cases[k].message) != 0) {
            print_message("case %zu:\n%s\n--- got:      %s (status %d)\n--- expected: %s\n", k,
                          cases[k].text, g ? "(a graph)" : tj_last_error(), (int)st,
                          cases[k].message);
            tj_graph_free(g);
            fail();
        }
    }
    print_message("%zu malformed inputs rejected with their messages\n", n);
}

static void test_null_text(void **state) {
    (void)state;
    tj_status st = TJ_OK;
    assert_null(tj_graph_parse(NULL, &st));
    assert_int_equal(st, TJ_ERR_ARG);
    assert_null(tj_graph_parse_n(NULL, 3, NULL));
}

/* Every prefix of every corpus file, and copies with bytes replaced, parse or
 * fail with a located message; sanitizers catch the rest. */
static void test_cut_and_corrupted(void **state) {
    (void)state;
    DIR *d = opendir("tests/ir");
    assert_non_null(d);
    struct dirent *e;
    static const char junk[] = {'\0', '%', '(', ')', '[', ']', ',', ':', '=', '"', '\\', '#', '*',
                                '.', '-', '9', 'e', '\n', (char)0xff};
    long parsed = 0, rejected = 0;
    uint32_t seed = 7;
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (nl < 4 || strcmp(e->d_name + nl - 3, ".ir") != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "tests/ir/%s", e->d_name);
        char *text = irt_read_file(path);
        assert_non_null(text);
        size_t len = strlen(text);
        char *copy = malloc(len + 1);
        for (size_t cut = 0; cut <= len; cut++) {
            /* a prefix, not NUL-terminated: the parser must respect the length */
            memcpy(copy, text, cut);
            tj_graph *g = tj_graph_parse_n(copy, cut, NULL);
            if (g) parsed++;
            else rejected++;
            if (!g) assert_true(strchr(tj_last_error(), ':') != NULL);
            tj_graph_free(g);
        }
        for (int round = 0; round < 200 && len; round++) {
            memcpy(copy, text, len);
            for (int flips = 0; flips < 3; flips++) {
                seed = seed * 1664525u + 1013904223u;
                copy[(seed >> 8) % len] = junk[(seed >> 20) % sizeof junk];
            }
            tj_graph *g = tj_graph_parse_n(copy, len, NULL);
            if (g) {
                char *s = tj_graph_to_string(g, 0);
                tj_graph *h = tj_graph_parse(s, NULL);
                assert_non_null(h);
                tj_graph_free(h);
                free(s);
                parsed++;
            } else {
                rejected++;
            }
            tj_graph_free(g);
        }
        free(copy);
        free(text);
    }
    closedir(d);
    print_message("%ld cut or corrupted inputs parsed, %ld rejected\n", parsed, rejected);
    assert_true(rejected > 1000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_null_text),
        cmocka_unit_test(test_cut_and_corrupted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
