/* test_cuda_models.c — the example models run on CUDA with no change to their
 * code: parameters moved to cuda:0 (tj_move_to_device), traced on CUDA
 * inputs, compiled and replayed, equal to the CPU's results within tolerance;
 * replay in a steady state takes no memory from the driver; and the MLP's
 * training program (forward and derived backward graph) gives the CPU's
 * gradients. Runs on the host harness in `make test`, on a GPU in
 * `make test-gpu`. */
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tests/support/cuda_cases.h"
#include "tjit/runtime.h"

static const tj_device CUDA0 = {TJ_CUDA, 0};

/* f32 models of a few layers: GEMM and conv sums in another order, and the
 * GPU's own transcendentals */
enum { MAX_IO = 8 };
static const double RTOL = 2e-4, ATOL = 2e-5;

/* the parameters and the buffers (running statistics), as module.to(device) */
static void move_params(const tjx_model *m, void *params, tj_device dev) {
    tj_tensor *ps[64];
    int n = m->parameters(params, ps, 64);
    if (m->buffers) n += m->buffers(params, ps + n, 64 - n);
    for (int i = 0; i < n; i++) assert_int_equal(tj_move_to_device(ps[i], dev), TJ_OK);
}

static void check_model(const char *name) {
    const tjx_model *m = tjx_find_model(name);
    assert_non_null(m);
    tt_context("model %s", name);
    tj_generator *g = tj_generator_new(11);
    void *params = m->create(g);
    assert_non_null(params);
    tj_tensor *in[MAX_IO], *dev_in[MAX_IO], *expected[MAX_IO], *out[MAX_IO];
    assert_int_equal(m->make_inputs(params, g, in), TJ_OK);
    assert_int_equal(m->forward(params, in, m->n_in, expected, m->n_out), TJ_OK);
    move_params(m, params, CUDA0);
    for (int i = 0; i < m->n_in; i++) assert_non_null(dev_in[i] = tj_to_device(in[i], CUDA0));
    tj_graph *graph = tj_trace(m->forward, params, dev_in, m->n_in, m->n_out, NULL);
    if (!graph) fail_msg("tracing %s on cuda:0: %s", name, tj_last_error());
    tj_program *p = tj_compile(graph, NULL);
    assert_non_null(p);
    tj_memory_stats before, after;
    for (int run = 0; run < 4; run++) {
        if (run == 2) assert_int_equal(tj_cuda_memory_stats(0, &before), TJ_OK);
        tj_scope_begin();
        assert_int_equal(tj_run(p, dev_in, out), TJ_OK);
        for (int k = 0; k < m->n_out; k++) {
            assert_int_equal(tj_tensor_device(out[k]).type, TJ_CUDA);
            tt_ref r = tt_ref_of(expected[k]);
            tt_assert_close_ref(tj_to_device(out[k], TJ_DEVICE_CPU), &r, RTOL, ATOL);
            tt_ref_free(&r);
        }
        tj_scope_end();
    }
    assert_int_equal(tj_cuda_memory_stats(0, &after), TJ_OK);
    assert_true(after.driver_allocs == before.driver_allocs); /* steady state: all cached */
    tj_program_free(p);
    tj_graph_free(graph);
    m->destroy(params);
    tj_generator_free(g);
    tt_cuda_count_case();
    tt_context(NULL);
}

static void mlp(void **state) { (void)state, check_model("mlp"); }
static void lstm_cell(void **state) { (void)state, check_model("lstm_cell"); }
static void lstm(void **state) { (void)state, check_model("lstm"); }
static void cnn(void **state) { (void)state, check_model("cnn"); }
static void transformer(void **state) { (void)state, check_model("transformer"); }

/* The MLP's loss with its derived backward graph on both devices. */
static void mlp_training_gradients(void **state) {
    (void)state;
    const tjx_model *m = &tjx_mlp;
    tj_generator *g = tj_generator_new(5);
    void *cpu_params = m->create(g);
    tj_generator_set_state(g, 5, 0);
    void *dev_params = m->create(g);
    tj_tensor *in[2];
    assert_int_equal(m->make_inputs(cpu_params, g, in), TJ_OK);
    int64_t n = tj_size(in[0], 0), classes[256];
    assert_true(n <= 256);
    for (int64_t i = 0; i < n; i++) classes[i] = (i * 7) % 10;
    in[1] = tj_from_array(classes, &n, 1, TJ_I64);
    tjx_task cpu = {m, cpu_params, "nll"}, dev = {m, dev_params, "nll"};
    move_params(m, dev_params, CUDA0);
    tj_tensor *dev_in[2] = {tj_to_device(in[0], CUDA0), tj_to_device(in[1], CUDA0)};
    tj_program *pc = tjx_compile_training(&cpu, in, NULL);
    tj_program *pd = tjx_compile_training(&dev, dev_in, NULL);
    assert_non_null(pc);
    assert_non_null(pd);
    tj_tensor *lc, *ld;
    if (tj_run(pc, in, &lc) || tj_run(pd, dev_in, &ld)) fail_msg("run: %s", tj_last_error());
    if (tj_backward(pc, NULL, NULL) || tj_backward(pd, NULL, NULL))
        fail_msg("backward: %s", tj_last_error());
    tt_ref r = tt_ref_of(lc);
    tt_assert_close_ref(tj_to_device(ld, TJ_DEVICE_CPU), &r, RTOL, ATOL);
    tt_ref_free(&r);
    tj_tensor *ps[16];
    int np = m->parameters(cpu_params, ps, 16);
    for (int i = 0; i < np; i++) {
        const char *name = tj_tensor_name(ps[i]);
        tt_context("gradient of %s", name);
        tj_tensor *gc = tj_program_grad(pc, name), *gd = tj_program_grad(pd, name);
        assert_non_null(gc);
        assert_non_null(gd);
        assert_int_equal(tj_tensor_device(gd).type, TJ_CUDA);
        tt_ref rg = tt_ref_of(gc);
        tt_assert_close_ref(tj_to_device(gd, TJ_DEVICE_CPU), &rg, 1e-3, 1e-5);
        tt_ref_free(&rg); /* gc and gd belong to the test's scope */
    }
    tt_context(NULL);
    tj_program_free(pc);
    tj_program_free(pd);
    m->destroy(cpu_params);
    m->destroy(dev_params);
    tj_generator_free(g);
    tt_cuda_count_case();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(mlp),         TT_SCOPED_TEST(lstm_cell), TT_SCOPED_TEST(lstm),
        TT_SCOPED_TEST(cnn),         TT_SCOPED_TEST(transformer),
        TT_SCOPED_TEST(mlp_training_gradients),
    };
    return TT_CUDA_RUN(tests);
}
