/* test_passes.c — the graph passes on hand-written IR: the golden cases under
 * tests/passes/<pass>/<case>.ir with their <case>.expected.ir (a case may
 * name its pipeline in a "# passes: a,b" line). Each case runs its passes,
 * must verify and print as expected; a second run must change nothing; and
 * the graphs before and after must compute the same outputs from the same
 * random inputs: exactly, or within a "# tolerance: RTOL ATOL" line's bounds
 * for rewrites that compute a value another way (merge_linears). Also: the pipeline by name (unknown names, whitespace,
 * malformed graphs, TJIT_DUMP) and constant folding's size limit. The
 * example models and canonical order live in test_passes_models.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testing.h"

#define GOLDEN_DIR "tests/passes"

static int n_compared; /* golden cases whose before and after graphs were run */

static int setup(void **state) {
    (void)state;
    tj_clear_error();
    tj_scope_begin();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tj_scope_end();
    tj_clear_error();
    return 0;
}

/* ---- helpers -------------------------------------------------------------------------- */

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(buf, (cap *= 2) + 1);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static tj_graph *parse_or_fail(const char *text, const char *what) {
    tj_status st;
    tj_graph *g = tj_graph_parse(text, &st);
    if (!g) {
        print_message("%s does not parse: %s\n", what, tj_last_error());
        fail();
    }
    if (tj_graph_verify(g) != TJ_OK) {
        print_message("%s does not verify: %s\n", what, tj_last_error());
        fail();
    }
    return g;
}

static char *canonical(const tj_graph *g) {
    char *s = tj_graph_to_string(g, TJ_PRINT_CANONICAL);
    assert_non_null(s);
    return s;
}

static void assert_text(const char *got, const char *want, const char *what) {
    if (!strcmp(got, want)) return;
    print_message("%s: texts differ\n--- got:\n%s--- expected:\n%s", what, got, want);
    fail();
}

static int count_nodes(const tj_graph *g, const char *name) {
    int k = 0;
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g)); n; n = tj_node_next(n))
        k += !strcmp(tj_node_name(n), name);
    return k;
}

/* Graphs the comparison of results leaves out: random draws (the default
 * generator moves on between the runs) and hand-written fusion groups (the
 * fuser's own tests cover running them). */
static bool skip_running(const tj_graph *g) {
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g)); n; n = tj_node_next(n)) {
        if (tj_node_op(n) && tj_op_kind_of(tj_node_op(n)) == TJ_KIND_RANDOM) return true;
        if (tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP) return true;
    }
    return false;
}

/* Random inputs for every graph input, the same for the same seed; false
 * when some input's dtype or sizes are unknown. */
static bool make_inputs(const tj_graph *g, uint64_t seed, tj_tensor **in) {
    tj_generator *gen = tj_generator_new(seed);
    assert_non_null(gen);
    bool ok = true;
    for (int i = 0; i < tj_graph_num_inputs(g) && ok; i++) {
        const tj_type *t = tj_value_type(tj_graph_input(g, i));
        ok = t->kind == TJ_TYPE_TENSOR && t->dtype != TJ_UNKNOWN && t->ndim != TJ_UNKNOWN;
        for (int d = 0; ok && d < t->ndim; d++) ok = t->sizes[d] != TJ_UNKNOWN_DIM;
        if (ok) in[i] = tt_random(gen, t->sizes, t->ndim, (tj_dtype)t->dtype, -2, 3);
    }
    tj_generator_free(gen);
    return ok;
}

/* Runs g without passes on seeded inputs; NULL outputs when it fails. *ran
 * is false when g cannot run at all (inputs of unknown types, or nodes the
 * interpreter does not run, like lists). */
static tj_status run_plain(const tj_graph *g, uint64_t seed, tj_tensor **out, bool *ran) {
    tj_tensor *in[16] = {0};
    *ran = tj_graph_num_inputs(g) <= 16 && make_inputs(g, seed, in);
    if (!*ran) return TJ_OK;
    tj_compile_options opts = {.passes = ""};
    tj_program *p = tj_compile(g, &opts);
    if (!p) {
        *ran = false;
        tj_clear_error();
        return TJ_OK;
    }
    tj_status st = tj_run(p, in, out);
    tj_program_free(p);
    tj_clear_error();
    return st;
}

/* before and after compute the same outputs from the same inputs, within
 * rtol and atol (0: exactly), or both fail, unless skip_running says
 * otherwise. */
static void check_same_results(const tj_graph *before, const tj_graph *after, const char *what,
                               double rtol, double atol) {
    if (skip_running(before)) return;
    int n_out = tj_graph_num_outputs(before);
    assert_int_equal(n_out, tj_graph_num_outputs(after));
    assert_true(n_out <= 16);
    tj_tensor *o1[16] = {0}, *o2[16] = {0};
    bool ran1, ran2;
    tj_status s1 = run_plain(before, 42, o1, &ran1), s2 = run_plain(after, 42, o2, &ran2);
    if (!ran1) return;
    if (!ran2) {
        print_message("%s: the graph runs before the passes but not after\n", what);
        fail();
    }
    n_compared++;
    if ((s1 == TJ_OK) != (s2 == TJ_OK)) {
        print_message("%s: one graph runs and the other fails (%d, %d)\n", what, s1, s2);
        fail();
    }
    for (int i = 0; s1 == TJ_OK && i < n_out; i++) {
        tt_context("%s, output %d", what, i);
        tt_ref ref = tt_ref_of(o1[i]);
        tt_assert_sizes(o2[i], ref.sizes, ref.ndim);
        assert_int_equal(tj_tensor_dtype(o1[i]), tj_tensor_dtype(o2[i]));
        tt_assert_close_ref(o2[i], &ref, rtol, atol);
        tt_ref_free(&ref);
    }
    tt_context(NULL);
}

/* The pipeline a case names in a "# passes: ..." line, else its directory. */
static void case_pipeline(const char *text, const char *dir, char *out, size_t cap) {
    const char *p = strstr(text, "# passes:");
    if (!p) {
        snprintf(out, cap, "%s", dir);
        return;
    }
    p += strlen("# passes:");
    size_t n = strcspn(p, "\n");
    snprintf(out, cap, "%.*s", (int)n, p);
}

/* The bounds a case names in a "# tolerance: RTOL ATOL" line, else 0 0. */
static void case_tolerance(const char *text, double *rtol, double *atol) {
    const char *p = strstr(text, "# tolerance:");
    *rtol = *atol = 0;
    if (p && sscanf(p + strlen("# tolerance:"), "%lf %lf", rtol, atol) != 2) {
        print_message("a tolerance line needs two numbers: %.60s\n", p);
        fail();
    }
}

static void run_case(const char *dir, const char *file) {
    char path[512], expected_path[512], what[1024], pipeline[256];
    snprintf(path, sizeof path, "%s/%s/%s", GOLDEN_DIR, dir, file);
    snprintf(expected_path, sizeof expected_path, "%s/%s/%.*s.expected.ir", GOLDEN_DIR, dir,
             (int)(strlen(file) - 3), file);
    char *text = read_file(path), *expected_text = read_file(expected_path);
    if (!text || !expected_text) {
        print_message("%s: cannot read it or its expected result %s\n", path, expected_path);
        fail();
    }
    case_pipeline(text, dir, pipeline, sizeof pipeline);
    snprintf(what, sizeof what, "%s (%s)", path, pipeline);
    tj_graph *g = parse_or_fail(text, path);
    tj_graph *before = tj_graph_clone(g, NULL);
    tj_graph *expected = parse_or_fail(expected_text, expected_path);
    if (tj_run_passes(g, pipeline) != TJ_OK) {
        print_message("%s: %s\n", what, tj_last_error());
        fail();
    }
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    char *got = canonical(g), *want = canonical(expected);
    assert_text(got, want, what);
    /* idempotent: a second run changes nothing */
    assert_int_equal(tj_run_passes(g, pipeline), TJ_OK);
    char *again = canonical(g);
    assert_text(again, got, "a second run");
    double rtol, atol;
    case_tolerance(text, &rtol, &atol);
    check_same_results(before, g, what, rtol, atol);
    free(got);
    free(want);
    free(again);
    tj_graph_free(g);
    tj_graph_free(before);
    tj_graph_free(expected);
    free(text);
    free(expected_text);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every case of one directory; returns how many. */
static int run_dir(const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, dir);
    DIR *d = opendir(path);
    if (!d) return 0;
    char *names[256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 256;)
        if (ends_with(e->d_name, ".ir") && !ends_with(e->d_name, ".expected.ir"))
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    for (int i = 0; i < n; i++) {
        run_case(dir, names[i]);
        free(names[i]);
    }
    return n;
}

/* ---- golden cases, one test per directory ---------------------------------------------- */

static void golden(const char *dir, int at_least) {
    n_compared = 0;
    int n = run_dir(dir);
    assert_true(n_compared > 0);
    if (n < at_least) {
        print_message("%s/%s: %d cases, expected at least %d (run from the source tree)\n",
                      GOLDEN_DIR, dir, n, at_least);
        fail();
    }
}

static void test_golden_functionalize(void **state) { (void)state; golden("functionalize", 3); }
static void test_golden_dce(void **state) { (void)state; golden("dce", 5); }
static void test_golden_cse(void **state) { (void)state; golden("cse", 5); }
static void test_golden_constant_fold(void **state) { (void)state; golden("constant_fold", 4); }
static void test_golden_peephole(void **state) { (void)state; golden("peephole", 7); }
static void test_golden_canonicalize(void **state) { (void)state; golden("canonicalize", 2); }
static void test_golden_pipeline(void **state) { (void)state; golden("pipeline", 1); }
static void test_golden_merge_linears(void **state) { (void)state; golden("merge_linears", 2); }
static void test_golden_fold_batch_norm(void **state) { (void)state; golden("fold_batch_norm", 2); }
static void test_golden_split_batch_norm(void **state) { (void)state; golden("split_batch_norm", 2); }

/* ---- the IR corpus ------------------------------------------------------------------------
 * Every graph of tests/ir/ that verifies goes through each pass: the result
 * verifies, a second run changes nothing, and it computes what the original
 * did. The whole default pipeline must leave a graph that verifies. */

static void test_ir_corpus(void **state) {
    (void)state;
    const char *passes[] = {"dce", "cse", "constant_fold", "peephole", "canonicalize"};
    DIR *d = opendir("tests/ir");
    assert_non_null(d);
    int n_files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!ends_with(e->d_name, ".ir")) continue;
        char path[512];
        snprintf(path, sizeof path, "tests/ir/%s", e->d_name);
        char *text = read_file(path);
        assert_non_null(text);
        tj_graph *g = tj_graph_parse(text, NULL);
        free(text);
        if (!g || tj_graph_verify(g) != TJ_OK) { /* not every corpus file is a valid graph */
            tj_graph_free(g);
            tj_clear_error();
            continue;
        }
        n_files++;
        for (size_t p = 0; p < sizeof passes / sizeof passes[0]; p++) {
            char what[600];
            snprintf(what, sizeof what, "%s, pass %s", path, passes[p]);
            tj_graph *h = tj_graph_clone(g, NULL);
            assert_non_null(h);
            if (tj_run_passes(h, passes[p]) != TJ_OK) {
                print_message("%s: %s\n", what, tj_last_error());
                fail();
            }
            assert_int_equal(tj_graph_verify(h), TJ_OK);
            char *once = canonical(h);
            assert_int_equal(tj_run_passes(h, passes[p]), TJ_OK);
            char *twice = canonical(h);
            assert_text(twice, once, what);
            check_same_results(g, h, what, 0, 0);
            free(once);
            free(twice);
            tj_graph_free(h);
        }
        assert_int_equal(tj_run_passes(g, tj_default_pipeline()), TJ_OK);
        assert_int_equal(tj_graph_verify(g), TJ_OK);
        tj_graph_free(g);
    }
    closedir(d);
    assert_true(n_files >= 10);
}

/* ---- the pipeline by name ----------------------------------------------------------------- */

static const char *small_graph =
    "graph(%x : Float(4, strides=[1], device=cpu)):\n"
    "  %1 : Float(4, strides=[1], device=cpu) = aten::exp(%x)\n"
    "  %2 : Float(4, strides=[1], device=cpu) = aten::exp(%x)\n"
    "  %3 : Float(4, strides=[1], device=cpu) = aten::neg(%x)\n"
    "  %4 : Float(4, strides=[1], device=cpu) = aten::add[alpha=1.](%1, %2)\n"
    "  return (%4)\n";

static void test_registry(void **state) {
    (void)state;
    const char *expected[] = {"functionalize", "dce", "cse", "constant_fold", "peephole",
                              "canonicalize", "merge_linears", "fold_batch_norm",
                              "split_batch_norm", "fuse"};
    assert_int_equal(tj_num_passes(), 10);
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        assert_non_null(tj_find_pass(expected[i]));
        bool listed = false;
        for (int k = 0; k < tj_num_passes(); k++) listed |= !strcmp(tj_pass_name(k), expected[i]);
        assert_true(listed);
    }
    assert_ptr_equal(tj_find_pass("dce"), tj_pass_dce);
    assert_ptr_equal(tj_find_pass("fuse"), tj_pass_fuse);
    assert_null(tj_find_pass("nope"));
    assert_null(tj_find_pass(NULL));
    assert_null(tj_pass_name(-1));
    assert_null(tj_pass_name(tj_num_passes()));
    /* the default pipeline fuses, then puts the result in canonical order */
    const char *def = tj_default_pipeline();
    assert_non_null(strstr(def, "dce,"));
    assert_true(ends_with(def, ",fuse,canonicalize"));
    tj_graph *g = parse_or_fail(small_graph, "small graph");
    assert_int_equal(tj_run_passes(g, def), TJ_OK);
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
}

static void test_unknown_pass(void **state) {
    (void)state;
    tj_graph *g = parse_or_fail(small_graph, "small graph");
    char *before = canonical(g);
    /* every name is checked before any pass runs: the graph stays as it was */
    assert_int_equal(tj_run_passes(g, "dce,bogus"), TJ_ERR_ARG);
    tt_assert_error("unknown pass 'bogus'");
    tt_assert_error("known passes: functionalize, dce, cse, constant_fold, peephole, canonicalize, "
                    "merge_linears, fold_batch_norm, split_batch_norm, fuse");
    char *after = canonical(g);
    assert_text(after, before, "after a refused pipeline");
    free(after);
    assert_int_equal(tj_run_passes(g, "DCE"), TJ_ERR_ARG); /* names are exact */
    assert_int_equal(tj_run_passes(NULL, "dce"), TJ_ERR_ARG);
    assert_int_equal(tj_run_passes(g, NULL), TJ_ERR_ARG);
    assert_int_equal(tj_pass_dce(NULL), TJ_ERR_ARG);
    assert_int_equal(tj_pass_functionalize(NULL), TJ_ERR_ARG);
    assert_int_equal(tj_pass_cse(NULL), TJ_ERR_ARG);
    assert_int_equal(tj_pass_constant_fold(NULL), TJ_ERR_ARG);
    assert_int_equal(tj_pass_peephole(NULL), TJ_ERR_ARG);
    assert_int_equal(tj_pass_canonicalize(NULL), TJ_ERR_ARG);
    /* an empty pipeline runs nothing; spaces and empty items are allowed */
    assert_int_equal(tj_run_passes(g, ""), TJ_OK);
    after = canonical(g);
    assert_text(after, before, "after the empty pipeline");
    free(after);
    assert_int_equal(tj_run_passes(g, " cse ,, dce ,"), TJ_OK);
    assert_int_equal(count_nodes(g, "aten::exp"), 1);
    assert_int_equal(count_nodes(g, "aten::neg"), 0);
    free(before);
    tj_graph_free(g);
}

static void test_malformed_graph(void **state) {
    (void)state;
    /* parses (the text is well formed) but does not verify: exp of an int */
    tj_graph *g = tj_graph_parse("graph():\n"
                                 "  %0 : int = prim::Constant[value=1]()\n"
                                 "  %1 : Tensor = aten::exp(%0)\n"
                                 "  return (%1)\n",
                                 NULL);
    assert_non_null(g);
    assert_int_equal(tj_run_passes(g, "dce"), TJ_ERR_ARG);
    tt_assert_error("malformed");
    tj_graph_free(g);
}

/* Runs pipeline with TJIT_DUMP=dump_env and returns what went to stderr. */
static char *stderr_of(tj_graph *g, const char *pipeline, const char *dump_env) {
    char path[] = "/tmp/tjit_passes_dumpXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fd, 2) >= 0);
    setenv("TJIT_DUMP", dump_env, 1);
    tj_status st = tj_run_passes(g, pipeline);
    unsetenv("TJIT_DUMP");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    assert_int_equal(st, TJ_OK);
    char *text = read_file(path);
    unlink(path);
    assert_non_null(text);
    return text;
}

static void test_dump(void **state) {
    (void)state;
    tj_graph *g = parse_or_fail(small_graph, "small graph");
    char *out = stderr_of(g, "dce,cse,canonicalize", "cse");
    assert_null(strstr(out, "# after dce"));
    assert_non_null(strstr(out, "# after cse\ngraph(%x"));
    assert_null(strstr(out, "# after canonicalize"));
    assert_int_equal(count_nodes(g, "aten::exp"), 1);
    free(out);
    out = stderr_of(g, "dce,canonicalize", "all");
    assert_non_null(strstr(out, "# after dce\n"));
    assert_non_null(strstr(out, "# after canonicalize\n"));
    free(out);
    out = stderr_of(g, "dce,canonicalize", "peephole, canonicalize");
    assert_null(strstr(out, "# after dce"));
    assert_non_null(strstr(out, "# after canonicalize\n"));
    free(out);
    tj_graph_free(g);
}

/* TJIT_DUMP=pass-times: a line per pass run, with its node counts, and no graphs. */
static void test_dump_pass_times(void **state) {
    (void)state;
    tj_graph *g = parse_or_fail(small_graph, "small graph");
    char *out = stderr_of(g, "dce,cse,dce", "pass-times");
    assert_null(strstr(out, "# after"));
    const char *dce = strstr(out, "# pass dce ");
    assert_non_null(dce);
    assert_non_null(strstr(dce, " ms  4 -> 3 nodes\n"));
    const char *cse = strstr(out, "# pass cse ");
    assert_true(cse > dce);
    assert_non_null(strstr(cse, " ms  3 -> 2 nodes\n"));
    assert_non_null(strstr(cse, "# pass dce "));
    free(out);
    out = stderr_of(g, "dce", "all");
    assert_null(strstr(out, "# pass "));
    free(out);
    tj_graph_free(g);
}

/* ---- constant folding's limits -------------------------------------------------------------- */

static tj_graph *expand_graph(int64_t rows, bool typed) {
    char text[1024];
    char type[64];
    if (typed) snprintf(type, sizeof type, "Float(%lld, 1024)", (long long)rows);
    else snprintf(type, sizeof type, "Tensor");
    snprintf(text, sizeof text,
             "graph(%%x : Float(1024, strides=[1], device=cpu)):\n"
             "  %%1 : Float(1, strides=[1], device=cpu) = prim::Constant[value=tensor([1.5], "
             "dtype=Float, sizes=[1])]()\n"
             "  %%2 : %s = aten::expand[size=[%lld, 1024]](%%1)\n"
             "  %%3 : %s = aten::exp(%%2)\n"
             "  %%4 : Tensor = aten::add[alpha=1.](%%x, %%3)\n"
             "  return (%%4)\n",
             type, (long long)rows, type);
    return parse_or_fail(text, "expand graph");
}

static void test_fold_size_limit(void **state) {
    (void)state;
    /* 1024 x 1024 elements (the limit) fold, expand and exp both */
    tj_graph *g = expand_graph(1024, true);
    assert_int_equal(tj_pass_constant_fold(g), TJ_OK);
    assert_int_equal(count_nodes(g, "aten::expand"), 0);
    assert_int_equal(count_nodes(g, "aten::exp"), 0);
    assert_int_equal(count_nodes(g, "prim::Constant"), 1);
    tj_node *add = tj_block_last(tj_graph_block(g));
    assert_string_equal(tj_node_name(add), "aten::add");
    tj_tensor *c = tj_node_tensor(tj_value_node(tj_node_input(add, 1)));
    assert_non_null(c);
    assert_int_equal(tj_numel(c), 1 << 20);
    assert_true(tj_is_contiguous(c));
    tj_graph_free(g);
    /* one row more does not, whether the type says so or only the result does */
    for (int typed = 0; typed < 2; typed++) {
        g = expand_graph(1025, typed);
        assert_int_equal(tj_pass_constant_fold(g), TJ_OK);
        assert_int_equal(count_nodes(g, "aten::expand"), 1);
        assert_int_equal(count_nodes(g, "aten::exp"), 1);
        assert_int_equal(tj_graph_verify(g), TJ_OK);
        tj_graph_free(g);
    }
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_golden_functionalize), T(test_golden_dce), T(test_golden_cse), T(test_golden_constant_fold),
        T(test_golden_peephole), T(test_golden_canonicalize), T(test_golden_pipeline),
        T(test_golden_merge_linears), T(test_golden_fold_batch_norm),
        T(test_golden_split_batch_norm),
        T(test_ir_corpus),       T(test_registry),        T(test_unknown_pass),        T(test_malformed_graph),
        T(test_dump),            T(test_dump_pass_times), T(test_fold_size_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
