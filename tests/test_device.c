/* test_device.c — dispatch by device, with no GPU: a stand-in backend for
 * TJ_CUDA whose memory is host memory (so the CPU kernels can serve as its
 * kernels) checks what core/ does for any device: kernels picked by the inputs'
 * device, outputs allocated there, the mixed-device error, copies between
 * devices, printing, reads of single elements, and replay of a fused program
 * on device inputs (fusion groups run op by op where no fusion backend
 * compiles for the device). */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"
#include "tjit/runtime.h"

enum { FAKE_DEVICES = 2 };
static long live_blocks, copies;

static int fake_count(void) { return FAKE_DEVICES; }
static void *fake_alloc(int index, size_t nbytes) {
    assert_true(index >= 0 && index < FAKE_DEVICES);
    live_blocks++;
    return malloc(nbytes ? nbytes : 1);
}
static void fake_release(int index, void *data) {
    (void)index;
    live_blocks--;
    free(data);
}
static tj_status fake_copy(void *dst, tj_device dd, const void *src, tj_device sd, size_t n) {
    (void)dd, (void)sd;
    copies++;
    memcpy(dst, src, n);
    return TJ_OK;
}
static tj_status fake_sync(int index) {
    (void)index;
    return TJ_OK;
}

static int install_fake_device(void **state) {
    (void)state;
    tjc_device_backend fake = {.type = TJ_CUDA, .name = "cuda", .device_count = fake_count,
                               .alloc = fake_alloc, .release = fake_release, .copy = fake_copy,
                               .synchronize = fake_sync};
    const tjc_device_backend *cpu = tjc_device_backend_of(TJ_CPU);
    memcpy(fake.kernels, cpu->kernels, sizeof fake.kernels);
    fake.kernels[TJ_OP_tanh] = NULL; /* an op this device cannot run */
    fake.kernels[TJ_OP_tanh_] = NULL;
    tjc_register_device_backend(&fake);
    return 0;
}

static const tj_device CUDA0 = {TJ_CUDA, 0}, CUDA1 = {TJ_CUDA, 1};

static void test_counts_and_names(void **state) {
    (void)state;
    assert_true(tj_cuda_is_available());
    assert_int_equal(tj_cuda_device_count(), FAKE_DEVICES);
    assert_int_equal(tj_device_count(TJ_CPU), 1);
    assert_int_equal(tj_cuda_synchronize(), TJ_OK);
    char buf[32];
    assert_string_equal(tj_device_to_string(CUDA1, buf, sizeof buf), "cuda:1");
    tj_device d;
    assert_int_equal(tj_device_parse("cuda:1", &d), TJ_OK);
    assert_true(d.type == TJ_CUDA && d.index == 1);
    assert_int_equal(tj_device_parse("cuda", &d), TJ_OK);
    assert_true(d.type == TJ_CUDA && d.index == 0);
    assert_int_equal(tj_device_parse("cpu", &d), TJ_OK);
    assert_true(d.type == TJ_CPU);
    assert_int_equal(tj_device_parse("cuda:x", &d), TJ_ERR_ARG);
    tt_assert_error("'cuda:x' is not a device");
    assert_int_equal(tj_device_parse("gpu", &d), TJ_ERR_ARG);
}

static void test_round_trip_and_ops_stay_on_device(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(1);
    int64_t sz[2] = {3, 5};
    tj_tensor *x = tt_random(g, sz, 2, TJ_F32, -2, 2);
    tj_tensor *xt = tj_transpose(x, 0, 1); /* strided: made contiguous before the copy */
    tj_tensor *d = tj_to_device(xt, CUDA1);
    assert_non_null(d);
    assert_int_equal(tj_tensor_device(d).type, TJ_CUDA);
    assert_int_equal(tj_tensor_device(d).index, 1);
    assert_true(tj_is_contiguous(d));
    tj_tensor *y = tj_relu(tj_add(d, d, 1.0));
    assert_non_null(y);
    assert_int_equal(tj_tensor_device(y).index, 1);
    tj_tensor *back = tj_to_device(y, TJ_DEVICE_CPU);
    tt_ref ref = tt_ref_of(tj_relu(tj_add(xt, xt, 1.0)));
    tt_assert_close_ref(back, &ref, 0, 0);
    tt_ref_free(&ref);
    assert_ptr_equal(tj_to_device(d, CUDA1), d); /* already there: a new reference */
    int64_t at[2] = {4, 2};
    assert_true(tj_get(y, at) == tj_get(back, at));
    double v;
    tj_tensor *s = tj_sum(y, NULL, 0, false);
    assert_int_equal(tj_item(s, &v), TJ_OK);
    assert_true(v >= 0);
    tj_generator_free(g);
}

static void test_mixed_devices_are_an_error(void **state) {
    (void)state;
    int64_t sz[1] = {4};
    tj_tensor *a = tj_ones_on(sz, 1, TJ_F32, CUDA0);
    tj_tensor *b = tj_ones(sz, 1, TJ_F32);
    assert_null(tj_add(a, b, 1.0));
    tt_assert_error("aten::add: expected all tensors on one device, got cuda:0 and cpu");
    assert_int_equal(tj_last_status(), TJ_ERR_DEVICE);
    tj_clear_error();
    tj_tensor *c = tj_ones_on(sz, 1, TJ_F32, CUDA1);
    assert_null(tj_mul(a, c));
    tt_assert_error("aten::mul: expected all tensors on one device, got cuda:0 and cuda:1");
}

static void test_missing_kernel_and_device(void **state) {
    (void)state;
    int64_t sz[1] = {4};
    tj_tensor *a = tj_zeros_on(sz, 1, TJ_F32, CUDA0);
    assert_null(tj_tanh(a));
    tt_assert_error("aten::tanh: no kernel for cuda:0");
    assert_int_equal(tj_last_status(), TJ_ERR_UNSUPPORTED);
    tj_clear_error();
    assert_null(tj_empty_on(sz, 1, TJ_F32, (tj_device){TJ_CUDA, 5}));
    tt_assert_error("tj_empty_on: device cuda:5 does not exist (2 cuda devices)");
}

static void test_copy_across_devices(void **state) {
    (void)state;
    int64_t sz[2] = {2, 3};
    double vals[6] = {1, 2, 3, 4, 5, 6};
    tj_tensor *host = tj_from_array((float[]){1, 2, 3, 4, 5, 6}, sz, 2, TJ_F32);
    tj_tensor *dev = tj_zeros_on(sz, 2, TJ_F32, CUDA0);
    assert_non_null(tj_copy_(dev, host));
    assert_int_equal(tj_tensor_device(dev).type, TJ_CUDA);
    tt_assert_values(tj_to_device(dev, TJ_DEVICE_CPU), vals, 6, 0);
    tj_tensor *back = tj_zeros(sz, 2, TJ_F64);
    assert_non_null(tj_copy_(back, dev)); /* and a dtype change on the way */
    tt_assert_values(back, vals, 6, 0);
}

static void test_printing_copies_to_host(void **state) {
    (void)state;
    int64_t sz[1] = {3};
    tj_tensor *a = tj_full_on(sz, 1, 2.5, TJ_F32, CUDA1);
    char *s = tj_tensor_to_string(a);
    assert_string_equal(s, "tensor([2.5000, 2.5000, 2.5000], device='cuda:1')");
    free(s);
}

static tj_status pointwise_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                 int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_tensor **parts = calloc(2, sizeof *parts);
    if (tj_chunk(in[0], 2, 1, parts, 2) != 2) return tj_last_status();
    tj_tensor *h = tj_mul(tj_sigmoid(parts[0]), tj_relu(tj_add(parts[1], in[1], 0.5)));
    free(parts);
    out[0] = tj_add_scalar(tj_mul(h, h), 1.0, 1.0);
    return out[0] ? TJ_OK : tj_last_status();
}

static void test_fused_replay_on_device_inputs(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(7);
    int64_t xs[2] = {4, 6}, bs[2] = {4, 3};
    tj_tensor *x = tt_random(g, xs, 2, TJ_F32, -1, 1), *b = tt_random(g, bs, 2, TJ_F32, -1, 1);
    tj_tensor *dev_in[2] = {tj_to_device(x, CUDA0), tj_to_device(b, CUDA0)};
    tj_graph *graph = tj_trace(pointwise_model, NULL, dev_in, 2, 1, NULL);
    assert_non_null(graph);
    char *text = tj_graph_to_string(graph, TJ_PRINT_CANONICAL);
    assert_non_null(strstr(text, "device=cuda:0"));
    free(text);
    tj_program *p = tj_compile(graph, NULL);
    assert_non_null(p);
    text = tj_program_code_to_string(p);
    assert_non_null(strstr(text, "fused")); /* the group runs op by op on this device */
    free(text);
    tj_tensor *out[1];
    assert_int_equal(tj_run(p, dev_in, out), TJ_OK);
    assert_int_equal(tj_tensor_device(out[0]).type, TJ_CUDA);
    tj_tensor *cpu_in[2] = {x, b}, *expected[1];
    assert_int_equal(pointwise_model(NULL, cpu_in, 2, expected, 1), TJ_OK);
    tt_ref ref = tt_ref_of(expected[0]);
    tt_assert_close_ref(tj_to_device(out[0], TJ_DEVICE_CPU), &ref, 0, 0);
    tt_ref_free(&ref);
    /* a host input where the trace had a device one names the device */
    tj_tensor *mixed[2] = {x, dev_in[1]};
    assert_int_not_equal(tj_run(p, mixed, out), TJ_OK);
    tt_assert_error("on another device");
    tj_program_free(p);
    tj_graph_free(graph);
    tj_generator_free(g);
}

static void test_move_in_place(void **state) {
    (void)state;
    int64_t sz[2] = {2, 3};
    tj_tensor *w = tj_arange(0, 6, 1, TJ_F32);
    tj_tensor *m = tj_view(w, sz, 2);
    tj_tensor *view = tj_t(m);
    assert_int_equal(tj_move_to_device(m, CUDA1), TJ_OK);
    assert_int_equal(tj_tensor_device(m).type, TJ_CUDA);
    assert_int_equal(tj_tensor_device(view).type, TJ_CPU); /* views keep the old data */
    double vals[6] = {0, 1, 2, 3, 4, 5};
    tt_assert_values(tj_to_device(m, TJ_DEVICE_CPU), vals, 6, 0);
    assert_int_equal(tj_move_to_device(m, TJ_DEVICE_CPU), TJ_OK);
    assert_int_equal(tj_tensor_device(m).type, TJ_CPU);
    assert_int_equal(tj_move_to_device(NULL, CUDA0), TJ_ERR_ARG);
}

static void test_no_device_memory_leaks(void **state) {
    (void)state;
    assert_int_equal(live_blocks, 0); /* every scope of the tests above has ended */
    assert_true(copies > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(test_counts_and_names),
        TT_SCOPED_TEST(test_round_trip_and_ops_stay_on_device),
        TT_SCOPED_TEST(test_mixed_devices_are_an_error),
        TT_SCOPED_TEST(test_missing_kernel_and_device),
        TT_SCOPED_TEST(test_copy_across_devices),
        TT_SCOPED_TEST(test_printing_copies_to_host),
        TT_SCOPED_TEST(test_fused_replay_on_device_inputs),
        TT_SCOPED_TEST(test_move_in_place),
        cmocka_unit_test(test_no_device_memory_leaks),
    };
    return cmocka_run_group_tests(tests, install_fake_device, NULL);
}
