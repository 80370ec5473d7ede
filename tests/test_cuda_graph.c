/* test_cuda_graph.c — replay as one CUDA graph (tj_compile_options.cuda_graph;
 * docs/cuda.md): on the example models, graph replay equals plain replay bit
 * for bit over many replays with new inputs and with the parameters updated
 * in place between them; outputs held across replays keep their values; a
 * parameter whose storage moved is captured again; a steady replay is one
 * graph launch and allocates only its outputs; programs that cannot be
 * captured replay plainly and say why; two threads replay at once. The
 * programs are compiled without the fuse pass (fused groups do not plan on
 * CUDA yet). Runs on the host harness in `make test`, on a GPU in
 * `make test-gpu`. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "core/storage.h"
#include "examples/models/models.h"
#include "tests/support/cuda_cases.h"
#include "tjit/runtime.h"

static const tj_device CUDA0 = {TJ_CUDA, 0};
static const char *const NO_FUSE = "dce,constant_fold,peephole,cse,dce,canonicalize";
enum { MAX_IO = 8, MAX_PARAMS = 64 };

/* ---- the model under test ---------------------------------------------------------- */

typedef struct subject {
    const tjx_model *m;
    void *params;
    tj_generator *gen;
    tj_tensor *params_list[MAX_PARAMS];
    tj_tensor *step[MAX_PARAMS]; /* each parameter's in-place update, on the device */
    int n_params;
    tj_graph *graph;
    tj_program *plain, *graphed;
} subject;

static tj_tensor *device_copy(tj_tensor *t) {
    tj_tensor *d = tj_to_device(t, CUDA0);
    assert_non_null(d);
    return tj_retain(d); /* outlives the scope it was made in */
}

/* The model with its parameters on cuda:0, traced, and compiled twice over
 * the same parameters: replayed plainly and as a graph. */
static void subject_open(subject *s, const char *name) {
    memset(s, 0, sizeof *s);
    s->m = tjx_find_model(name);
    assert_non_null(s->m);
    s->gen = tj_generator_new(7);
    /* the registry's cell is batch 64 by 512: a small one keeps the harness quick */
    s->params = !strcmp(name, "lstm_cell")
                    ? tjx_lstm_cell_create_sized(s->gen, (tjx_lstm_sizes){4, 16, 16, 1, 1})
                    : s->m->create(s->gen);
    assert_non_null(s->params);
    s->n_params = s->m->parameters(s->params, s->params_list, MAX_PARAMS);
    int n_all = s->n_params;
    if (s->m->buffers) n_all += s->m->buffers(s->params, s->params_list + n_all, MAX_PARAMS - n_all);
    for (int i = 0; i < n_all; i++) assert_int_equal(tj_move_to_device(s->params_list[i], CUDA0), TJ_OK);
    for (int i = 0; i < s->n_params; i++) {
        tj_tensor *r = tj_randn(tj_sizes(s->params_list[i]), tj_ndim(s->params_list[i]),
                                tj_tensor_dtype(s->params_list[i]), s->gen);
        s->step[i] = device_copy(r);
    }
    tj_tensor *in[MAX_IO], *dev_in[MAX_IO];
    assert_int_equal(s->m->make_inputs(s->params, s->gen, in), TJ_OK);
    for (int i = 0; i < s->m->n_in; i++) assert_non_null(dev_in[i] = tj_to_device(in[i], CUDA0));
    s->graph = tj_trace(s->m->forward, s->params, dev_in, s->m->n_in, s->m->n_out, NULL);
    if (!s->graph) fail_msg("tracing %s: %s", name, tj_last_error());
    tj_compile_options plain = {.passes = NO_FUSE}, graphed = {.passes = NO_FUSE, .cuda_graph = true};
    s->plain = tj_compile(s->graph, &plain);
    s->graphed = tj_compile(s->graph, &graphed);
    assert_non_null(s->plain);
    assert_non_null(s->graphed);
}

static void subject_close(subject *s) {
    tj_program_free(s->plain);
    tj_program_free(s->graphed);
    tj_graph_free(s->graph);
    for (int i = 0; i < s->n_params; i++) tj_release(s->step[i]);
    s->m->destroy(s->params);
    tj_generator_free(s->gen);
}

/* New input values on the device (the test's scope holds them). */
static void new_inputs(subject *s, tj_tensor **dev_in) {
    tj_tensor *in[MAX_IO];
    assert_int_equal(s->m->make_inputs(s->params, s->gen, in), TJ_OK);
    for (int i = 0; i < s->m->n_in; i++) assert_non_null(dev_in[i] = tj_to_device(in[i], CUDA0));
}

/* An SGD-like step on every parameter, in place. */
static void update_parameters(subject *s, double lr) {
    for (int i = 0; i < s->n_params; i++)
        assert_non_null(tj_sub_(s->params_list[i], s->step[i], lr));
}

static void assert_same_bits(tj_tensor *a, tj_tensor *b, const char *what, int replay) {
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(tj_tensor_dtype(a), tj_tensor_dtype(b));
    assert_int_equal(tj_ndim(a), tj_ndim(b));
    for (int d = 0; d < tj_ndim(a); d++) assert_int_equal(tj_size(a, d), tj_size(b, d));
    tj_tensor *ha = tj_contiguous(tj_to_device(a, TJ_DEVICE_CPU));
    tj_tensor *hb = tj_contiguous(tj_to_device(b, TJ_DEVICE_CPU));
    size_t bytes = (size_t)tj_numel(ha) * tj_dtype_size(tj_tensor_dtype(ha));
    if (memcmp(tj_data(ha), tj_data(hb), bytes))
        fail_msg("%s differs from plain replay at replay %d", what, replay);
}

static tj_plan_stats stats_of(const tj_program *p) {
    tj_plan_stats st;
    assert_int_equal(tj_program_plan_stats(p, &st), TJ_OK);
    return st;
}

/* ---- graph replay against plain replay --------------------------------------------- */

static void check_replays(const char *name, int replays) {
    tt_context("model %s", name);
    subject s;
    subject_open(&s, name);
    int n_out = s.m->n_out;
    tj_tensor *held_plain[MAX_IO] = {0}, *held_graph[MAX_IO] = {0};
    for (int r = 0; r < replays; r++) {
        tj_scope_begin();
        tj_tensor *in[MAX_IO], *a[MAX_IO], *b[MAX_IO];
        new_inputs(&s, in);
        if (tj_run(s.plain, in, a)) fail_msg("plain replay %d: %s", r, tj_last_error());
        if (tj_run(s.graphed, in, b)) fail_msg("graph replay %d: %s", r, tj_last_error());
        for (int k = 0; k < n_out; k++) {
            assert_same_bits(a[k], b[k], "an output", r);
            /* last replay's outputs are the caller's: this one left them alone */
            if (held_graph[k]) assert_same_bits(held_plain[k], held_graph[k], "a held output", r);
            tj_release(held_plain[k]);
            tj_release(held_graph[k]);
            held_plain[k] = tj_retain(a[k]);
            held_graph[k] = tj_retain(b[k]);
        }
        update_parameters(&s, 1e-3);
        tj_scope_end();
    }
    for (int k = 0; k < n_out; k++) tj_release(held_plain[k]), tj_release(held_graph[k]);
    tj_plan_stats st = stats_of(s.graphed);
    if (!st.cuda_graph) fail_msg("%s was not replayed as a graph: %s", name, st.cuda_graph_error);
    assert_null(st.cuda_graph_error);
    assert_int_equal(st.cuda_graph_captures, 1);
    assert_int_equal(st.cuda_graph_launches, replays - 1); /* the first replay warms up */
    assert_false(stats_of(s.plain).cuda_graph);
    subject_close(&s);
    tt_cuda_count_case();
    tt_context(NULL);
}

static void lstm_cell_replays(void **state) { (void)state, check_replays("lstm_cell", 100); }
static void lstm_replays(void **state) { (void)state, check_replays("lstm", 100); }
static void mlp_replays(void **state) { (void)state, check_replays("mlp", 6); }
static void cnn_replays(void **state) { (void)state, check_replays("cnn", 6); }

/* ---- a steady replay ---------------------------------------------------------------- */

static void steady_replay_is_one_launch(void **state) {
    (void)state;
    subject s;
    subject_open(&s, "lstm_cell");
    tj_tensor *in[MAX_IO], *out[MAX_IO];
    new_inputs(&s, in);
    for (int r = 0; r < 3; r++) assert_int_equal(tj_run(s.graphed, in, out), TJ_OK);
    tjcu_launch_counts before = tjcu_get_launch_counts(CUDA0);
    tjc_alloc_counts alloc_before, alloc_after;
    tjc_alloc_counts_get(&alloc_before);
    tj_memory_stats mem_before, mem_after;
    assert_int_equal(tj_cuda_memory_stats(0, &mem_before), TJ_OK);
    assert_int_equal(tj_run(s.graphed, in, out), TJ_OK);
    tjcu_launch_counts after = tjcu_get_launch_counts(CUDA0);
    tjc_alloc_counts_get(&alloc_after);
    assert_int_equal(tj_cuda_memory_stats(0, &mem_after), TJ_OK);
    assert_int_equal(after.graphs - before.graphs, 1);
    assert_int_equal(after.kernels - before.kernels, 0);
    /* the cell's two outputs (h, c) are its only storages, from the cache */
    long long storages = alloc_after.storages - alloc_before.storages;
    assert_true(storages >= 1 && storages <= s.m->n_out);
    assert_int_equal((long long)((mem_after.cache_hits + mem_after.driver_allocs) -
                                 (mem_before.cache_hits + mem_before.driver_allocs)), storages);
    assert_int_equal(stats_of(s.graphed).cuda_graph_captures, 1);
    subject_close(&s);
    tt_cuda_count_case();
}

/* ---- parameters that move ------------------------------------------------------------- */

static void moved_parameter_is_captured_again(void **state) {
    (void)state;
    subject s;
    subject_open(&s, "lstm_cell");
    tj_tensor *in[MAX_IO], *a[MAX_IO], *b[MAX_IO];
    new_inputs(&s, in);
    for (int r = 0; r < 3; r++) assert_int_equal(tj_run(s.graphed, in, b), TJ_OK);
    assert_int_equal(stats_of(s.graphed).cuda_graph_captures, 1);
    /* the weight's storage is replaced: a block of its size held meanwhile
     * makes the new one land elsewhere */
    tj_tensor *w = s.params_list[0];
    const void *was = tj_data(w);
    assert_int_equal(tj_move_to_device(w, TJ_DEVICE_CPU), TJ_OK);
    tj_tensor *hold = tj_to_device(tj_full(tj_sizes(w), tj_ndim(w), 0.0, tj_tensor_dtype(w)), CUDA0);
    assert_non_null(hold);
    assert_int_equal(tj_move_to_device(w, CUDA0), TJ_OK);
    assert_ptr_not_equal(tj_data(w), was);
    update_parameters(&s, 1e-2);
    assert_int_equal(tj_run(s.plain, in, a), TJ_OK);
    assert_int_equal(tj_run(s.graphed, in, b), TJ_OK);
    for (int k = 0; k < s.m->n_out; k++) assert_same_bits(a[k], b[k], "an output after the move", 0);
    tj_plan_stats st = stats_of(s.graphed);
    assert_true(st.cuda_graph);
    assert_int_equal(st.cuda_graph_captures, 2);
    subject_close(&s);
    tt_cuda_count_case();
}

/* ---- fallbacks ------------------------------------------------------------------------- */

static tj_status select_rows(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    out[0] = tj_relu(tj_index_select(in[0], 0, in[1]));
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_program *compile_select(tj_tensor *const *in, bool cuda_graph) {
    tj_graph *g = tj_trace(select_rows, NULL, in, 2, 1, NULL);
    assert_non_null(g);
    tj_compile_options o = {.passes = NO_FUSE, .cuda_graph = cuda_graph};
    tj_program *p = tj_compile(g, &o);
    assert_non_null(p);
    tj_graph_free(g);
    return p;
}

static void run_three_times(tj_program *p, tj_program *reference, tj_tensor *const *in) {
    for (int r = 0; r < 3; r++) {
        tj_tensor *a, *b;
        assert_int_equal(tj_run(reference, in, &a), TJ_OK);
        assert_int_equal(tj_run(p, in, &b), TJ_OK);
        assert_same_bits(a, b, "the output", r);
    }
}

static void fallbacks_say_why(void **state) {
    (void)state;
    int64_t sizes[2] = {6, 5}, n_idx = 4, idx[4] = {5, 0, 2, 2};
    tj_generator *gen = tj_generator_new(3);
    tj_tensor *x = tj_randn(sizes, 2, TJ_F32, gen), *rows = tj_from_array(idx, &n_idx, 1, TJ_I64);
    tj_tensor *cpu_in[2] = {x, rows}, *dev_in[2] = {tj_to_device(x, CUDA0), tj_to_device(rows, CUDA0)};

    /* inputs on the CPU */
    tj_program *cpu = compile_select(cpu_in, true), *cpu_ref = compile_select(cpu_in, false);
    run_three_times(cpu, cpu_ref, cpu_in);
    tj_plan_stats st = stats_of(cpu);
    assert_false(st.cuda_graph);
    assert_non_null(strstr(st.cuda_graph_error, "is on the CPU"));
    /* not asked for */
    st = stats_of(cpu_ref);
    assert_false(st.cuda_graph);
    assert_non_null(strstr(st.cuda_graph_error, "cuda_graph is off"));

    /* a step that reads device memory on the host (index_select checks its
     * indices) cannot be captured: the capture is refused once, for good */
    tj_program *dev = compile_select(dev_in, true), *dev_ref = compile_select(dev_in, false);
    run_three_times(dev, dev_ref, dev_in);
    run_three_times(dev, dev_ref, dev_in);
    st = stats_of(dev);
    assert_false(st.cuda_graph);
    assert_non_null(strstr(st.cuda_graph_error, "capturing the plan failed"));
    assert_int_equal(st.cuda_graph_launches, 0);
    char *text = tj_program_plan_to_string(dev);
    assert_non_null(strstr(text, "cuda graph: replay runs the plan (capturing the plan failed"));
    free(text);
    tj_program_free(cpu);
    tj_program_free(cpu_ref);
    tj_program_free(dev);
    tj_program_free(dev_ref);
    tj_generator_free(gen);
    tt_cuda_count_case();
}

/* ---- two threads ------------------------------------------------------------------------ */

typedef struct worker {
    subject *s;
    tj_tensor *in[MAX_IO];
    tj_tensor *expected[MAX_IO];
    int mismatches, failures;
} worker;

static void *replay_many(void *arg) {
    worker *w = arg;
    for (int r = 0; r < 20; r++) {
        tj_tensor *out[MAX_IO];
        if (tj_run(w->s->graphed, w->in, out)) {
            w->failures++;
            continue;
        }
        for (int k = 0; k < w->s->m->n_out; k++) {
            tj_tensor *c = tj_to_device(out[k], TJ_DEVICE_CPU), *h = c ? tj_contiguous(c) : NULL;
            tj_release(c);
            tj_tensor *e = w->expected[k];
            size_t bytes = (size_t)tj_numel(e) * tj_dtype_size(tj_tensor_dtype(e));
            w->mismatches += !h || memcmp(tj_data(h), tj_data(e), bytes) != 0;
            tj_release(h);
            tj_release(out[k]);
        }
    }
    return NULL;
}

static void two_threads_replay_at_once(void **state) {
    (void)state;
    subject s;
    subject_open(&s, "lstm_cell");
    worker w[2] = {{.s = &s}, {.s = &s}};
    for (int t = 0; t < 2; t++) {
        tj_tensor *in[MAX_IO], *out[MAX_IO];
        new_inputs(&s, in);
        assert_int_equal(tj_run(s.plain, in, out), TJ_OK);
        for (int i = 0; i < s.m->n_in; i++) w[t].in[i] = tj_retain(in[i]);
        for (int k = 0; k < s.m->n_out; k++)
            w[t].expected[k] = tj_retain(tj_contiguous(tj_to_device(out[k], TJ_DEVICE_CPU)));
    }
    /* outside any scope: each thread's results are its own references */
    pthread_t th[2];
    for (int t = 0; t < 2; t++) assert_int_equal(pthread_create(&th[t], NULL, replay_many, &w[t]), 0);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < 2; t++) {
        assert_int_equal(w[t].failures, 0);
        assert_int_equal(w[t].mismatches, 0);
        for (int i = 0; i < s.m->n_in; i++) tj_release(w[t].in[i]);
        for (int k = 0; k < s.m->n_out; k++) tj_release(w[t].expected[k]);
    }
    assert_true(stats_of(s.graphed).cuda_graph);
    subject_close(&s);
    tt_cuda_count_case();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(lstm_cell_replays),
        TT_SCOPED_TEST(lstm_replays),
        TT_SCOPED_TEST(mlp_replays),
        TT_SCOPED_TEST(cnn_replays),
        TT_SCOPED_TEST(steady_replay_is_one_launch),
        TT_SCOPED_TEST(moved_parameter_is_captured_again),
        TT_SCOPED_TEST(fallbacks_say_why),
        TT_SCOPED_TEST(two_threads_replay_at_once),
    };
    return TT_CUDA_RUN(tests);
}
