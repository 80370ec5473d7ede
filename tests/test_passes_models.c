/* test_passes_models.c — the passes on traced graphs and on generated ones:
 * every example model computes the same outputs with the default pipeline as
 * without passes (within rounding, since the fuser may evaluate differently)
 * and exactly the same after each other pass alone, each pass leaving a graph
 * that verifies and that a second run does not change; and random graphs
 * built in two different node orders, with commutative operands swapped,
 * print identically after dce and canonicalize. */
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tests/support/testing.h"

/* No scope around a test: a model's parameters and inputs belong to the
 * model; outputs are collected by a scope opened while they are used. */
static int setup(void **state) {
    (void)state;
    tj_clear_error();
    return 0;
}

enum { MAX_IO = 8 };

typedef struct traced {
    const tjx_model *m;
    tj_generator *gen;
    void *params;
    tj_tensor *in[MAX_IO];
    tj_graph *g;
} traced;

static void trace_model(traced *t, const tjx_model *m) {
    *t = (traced){.m = m};
    t->gen = tj_generator_new(7);
    assert_non_null(t->gen);
    t->params = m->create(t->gen);
    assert_non_null(t->params);
    assert_int_equal(m->make_inputs(t->params, t->gen, t->in), TJ_OK);
    t->g = tj_trace(m->forward, t->params, t->in, m->n_in, m->n_out, NULL);
    if (!t->g) print_message("tracing %s: %s\n", m->name, tj_last_error());
    assert_non_null(t->g);
}

static void traced_free(traced *t) {
    tj_graph_free(t->g);
    for (int i = 0; i < t->m->n_in; i++) tj_release(t->in[i]);
    t->m->destroy(t->params);
    tj_generator_free(t->gen);
}

/* Compiles g with the given passes and runs it on t's inputs. */
static void run_with(const traced *t, const tj_graph *g, const char *passes, tj_tensor **out) {
    tj_compile_options opts = {.passes = passes};
    tj_program *p = tj_compile(g, &opts);
    if (!p) print_message("%s, passes \"%s\": %s\n", t->m->name, passes ? passes : "(default)",
                          tj_last_error());
    assert_non_null(p);
    assert_int_equal(tj_program_num_outputs(p), t->m->n_out);
    if (tj_run(p, t->in, out) != TJ_OK) {
        print_message("%s: %s\n", t->m->name, tj_last_error());
        fail();
    }
    tj_program_free(p);
}

static void assert_outputs_close(tj_tensor **got, tj_tensor **want, int n, double rtol,
                                 double atol) {
    for (int i = 0; i < n; i++) {
        tt_ref ref = tt_ref_of(want[i]);
        assert_int_equal(tj_tensor_dtype(got[i]), tj_tensor_dtype(want[i]));
        tt_assert_sizes(got[i], ref.sizes, ref.ndim);
        tt_assert_close_ref(got[i], &ref, rtol, atol);
        tt_ref_free(&ref);
    }
}

static char *canonical(const tj_graph *g) {
    char *s = tj_graph_to_string(g, TJ_PRINT_CANONICAL);
    assert_non_null(s);
    return s;
}

/* ---- the example models ------------------------------------------------------------------ */

static void test_models_default_pipeline(void **state) {
    (void)state;
    for (int k = 0; k < tjx_num_models(); k++) {
        traced t;
        trace_model(&t, tjx_model_at(k));
        tt_context("model %s, default pipeline", t.m->name);
        tj_scope_begin();
        tj_tensor *plain[MAX_IO], *optimised[MAX_IO];
        run_with(&t, t.g, "", plain);
        run_with(&t, t.g, NULL, optimised);
        /* fused kernels agree within the documented bounds, not bit for bit
         * (a row group's sums run in their own order) */
        assert_outputs_close(optimised, plain, t.m->n_out, 1e-5, 1e-6);
        /* the same on the graph the pipeline made, run as it is */
        tj_graph *h = tj_graph_clone(t.g, NULL);
        for (int i = 0; i < tj_graph_num_inputs(t.g); i++)
            if (tj_graph_input_binding(t.g, i))
                assert_int_equal(tj_graph_bind_input(h, i, tj_graph_input_binding(t.g, i)), TJ_OK);
        assert_int_equal(tj_run_passes(h, tj_default_pipeline()), TJ_OK);
        assert_int_equal(tj_graph_verify(h), TJ_OK);
        /* no pass makes a graph bigger, but split_batch_norm: a training batch_norm becomes its
         * statistics, two reshapes of them and a multiply-add in its users' fusion group */
        int split = 0;
        for (tj_node *n = tj_block_first(tj_graph_block(t.g)); n; n = tj_node_next(n))
            split += tj_node_kind_of(n) == TJ_NODE_OP && !strcmp(tj_node_name(n), "aten::batch_norm") &&
                     tj_node_attr(n, 0)->b;
        assert_true(tj_block_num_nodes(tj_graph_block(h)) <=
                    tj_block_num_nodes(tj_graph_block(t.g)) + 3 * split);
        char *once = canonical(h);
        assert_int_equal(tj_run_passes(h, tj_default_pipeline()), TJ_OK);
        char *twice = canonical(h);
        assert_string_equal(twice, once);
        tj_tensor *again[MAX_IO];
        run_with(&t, h, "", again);
        assert_outputs_close(again, plain, t.m->n_out, 1e-5, 1e-6);
        free(once);
        free(twice);
        tj_graph_free(h);
        tj_scope_end();
        traced_free(&t);
    }
    tt_context(NULL);
}

static void test_models_each_pass(void **state) {
    (void)state;
    const char *passes[] = {"dce", "cse", "constant_fold", "peephole", "canonicalize"};
    for (int k = 0; k < tjx_num_models(); k++) {
        traced t;
        trace_model(&t, tjx_model_at(k));
        tj_scope_begin();
        tj_tensor *plain[MAX_IO];
        run_with(&t, t.g, "", plain);
        for (size_t p = 0; p < sizeof passes / sizeof passes[0]; p++) {
            tt_context("model %s, pass %s", t.m->name, passes[p]);
            tj_tensor *out[MAX_IO];
            /* through tj_compile: the pass alone, then nothing else */
            run_with(&t, t.g, passes[p], out);
            assert_outputs_close(out, plain, t.m->n_out, 0, 0);
            /* by itself on a copy: it verifies and a second run changes nothing */
            tj_graph *h = tj_graph_clone(t.g, NULL);
            assert_int_equal(tj_find_pass(passes[p])(h), TJ_OK);
            assert_int_equal(tj_graph_verify(h), TJ_OK);
            char *once = canonical(h);
            assert_int_equal(tj_find_pass(passes[p])(h), TJ_OK);
            char *twice = canonical(h);
            assert_string_equal(twice, once);
            free(once);
            free(twice);
            tj_graph_free(h);
        }
        tj_scope_end();
        traced_free(&t);
    }
    tt_context(NULL);
}

static void test_compile_bad_pipeline(void **state) {
    (void)state;
    traced t;
    trace_model(&t, &tjx_mlp);
    tj_compile_options opts = {.passes = "dce,nonsense"};
    assert_null(tj_compile(t.g, &opts));
    tt_assert_error("unknown pass 'nonsense'");
    traced_free(&t);
}

/* ---- canonical order of graphs built in different orders -------------------------------- */

enum { MAX_NODES = 40, N_GRAPH_INPUTS = 3 };

typedef struct dag_node {
    const char *op;
    double alpha; /* aten::add and aten::sub; 0 for other ops */
    int in[2];    /* value numbers: < N_GRAPH_INPUTS for graph inputs */
    int n_in;
} dag_node;

typedef struct dag {
    dag_node nodes[MAX_NODES];
    int n;
    int outputs[3];
} dag;

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static dag random_dag(uint64_t seed) {
    static const char *unary[] = {"aten::exp", "aten::neg", "aten::tanh", "aten::sigmoid"};
    static const char *binary[] = {"aten::mul", "aten::add", "aten::sub", "aten::maximum",
                                   "aten::minimum"};
    uint64_t s = seed * 2654435761u + 1;
    dag d = {.n = 8 + (int)(next_random(&s) % 25)};
    for (int i = 0; i < d.n; i++) {
        dag_node *n = &d.nodes[i];
        int avail = N_GRAPH_INPUTS + i;
        bool bin = next_random(&s) % 3 != 0;
        n->n_in = bin ? 2 : 1;
        n->op = bin ? binary[next_random(&s) % 5] : unary[next_random(&s) % 4];
        if (!strcmp(n->op, "aten::add") || !strcmp(n->op, "aten::sub"))
            n->alpha = next_random(&s) % 2 ? 1.0 : 2.0;
        for (int k = 0; k < n->n_in; k++) n->in[k] = (int)(next_random(&s) % (uint64_t)avail);
    }
    d.outputs[0] = N_GRAPH_INPUTS + d.n - 1;
    d.outputs[1] = N_GRAPH_INPUTS + (int)(next_random(&s) % (uint64_t)d.n);
    d.outputs[2] = (int)(next_random(&s) % (uint64_t)(N_GRAPH_INPUTS + d.n));
    return d;
}

/* Builds d with its nodes in a random topological order (order_seed 0: as
 * generated), swapping the operands of commutative ops at random. */
static tj_graph *build(const dag *d, uint64_t order_seed) {
    tj_graph *g = tj_graph_new();
    assert_non_null(g);
    int64_t sizes[1] = {4};
    tj_type ty = tj_type_contiguous(TJ_F32, sizes, 1);
    tj_value *val[N_GRAPH_INPUTS + MAX_NODES] = {0};
    for (int i = 0; i < N_GRAPH_INPUTS; i++) val[i] = tj_graph_add_input(g, &ty, NULL);
    bool placed[MAX_NODES] = {false};
    uint64_t s = order_seed * 0x9e3779b97f4a7c15ull + 3;
    for (int done = 0; done < d->n; done++) {
        int ready[MAX_NODES], n_ready = 0;
        for (int i = 0; i < d->n; i++) {
            if (placed[i]) continue;
            bool ok = true;
            for (int k = 0; k < d->nodes[i].n_in; k++) ok &= val[d->nodes[i].in[k]] != NULL;
            if (ok) ready[n_ready++] = i;
        }
        assert_true(n_ready > 0);
        int pick = order_seed ? ready[next_random(&s) % (uint64_t)n_ready] : ready[0];
        const dag_node *n = &d->nodes[pick];
        tj_value *in[2] = {val[n->in[0]], n->n_in > 1 ? val[n->in[1]] : NULL};
        bool commutative = !strcmp(n->op, "aten::mul") || !strcmp(n->op, "aten::maximum") ||
                           !strcmp(n->op, "aten::minimum") ||
                           (!strcmp(n->op, "aten::add") && n->alpha == 1.0);
        if (order_seed && commutative && next_random(&s) % 2) {
            tj_value *tmp = in[0];
            in[0] = in[1];
            in[1] = tmp;
        }
        tj_attr alpha = {.f = n->alpha};
        tj_node *node = tj_node_create_op(g, tj_op_find(n->op), in, n->n_in,
                                          n->alpha != 0 ? &alpha : NULL, n->alpha != 0 ? 1 : 0, 1);
        assert_non_null(node);
        assert_int_equal(tj_block_append(tj_graph_block(g), node), TJ_OK);
        assert_int_equal(tj_value_set_type(tj_node_output(node, 0), &ty), TJ_OK);
        val[N_GRAPH_INPUTS + pick] = tj_node_output(node, 0);
        placed[pick] = true;
    }
    for (int i = 0; i < 3; i++) assert_int_equal(tj_graph_add_output(g, val[d->outputs[i]]), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    return g;
}

static void test_canonical_order(void **state) {
    (void)state;
    int reordered = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        dag d = random_dag(seed);
        tj_graph *a = build(&d, 0), *b = build(&d, seed);
        char *ta = canonical(a), *tb = canonical(b);
        reordered += strcmp(ta, tb) != 0;
        free(ta);
        free(tb);
        assert_int_equal(tj_run_passes(a, "dce,canonicalize"), TJ_OK);
        assert_int_equal(tj_run_passes(b, "dce,canonicalize"), TJ_OK);
        ta = canonical(a);
        tb = canonical(b);
        if (strcmp(ta, tb) != 0) {
            print_message("seed %llu: the canonical forms differ\n--- built in order:\n%s--- "
                          "built shuffled:\n%s",
                          (unsigned long long)seed, ta, tb);
            fail();
        }
        free(ta);
        free(tb);
        tj_graph_free(a);
        tj_graph_free(b);
    }
    assert_true(reordered > 150); /* the two builds did differ before */
}

/* Two graphs parsed from texts whose nodes come in different orders. */
static void test_canonical_order_parsed(void **state) {
    (void)state;
    const char *first = "graph(%x : Float(3, strides=[1], device=cpu),\n"
                        "      %y : Float(3, strides=[1], device=cpu)):\n"
                        "  %2 : Float(3, strides=[1], device=cpu) = aten::exp(%x)\n"
                        "  %3 : Float(3, strides=[1], device=cpu) = aten::sin(%y)\n"
                        "  %4 : Float(3, strides=[1], device=cpu) = aten::mul(%2, %3)\n"
                        "  %5 : Float(3, strides=[1], device=cpu) = aten::sub[alpha=1.](%4, %2)\n"
                        "  return (%5, %3)\n";
    const char *second = "graph(%x : Float(3, strides=[1], device=cpu),\n"
                         "      %y : Float(3, strides=[1], device=cpu)):\n"
                         "  %7 : Float(3, strides=[1], device=cpu) = aten::sin(%y)\n"
                         "  %9 : Float(3, strides=[1], device=cpu) = aten::exp(%x)\n"
                         "  %3 : Float(3, strides=[1], device=cpu) = aten::mul(%7, %9)\n"
                         "  %2 : Float(3, strides=[1], device=cpu) = aten::sub[alpha=1.](%3, %9)\n"
                         "  return (%2, %7)\n";
    tj_graph *a = tj_graph_parse(first, NULL), *b = tj_graph_parse(second, NULL);
    assert_non_null(a);
    assert_non_null(b);
    char *ta = canonical(a), *tb = canonical(b);
    assert_true(strcmp(ta, tb) != 0);
    free(ta);
    free(tb);
    assert_int_equal(tj_pass_canonicalize(a), TJ_OK);
    assert_int_equal(tj_pass_canonicalize(b), TJ_OK);
    ta = canonical(a);
    tb = canonical(b);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    tj_graph_free(a);
    tj_graph_free(b);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, setup)
    const struct CMUnitTest tests[] = {
        T(test_models_default_pipeline), T(test_models_each_pass), T(test_compile_bad_pipeline),
        T(test_canonical_order),         T(test_canonical_order_parsed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
