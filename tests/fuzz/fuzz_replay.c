/* fuzz_replay.c — a libFuzzer target for the whole path from IR text to
 * results (see Makefile here): parse, verify, compile with the default
 * options (the default pipeline, fusion, the static plan), make inputs of the
 * graph's input types and replay, twice.
 *
 * Every stage may refuse its input, but only with a status and a message:
 * a failure without one aborts. Graphs whose values could be large (more
 * than MAX_ELEMS elements in any typed value, or sizes unknown) are compiled
 * but not run, so that the fuzzer spends its time on code paths rather than
 * on memory. Sanitizers catch crashes, leaks and undefined behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit/ir.h"
#include "tjit/tjit.h"

enum { MAX_ELEMS = 1 << 14, MAX_INPUTS = 64 };

static void must_have_message(const char *stage) {
    if (tj_last_error()[0] != '\0') return;
    fprintf(stderr, "fuzz_replay: %s failed without a message\n", stage);
    abort();
}

static int64_t numel_of(const tj_type *t) {
    if (t->kind != TJ_TYPE_TENSOR) return 0;
    if (t->ndim < 0 || t->ndim > TJ_MAX_DIMS) return -1;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] < 0) return -1;
        if (t->sizes[d] > MAX_ELEMS) return -1;
        n *= t->sizes[d];
        if (n > MAX_ELEMS) return -1;
    }
    return n;
}

/* Whether every tensor value of g has a known, small size. */
static bool small_graph(tj_graph *g) {
    for (int i = 0; i < tj_graph_num_inputs(g); i++)
        if (numel_of(tj_value_type(tj_graph_input(g, i))) < 0) return false;
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n))
        for (int o = 0; o < tj_node_num_outputs(n); o++)
            if (numel_of(tj_value_type(tj_node_output(n, o))) < 0) return false;
    return true;
}

/* An input of type t with small values that vary with the input's position
 * (indices among them stay mostly in range: 0, 1, 2). */
static tj_tensor *make_input(const tj_type *t, int which) {
    if (t->kind != TJ_TYPE_TENSOR || t->device_type != TJ_CPU || t->dtype < 0 ||
        t->dtype >= TJ_NUM_DTYPES)
        return NULL;
    int64_t n = numel_of(t);
    if (n < 0) return NULL;
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * 7 + which * 3) % 5) * 0.5 - (t->dtype == TJ_I64 ? 0 : 1);
    if (t->dtype == TJ_I64)
        for (int64_t i = 0; i < n; i++) v[i] = (double)((i + (int64_t)which) % 3);
    tj_tensor *d = tj_from_array(v, t->sizes, t->ndim, TJ_F64);
    free(v);
    tj_tensor *r = d ? tj_to_dtype(d, (tj_dtype)t->dtype) : NULL;
    tj_release(d);
    return r;
}

static void run_program(tj_program *p, tj_graph *g) {
    int n_in = tj_program_num_inputs(p), n_out = tj_program_num_outputs(p);
    if (n_in > MAX_INPUTS || n_out > MAX_INPUTS || n_in != tj_graph_num_inputs(g)) return;
    tj_tensor *in[MAX_INPUTS], *out[MAX_INPUTS];
    int made = 0;
    for (; made < n_in; made++) {
        in[made] = make_input(tj_value_type(tj_graph_input(g, made)), made);
        if (!in[made]) break;
    }
    tj_clear_error();
    for (int rep = 0; made == n_in && rep < 2; rep++) {
        if (tj_run(p, in, out) != TJ_OK) {
            must_have_message("tj_run");
            break;
        }
        for (int o = 0; o < n_out; o++) tj_release(out[o]);
    }
    for (int i = 0; i < made; i++) tj_release(in[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tj_clear_error();
    tj_graph *g = tj_graph_parse_n((const char *)data, size, NULL);
    if (!g) {
        must_have_message("tj_graph_parse_n");
        return 0;
    }
    if (tj_graph_verify(g) != TJ_OK) {
        must_have_message("tj_graph_verify");
        tj_graph_free(g);
        return 0;
    }
    bool small = small_graph(g);
    tj_program *p = tj_compile(g, NULL);
    if (!p) must_have_message("tj_compile");
    else if (small) run_program(p, g);
    tj_program_free(p);
    tj_graph_free(g);
    tj_clear_error();
    return 0;
}
