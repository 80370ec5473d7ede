/* test_cuda_training.c — training on CUDA. Each example model (mlp, lstm,
 * cnn, transformer) is compiled with its parameters' gradients from a trace
 * on CUDA inputs, beside the same model on the CPU from the same seed and
 * data: every value the backward program reads (the saved values and the
 * output gradients) and every value it makes is typed on cuda:0, every
 * gradient lands there and equals the CPU's, and a few SGD steps give the
 * CPU's falling losses and batch_norm's running statistics. Then double
 * backward on the device: second derivatives through conv2d and batch_norm,
 * in f64, checked by finite differences on cuda:0 and against the CPU.
 * Runs on the host harness in `make test`, on a GPU in `make test-gpu`.
 * The tests run outside any scope (the gradient checks release what they
 * run), so every reference below is released by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tests/support/cuda_cases.h"
#include "tests/support/gradcheck.h"
#include "tjit/runtime.h"

enum { MAX_IN = 4, MAX_PARAMS = 32, SGD_STEPS = 3 };

/* Tolerances, CUDA against CPU, in f32. The devices sum GEMMs, convolutions
 * and reductions in other orders (a few ulp each), and those differences
 * pass through a few layers and back: losses agree to LOSS_RTOL, gradients
 * element by element to GRAD_RTOL plus GRAD_ATOL times the largest gradient
 * element of the model. A gradient far smaller than that is the difference
 * of larger terms and keeps only their absolute error: a convolution's bias
 * before batch_norm has a gradient of zero, computed as about 1e-8 on
 * either device. */
static const double LOSS_RTOL = 1e-4, GRAD_RTOL = 1e-3, GRAD_ATOL = 1e-4;
/* f64 second derivatives, CUDA against CPU: the same sums in other orders */
static const double F64_RTOL = 1e-9, F64_ATOL = 1e-11;

/* ---- the example models ------------------------------------------------------------ */

typedef struct training_case {
    const char *model;
    const char *loss; /* a tjx_task loss: "nll", "mse" or "square" */
    double lr;        /* examples/train.c's */
} training_case;

/* One device's copy of a case: the parameters, the inputs (the model's, then
 * the target) and the training program. */
typedef struct side {
    tjx_task task;
    tj_tensor *in[MAX_IN];
    tj_program *program;
} side;

static int n_inputs(const side *s) { return s->task.model->n_in + 1; }

/* The loss's target, from gen: classes for nll, values of the output's sizes
 * for mse, and for square an unused scalar (as the example passes). */
static tj_tensor *make_target(const training_case *c, const tjx_model *m, void *params,
                              tj_tensor *const *in, tj_generator *gen) {
    if (!strcmp(c->loss, "square")) return tj_zeros(NULL, 0, TJ_F32);
    tj_tensor *y[4];
    int64_t sizes[TJ_MAX_DIMS];
    tj_scope_begin();
    if (m->forward(params, in, m->n_in, y, m->n_out)) fail_msg("%s forward: %s", m->name, tj_last_error());
    int ndim = tj_ndim(y[0]);
    memcpy(sizes, tj_sizes(y[0]), sizeof(int64_t) * (size_t)ndim);
    tj_scope_end();
    if (!strcmp(c->loss, "nll")) return tt_random(gen, sizes, 1, TJ_I64, 0, (double)sizes[1] - 1);
    return tt_random(gen, sizes, ndim, TJ_F32, -1, 1);
}

/* The CPU side from seed, and the CUDA side with the same parameters (made
 * from the same seed, then moved, buffers too) and copies of its data. */
static void make_sides(const training_case *c, uint64_t seed, side *cpu, side *dev) {
    const tjx_model *m = tjx_find_model(c->model);
    assert_non_null(m);
    tj_generator *gen = tj_generator_new(seed);
    *cpu = (side){.task = {m, m->create(gen), c->loss}};
    assert_non_null(cpu->task.params);
    assert_int_equal(m->make_inputs(cpu->task.params, gen, cpu->in), TJ_OK);
    cpu->in[m->n_in] = make_target(c, m, cpu->task.params, cpu->in, gen);
    assert_non_null(cpu->in[m->n_in]);
    tj_generator_set_state(gen, seed, 0);
    *dev = (side){.task = {m, m->create(gen), c->loss}};
    assert_non_null(dev->task.params);
    tj_tensor *moved[MAX_PARAMS + 8];
    int n = m->parameters(dev->task.params, moved, MAX_PARAMS);
    assert_true(n <= MAX_PARAMS);
    if (m->buffers) n += m->buffers(dev->task.params, moved + n, 8);
    for (int i = 0; i < n; i++) assert_int_equal(tj_move_to_device(moved[i], TT_CUDA0), TJ_OK);
    for (int i = 0; i < n_inputs(cpu); i++) assert_non_null(dev->in[i] = tt_cuda_copy_like(cpu->in[i]));
    tj_generator_free(gen);
    cpu->program = tjx_compile_training(&cpu->task, cpu->in, NULL);
    if (!cpu->program) fail_msg("compiling %s on the CPU: %s", m->name, tj_last_error());
    dev->program = tjx_compile_training(&dev->task, dev->in, NULL);
    if (!dev->program) fail_msg("compiling %s on cuda:0: %s", m->name, tj_last_error());
}

static void free_side(side *s) {
    tj_program_free(s->program);
    for (int i = 0; i < n_inputs(s); i++) tj_release(s->in[i]);
    s->task.model->destroy(s->task.params);
}

static bool on_cuda0(const tj_value *v) {
    const tj_type *t = tj_value_type(v);
    return t->kind != TJ_TYPE_TENSOR || (t->device_type == TJ_CUDA && t->device_index == 0);
}

/* Every tensor the graph takes and makes is typed on cuda:0: no rule left a
 * value (a constant, a saved value, a gradient) on the host. what names the
 * graph in messages. */
static void assert_graph_on_cuda0(const tj_graph *g, const char *what) {
    for (int i = 0; i < tj_graph_num_inputs(g); i++)
        if (!on_cuda0(tj_graph_input(g, i))) fail_msg("%s: input %d is not on cuda:0", what, i);
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g)); n; n = tj_node_next(n))
        for (int o = 0; o < tj_node_num_outputs(n); o++)
            if (!on_cuda0(tj_node_output(n, o)))
                fail_msg("%s: output %d of %s (node %d) is not on cuda:0", what, o, tj_node_name(n),
                         tj_node_id(n));
}

/* The largest magnitude of any element of the program's gradients. */
static double largest_gradient(const tj_program *p, tj_tensor *const *params, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        tj_tensor *g = tj_program_grad(p, tj_tensor_name(params[i]));
        if (!g) fail_msg("%s has no gradient: %s", tj_tensor_name(params[i]), tj_last_error());
        tt_ref r = tt_ref_of(g);
        for (int64_t k = 0; k < r.numel; k++) m = fmax(m, fabs(r.v[k]));
        tt_ref_free(&r);
        tj_release(g);
    }
    return m;
}

/* One forward and backward on each device: the losses agree, the backward
 * program's saved values and every value it makes are on cuda:0, and every
 * parameter's gradient is on cuda:0 and equals the CPU's. */
static void check_gradients(side *cpu, side *dev) {
    tj_tensor *lc, *ld;
    if (tj_run(cpu->program, cpu->in, &lc) || tj_backward(cpu->program, NULL, NULL))
        fail_msg("CPU forward and backward: %s", tj_last_error());
    if (tj_run(dev->program, dev->in, &ld)) fail_msg("cuda:0 forward: %s", tj_last_error());
    int n_saved = 0;
    int64_t saved_bytes = 0;
    assert_int_equal(tj_program_saved(dev->program, &n_saved, &saved_bytes), TJ_OK);
    assert_true(n_saved > 0 && saved_bytes > 0);
    const tj_graph *bwd = tj_program_backward_graph(dev->program);
    assert_non_null(bwd);
    assert_graph_on_cuda0(bwd, "the backward graph"); /* its inputs: output gradients, then saved values */
    if (tj_backward(dev->program, NULL, NULL)) fail_msg("cuda:0 backward: %s", tj_last_error());
    assert_int_equal(tj_tensor_device(ld).type, TJ_CUDA);
    tt_cuda_assert_same("the loss", lc, ld, LOSS_RTOL, 0);
    tj_release(lc);
    tj_release(ld);
    tj_tensor *ps[MAX_PARAMS];
    int n = cpu->task.model->parameters(cpu->task.params, ps, MAX_PARAMS);
    double atol = GRAD_ATOL * largest_gradient(cpu->program, ps, n);
    for (int i = 0; i < n; i++) {
        const char *name = tj_tensor_name(ps[i]);
        tt_context("%s: the gradient of %s", cpu->task.model->name, name);
        tj_tensor *gc = tj_program_grad(cpu->program, name), *gd = tj_program_grad(dev->program, name);
        if (!gc || !gd) fail_msg("%s has no gradient: %s", name, tj_last_error());
        assert_int_equal(tj_tensor_device(gd).type, TJ_CUDA);
        assert_int_equal(tj_tensor_device(gd).index, 0);
        tj_tensor *got = tj_to_device(gd, TJ_DEVICE_CPU);
        tt_ref want = tt_ref_of(gc);
        tt_assert_close_ref(got, &want, GRAD_RTOL, atol);
        tt_ref_free(&want);
        tj_release(got);
        tj_release(gc);
        tj_release(gd);
    }
    tt_context(NULL);
    tj_program_zero_grad(cpu->program);
    tj_program_zero_grad(dev->program);
}

/* SGD_STEPS steps on each device: the losses agree step by step and fall,
 * and so do batch_norm's running statistics at the end. */
static void check_sgd(const training_case *c, side *cpu, side *dev) {
    double first = 0, last = 0;
    for (int step = 0; step < SGD_STEPS; step++) {
        double lc, ld;
        if (tjx_train_step(&cpu->task, cpu->program, cpu->in, c->lr, &lc))
            fail_msg("CPU step %d: %s", step, tj_last_error());
        if (tjx_train_step(&dev->task, dev->program, dev->in, c->lr, &ld))
            fail_msg("cuda:0 step %d: %s", step, tj_last_error());
        if (!(fabs(ld - lc) <= LOSS_RTOL * fabs(lc)))
            fail_msg("%s step %d: loss %.9g on cuda:0, %.9g on the CPU", c->model, step, ld, lc);
        if (step == 0) first = ld;
        last = ld;
    }
    if (!(last < first)) fail_msg("%s: the loss on cuda:0 did not fall: %.9g then %.9g", c->model, first, last);
    const tjx_model *m = cpu->task.model;
    tj_tensor *bc[8], *bd[8];
    int n = m->buffers ? m->buffers(cpu->task.params, bc, 8) : 0;
    if (m->buffers) assert_int_equal(m->buffers(dev->task.params, bd, 8), n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(tj_tensor_device(bd[i]).type, TJ_CUDA);
        tt_cuda_assert_same(tj_tensor_name(bc[i]), bc[i], bd[i], GRAD_RTOL, GRAD_ATOL);
    }
}

static void check_training(const training_case *c) {
    tt_context("model %s", c->model);
    side cpu, dev;
    make_sides(c, 21, &cpu, &dev);
    check_gradients(&cpu, &dev);
    check_sgd(c, &cpu, &dev);
    free_side(&cpu);
    free_side(&dev);
    tt_context(NULL);
    tt_cuda_count_case();
}

static const training_case MLP = {"mlp", "nll", 0.05}, LSTM = {"lstm", "mse", 0.5},
                           CNN = {"cnn", "square", 0.001}, TRANSFORMER = {"transformer", "square", 0.01};

static void mlp(void **state) { (void)state, check_training(&MLP); }
static void lstm(void **state) { (void)state, check_training(&LSTM); }
static void cnn(void **state) { (void)state, check_training(&CNN); }
static void transformer(void **state) { (void)state, check_training(&TRANSFORMER); }

/* ---- double backward ------------------------------------------------------------------
 * Small f64 nets, each traced on cuda:0 and on the CPU. The gradient graph
 * (forward and backward in one) is differentiated again by
 * tt_gradcheck_graph, which checks the second derivatives against finite
 * differences running on cuda:0 (TJIT_TEST_DEVICE=cuda, set by main); the
 * second-order graph is typed on cuda:0 and gives the CPU's values. */

typedef enum net_kind { NET_CONV, NET_BATCH_NORM_TRAIN, NET_BATCH_NORM_EVAL, NET_CONV_BATCH_NORM } net_kind;

/* Inputs: x [2, 4, 3, 3], conv weight [4, 2, 2, 2] and bias [4], batch_norm
 * weight and bias [4], running mean and variance [4]; the output is the mean
 * of tanh of the result, squared, so that no second derivative vanishes.
 * Sizes are tiny: finite differences run the gradient graph twice per
 * element. */
static tj_status net(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in, (void)n_out;
    net_kind kind = *(const net_kind *)ctx;
    static const int64_t two = 2, one = 1;
    tj_scope_begin();
    tj_tensor *h = in[0];
    if (kind == NET_CONV || kind == NET_CONV_BATCH_NORM) /* stride 2, padding 1, 2 groups */
        h = tj_conv2d(h, in[1], in[2], &two, 1, &one, 1, &one, 1, 2);
    if (kind != NET_CONV) {
        bool train = kind != NET_BATCH_NORM_EVAL;
        h = tj_batch_norm(h, in[3], in[4], train ? NULL : in[5], train ? NULL : in[6], train, 0.1, 1e-5);
    }
    tj_tensor *y = tj_tanh(h);
    out[0] = tj_keep(tj_mean(tj_mul(y, y), NULL, 0, false));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

enum { NET_INPUTS = 7 };

static void make_net_inputs(tj_generator *g, tj_tensor **in) {
    in[0] = tt_random(g, (const int64_t[]){2, 4, 3, 3}, 4, TJ_F64, -1.5, 1.5);
    in[1] = tt_random(g, (const int64_t[]){4, 2, 2, 2}, 4, TJ_F64, -0.5, 0.5);
    in[2] = tt_random(g, (const int64_t[]){4}, 1, TJ_F64, -0.5, 0.5);
    in[3] = tt_random(g, (const int64_t[]){4}, 1, TJ_F64, 0.5, 1.5);
    in[4] = tt_random(g, (const int64_t[]){4}, 1, TJ_F64, -0.5, 0.5);
    in[5] = tt_random(g, (const int64_t[]){4}, 1, TJ_F64, -0.5, 0.5);
    in[6] = tt_random(g, (const int64_t[]){4}, 1, TJ_F64, 0.5, 1.5);
}

/* The net's gradient graph, traced on the given copies of the inputs;
 * differentiable inputs: x and the trained parameters it uses. */
static tj_graph *net_grad_graph(net_kind *kind, tj_tensor *const *in, bool *wrt) {
    tj_graph *fwd = tj_trace(net, kind, in, NET_INPUTS, 1, NULL);
    if (!fwd) fail_msg("tracing: %s", tj_last_error());
    bool conv = *kind == NET_CONV || *kind == NET_CONV_BATCH_NORM, bn = *kind != NET_CONV;
    bool w[NET_INPUTS] = {true, conv, conv, bn, bn, false, false};
    memcpy(wrt, w, sizeof w);
    tj_graph *grad = tj_grad_graph(fwd, wrt);
    if (!grad) fail_msg("tj_grad_graph: %s", tj_last_error());
    tj_graph_free(fwd);
    return grad;
}

/* The second-order graph's outputs on the inputs in (host tensors: the
 * gradient graph's, then a gradient for each of its outputs), run where it
 * was traced; host tensors in out. */
static void run_second_order(const tj_graph *grad, const bool *wrt2, tj_tensor *const *in, tj_tensor **out) {
    tj_graph *second = tj_grad_graph(grad, wrt2);
    if (!second) fail_msg("tj_grad_graph of the gradient graph: %s", tj_last_error());
    if (tj_value_type(tj_graph_input(grad, 0))->device_type == TJ_CUDA)
        assert_graph_on_cuda0(second, "the second-order graph");
    tj_program *p = tj_compile(second, NULL);
    if (!p) fail_msg("compile: %s", tj_last_error());
    if (tt_gradcheck_run(p, in, out)) fail_msg("second order: %s", tj_last_error());
    tj_program_free(p);
    tj_graph_free(second);
}

static void check_double_backward(net_kind kind, const char *label) {
    tt_context("%s", label);
    tj_generator *g = tj_generator_new(31 + kind);
    tj_tensor *in[NET_INPUTS + 1], *dev_in[NET_INPUTS];
    make_net_inputs(g, in);
    for (int i = 0; i < NET_INPUTS; i++) assert_non_null(dev_in[i] = tj_to_device(in[i], TT_CUDA0));
    bool wrt[NET_INPUTS], wrt2[NET_INPUTS + 1];
    tj_graph *grad_dev = net_grad_graph(&kind, dev_in, wrt);
    tj_graph *grad_cpu = net_grad_graph(&kind, in, wrt);
    assert_graph_on_cuda0(grad_dev, "the gradient graph");
    in[NET_INPUTS] = tt_random(g, NULL, 0, TJ_F64, 0.5, 1.5); /* the loss's gradient */
    memcpy(wrt2, wrt, sizeof wrt);
    wrt2[NET_INPUTS] = true;
    tt_gradcheck_graph(grad_dev, in, wrt2, 1e-5, 1e-4, label); /* finite differences on cuda:0 */
    /* the same second derivatives on both devices, of <gradients, v> */
    tj_tensor *all[2 * NET_INPUTS + 1], *second_cpu[NET_INPUTS + 1], *second_dev[NET_INPUTS + 1];
    int n_all = NET_INPUTS + 1;
    memcpy(all, in, sizeof(tj_tensor *) * (size_t)n_all);
    for (int o = 0; o < tj_graph_num_outputs(grad_dev); o++) {
        const tj_type *t = tj_value_type(tj_graph_output(grad_dev, o));
        all[n_all++] = tt_random(g, t->sizes, t->ndim, TJ_F64, -1, 1);
    }
    run_second_order(grad_cpu, wrt2, all, second_cpu);
    run_second_order(grad_dev, wrt2, all, second_dev);
    for (int i = 0, k = 0; i <= NET_INPUTS; i++) {
        if (!wrt2[i]) continue;
        tt_ref want = tt_ref_of(second_cpu[k]);
        tt_context("%s: second derivative by input %d", label, i);
        tt_assert_close_ref(second_dev[k], &want, F64_RTOL, F64_ATOL);
        tt_ref_free(&want);
        tj_release(second_cpu[k]);
        tj_release(second_dev[k++]);
    }
    tj_graph_free(grad_dev);
    tj_graph_free(grad_cpu);
    for (int i = 0; i < NET_INPUTS; i++) tj_release(dev_in[i]);
    for (int i = 0; i < n_all; i++) tj_release(all[i]); /* in[] among them */
    tj_generator_free(g);
    tt_context(NULL);
    tt_cuda_count_case();
}

static void double_backward_conv2d(void **state) {
    (void)state;
    check_double_backward(NET_CONV, "conv2d, stride 2, padding 1, 2 groups");
}
static void double_backward_batch_norm(void **state) {
    (void)state;
    check_double_backward(NET_BATCH_NORM_TRAIN, "batch_norm, training");
    check_double_backward(NET_BATCH_NORM_EVAL, "batch_norm, eval");
}
static void double_backward_conv2d_batch_norm(void **state) {
    (void)state;
    check_double_backward(NET_CONV_BATCH_NORM, "conv2d -> batch_norm (training)");
}

int main(void) {
    /* the gradient checks' graphs run on cuda:0 (tests/support/gradcheck.h) */
    setenv("TJIT_TEST_DEVICE", "cuda", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp),
        cmocka_unit_test(lstm),
        cmocka_unit_test(cnn),
        cmocka_unit_test(transformer),
        cmocka_unit_test(double_backward_conv2d),
        cmocka_unit_test(double_backward_batch_norm),
        cmocka_unit_test(double_backward_conv2d_batch_norm),
    };
    return TT_CUDA_RUN(tests);
}
