/* test_onnx_conformance.c — ONNX's own conformance data (Debian's
 * libonnx-testdata): every backend node test, and every model of the
 * pytorch-converted and pytorch-operator folders, is imported, compiled and
 * replayed on each of its test_data_set_* inputs, and the outputs are
 * compared with the expected ones at ONNX's backend-test tolerances. A model
 * whose op, attribute or dtype tjit does not map is skipped (the importer
 * says TJ_ERR_UNSUPPORTED); any other failure fails the test. The node tests
 * run a second time through tjit's export and import again. The counts are
 * printed; TJIT_ONNX_VERBOSE=1 also prints why each skipped model is skipped. */
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tests/onnx/onnx_testing.h"

enum { MAX_IO = 64 };

typedef struct counts {
    int passed, failed, skipped;
} counts;

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted entries of dir starting with prefix (malloc'd names). */
static int list_dir(const char *dir, const char *prefix, char ***out) {
    DIR *d = opendir(dir);
    int n = 0, cap = 0;
    char **names = NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, strlen(prefix))) continue;
        if (n == cap) names = realloc(names, sizeof *names * (size_t)(cap = cap ? 2 * cap : 64));
        names[n++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, by_name);
    *out = names;
    return n;
}

static void free_list(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* snprintf into a path buffer (vsnprintf: paths are checked by their use) */
static void path_of(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void path_of(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

typedef enum { RUN_PASS, RUN_FAIL, RUN_SKIP } run_result;

/* One data set: inputs in, outputs compared (inside a scope, which owns the tensors). */
static run_result run_set(const tj_program *p, const char *set, char *why, size_t n) {
    tj_tensor *in[MAX_IO] = {0}, *out[MAX_IO] = {0}, *want[MAX_IO] = {0};
    int n_in = tj_program_num_inputs(p), n_out = tj_program_num_outputs(p);
    run_result r = RUN_FAIL;
    char path[4096];
    for (int i = 0; i < MAX_IO; i++) {
        path_of(path, sizeof path, "%s/input_%d.pb", set, i);
        if (!exists(path)) {
            if (i != n_in) {
                snprintf(why, n, "%d input files for %d graph inputs", i, n_in);
                goto done;
            }
            break;
        }
        if (i >= n_in || !(in[i] = tj_onnx_load_tensor(path))) {
            r = tj_last_status() == TJ_ERR_UNSUPPORTED ? RUN_SKIP : RUN_FAIL;
            snprintf(why, n, "input_%d: %s", i, i >= n_in ? "more input files than inputs" : tj_last_error());
            goto done;
        }
    }
    for (int k = 0; k < n_out; k++) {
        path_of(path, sizeof path, "%s/output_%d.pb", set, k);
        if (!(want[k] = tj_onnx_load_tensor(path))) {
            r = tj_last_status() == TJ_ERR_UNSUPPORTED ? RUN_SKIP : RUN_FAIL;
            snprintf(why, n, "output_%d: %s", k, tj_last_error());
            goto done;
        }
    }
    if (tj_run(p, in, out) != TJ_OK) {
        snprintf(why, n, "run: %s", tj_last_error());
        goto done;
    }
    for (int k = 0; k < n_out; k++) {
        char diff[256];
        if (!ot_close(want[k], out[k], OT_RTOL, OT_ATOL, diff, sizeof diff)) {
            snprintf(why, n, "output %d: %s", k, diff);
            goto done;
        }
    }
    r = RUN_PASS;
done: /* the tensors belong to the caller's scope */
    return r;
}

static bool through_export; /* run what tjit exports of the imported graph instead */

static run_result run_model(const char *dir, char *why, size_t n) {
    char path[4096];
    path_of(path, sizeof path, "%s/model.onnx", dir);
    tj_clear_error();
    tj_graph *g = tj_graph_import_onnx(path);
    if (!g) {
        snprintf(why, n, "%s", tj_last_error());
        return tj_last_status() == TJ_ERR_UNSUPPORTED ? RUN_SKIP : RUN_FAIL;
    }
    /* and through tjit's own export: the model tjit writes back must import and
     * give the same outputs */
    void *bytes = NULL;
    size_t len = 0;
    if (through_export) {
        if (tj_graph_export_onnx_bytes(g, NULL, &bytes, &len) != TJ_OK) {
            snprintf(why, n, "export: %s", tj_last_error());
            tj_graph_free(g);
            return RUN_FAIL;
        }
        tj_graph_free(g);
        g = tj_graph_import_onnx_bytes(bytes, len, NULL);
        free(bytes);
        if (!g) {
            snprintf(why, n, "import of tjit's export: %s", tj_last_error());
            return RUN_FAIL;
        }
    }
    tj_program *p = tj_compile(g, NULL);
    tj_graph_free(g);
    if (!p) {
        snprintf(why, n, "compile: %s", tj_last_error());
        return RUN_FAIL;
    }
    char **sets;
    int n_sets = list_dir(dir, "test_data_set_", &sets);
    run_result r = n_sets ? RUN_PASS : RUN_FAIL;
    if (!n_sets) snprintf(why, n, "no test_data_set_*");
    for (int s = 0; s < n_sets && r == RUN_PASS; s++) {
        path_of(path, sizeof path, "%s/%s", dir, sets[s]);
        tj_scope_begin();
        r = run_set(p, path, why, n);
        tj_scope_end();
    }
    free_list(sets, n_sets);
    tj_program_free(p);
    return r;
}

static counts run_folder(const char *folder) {
    counts c = {0, 0, 0};
    const char *root = ot_testdata_dir();
    char dir[4096], why[2048];
    path_of(dir, sizeof dir, "%s/%s", root, folder);
    char **tests;
    int n = list_dir(dir, "test_", &tests);
    bool verbose = getenv("TJIT_ONNX_VERBOSE") != NULL;
    for (int i = 0; i < n; i++) {
        char model_dir[4096 + 256];
        path_of(model_dir, sizeof model_dir, "%s/%s", dir, tests[i]);
        why[0] = '\0';
        switch (run_model(model_dir, why, sizeof why)) {
        case RUN_PASS: c.passed++; break;
        case RUN_SKIP:
            c.skipped++;
            if (verbose) printf("  skip %s: %s\n", tests[i], why);
            break;
        case RUN_FAIL:
            c.failed++;
            printf("  FAIL %s/%s: %s\n", folder, tests[i], why);
            break;
        }
    }
    free_list(tests, n);
    return c;
}

static void check_data(void) {
    if (!ot_testdata_dir()) {
        print_error("ONNX's test data is missing: install Debian's libonnx-testdata "
                    "(tools/install-deps.sh does), or set TJIT_ONNX_TESTDATA\n");
        fail();
    }
}

static void test_node(void **state) {
    (void)state;
    check_data();
    counts c = run_folder("node");
    printf("ONNX node tests: %d passed, %d failed, %d skipped (op not mapped)\n", c.passed, c.failed,
           c.skipped);
    assert_int_equal(c.failed, 0);
    assert_true(c.passed >= 300);
}

/* The same node tests imported, exported by tjit, imported again and run:
 * every rule of the exporter that an imported graph reaches. */
static void test_node_through_export(void **state) {
    (void)state;
    check_data();
    through_export = true;
    counts c = run_folder("node");
    through_export = false;
    printf("ONNX node tests through tjit's export: %d passed, %d failed, %d skipped (op not mapped)\n",
           c.passed, c.failed, c.skipped);
    assert_int_equal(c.failed, 0);
    assert_true(c.passed >= 300);
}

static void test_pytorch_converted(void **state) {
    (void)state;
    check_data();
    counts c = run_folder("pytorch-converted");
    printf("ONNX pytorch-converted models: %d passed, %d failed, %d skipped (op not mapped)\n",
           c.passed, c.failed, c.skipped);
    assert_int_equal(c.failed, 0);
    assert_true(c.passed > 0);
}

static void test_pytorch_operator(void **state) {
    (void)state;
    check_data();
    counts c = run_folder("pytorch-operator");
    printf("ONNX pytorch-operator models: %d passed, %d failed, %d skipped (op not mapped)\n",
           c.passed, c.failed, c.skipped);
    assert_int_equal(c.failed, 0);
    assert_true(c.passed > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_node_through_export),
        cmocka_unit_test(test_pytorch_converted),
        cmocka_unit_test(test_pytorch_operator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
