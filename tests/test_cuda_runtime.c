/* test_cuda_runtime.c — the CUDA backend's device layer: devices, copies in
 * every direction, printing, the caching allocator behind tensors (no driver
 * allocation in a steady state, empty_cache), mixed-device errors, and the
 * errors a bad module gives. Runs on the host harness in `make test` (two
 * devices) and on a GPU in `make test-gpu`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "tests/support/cuda_cases.h"

static const tj_device CUDA0 = {TJ_CUDA, 0};

static void devices_and_copies(void **state) {
    (void)state;
    assert_true(tj_cuda_device_count() >= 1);
    tj_generator *g = tj_generator_new(3);
    int64_t sz[3] = {4, 5, 6};
    tj_tensor *x = tt_random(g, sz, 3, TJ_F64, -3, 3);
    tj_tensor *xs = tj_permute(x, (int64_t[]){2, 0, 1}, 3); /* strided: made contiguous */
    tj_tensor *d = tj_to_device(xs, CUDA0);
    assert_non_null(d);
    int last = tj_cuda_device_count() - 1;
    tj_tensor *d2 = tj_to_device(d, (tj_device){TJ_CUDA, last}); /* device to device */
    assert_non_null(d2);
    assert_int_equal(tj_tensor_device(d2).index, last);
    tj_tensor *back = tj_to_device(d2, TJ_DEVICE_CPU);
    tt_ref r = tt_ref_of(xs);
    tt_assert_close_ref(back, &r, 0, 0);
    tt_ref_free(&r);
    int64_t at[3] = {5, 3, 4};
    assert_true(tj_get(d, at) == tj_get(xs, at));
    int64_t one[1] = {1};
    tj_tensor *z = tj_zeros_on(one, 1, TJ_I64, CUDA0), *o = tj_ones_on(one, 1, TJ_BOOL, CUDA0);
    double v;
    assert_int_equal(tj_item(z, &v), TJ_OK);
    assert_true(v == 0);
    assert_int_equal(tj_item(o, &v), TJ_OK);
    assert_true(v == 1);
    int64_t empty[2] = {0, 3};
    tj_tensor *e = tj_empty_on(empty, 2, TJ_F32, CUDA0);
    assert_non_null(e);
    assert_int_equal(tj_numel(tj_to_device(e, TJ_DEVICE_CPU)), 0);
    assert_int_equal(tj_cuda_synchronize(), TJ_OK);
    tj_generator_free(g);
}

static void printing(void **state) {
    (void)state;
    tj_tensor *a = tj_full_on((int64_t[]){2}, 1, -1.5, TJ_F32, CUDA0);
    char *s = tj_tensor_to_string(a);
    assert_string_equal(s, "tensor([-1.5000, -1.5000], device='cuda:0')");
    free(s);
}

static void mixed_devices(void **state) {
    (void)state;
    int64_t sz[1] = {3};
    assert_null(tj_mul(tj_ones_on(sz, 1, TJ_F32, CUDA0), tj_ones(sz, 1, TJ_F32)));
    tt_assert_error("aten::mul: expected all tensors on one device, got cuda:0 and cpu");
    tj_clear_error();
    assert_null(tj_empty_on(sz, 1, TJ_F32, (tj_device){TJ_CUDA, 99}));
    tt_assert_error("cuda:99 does not exist");
}

static void allocator_steady_state(void **state) {
    (void)state;
    int64_t sz[2] = {64, 257};
    tj_tensor *x = tj_full_on(sz, 2, 0.5, TJ_F32, CUDA0);
    tj_memory_stats before, after;
    for (int warm = 0; warm < 2; warm++) {
        tj_scope_begin();
        assert_non_null(tj_mul(tj_add(x, x, 1.0), x));
        tj_scope_end();
    }
    assert_int_equal(tj_cuda_memory_stats(0, &before), TJ_OK);
    for (int i = 0; i < 50; i++) {
        tj_scope_begin();
        assert_non_null(tj_mul(tj_add(x, x, 1.0), x));
        tj_scope_end();
    }
    assert_int_equal(tj_cuda_memory_stats(0, &after), TJ_OK);
    assert_true(after.driver_allocs == before.driver_allocs);
    assert_true(after.driver_frees == before.driver_frees);
    assert_true(after.cache_hits > before.cache_hits);
    assert_true(after.allocated >= (size_t)64 * 257 * 4);
    assert_true(after.peak_allocated >= after.allocated);
    assert_true(after.reserved >= after.allocated);
    assert_int_equal(tj_cuda_memory_stats(-1, &after), TJ_ERR_DEVICE);
    assert_int_equal(tj_cuda_memory_stats(0, NULL), TJ_ERR_ARG);
}

static void empty_cache_returns_unused_memory(void **state) {
    (void)state;
    tj_memory_stats s;
    tj_scope_begin();
    assert_non_null(tj_zeros_on((int64_t[]){1 << 20}, 1, TJ_F32, CUDA0));
    tj_scope_end();
    assert_int_equal(tj_cuda_empty_cache(), TJ_OK);
    assert_int_equal(tj_cuda_memory_stats(0, &s), TJ_OK);
    assert_true(s.reserved == s.allocated || s.reserved < ((size_t)4 << 20));
    int64_t n = 1 << 20;
    assert_non_null(tj_zeros_on(&n, 1, TJ_F32, CUDA0)); /* the driver is asked again */
}

/* Every row of the op table has a CUDA kernel (in-place forms through their
 * base op's). */
static void every_op_has_a_kernel(void **state) {
    (void)state;
    const tjc_device_backend *b = tjc_device_backend_of(TJ_CUDA);
    assert_non_null(b);
    int missing = 0;
    for (int id = 0; id < tj_op_count(); id++)
        if (!b->kernels[id]) {
            print_error("no CUDA kernel for %s\n", tj_op_name(tj_op_at(id)));
            missing++;
        }
    assert_int_equal(missing, 0);
    assert_true(tj_op_count() > 150);
}

static void bad_module_is_an_error(void **state) {
    (void)state;
    void *args[1] = {NULL};
    assert_int_not_equal(tjcu_launch_source("test", CUDA0, "broken", "this is not CUDA C", "k",
                                            (tjcu_dim3){1, 1, 1}, (tjcu_dim3){1, 1, 1}, 0, args),
                         TJ_OK);
    tt_assert_error("test: compiling the kernels of 'broken' for cuda:0");
    tj_clear_error();
    assert_int_not_equal(tjcu_launch("test", CUDA0, "no_such_source", "k", (tjcu_dim3){1, 1, 1},
                                     (tjcu_dim3){1, 1, 1}, 0, args),
                         TJ_OK);
    tt_assert_error("no kernel source 'no_such_source'");
}

int main(void) {
    setenv("TJIT_CUDA_HOST_DEVICES", "2", 0); /* the harness shows two devices */
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(devices_and_copies), TT_SCOPED_TEST(printing),
        TT_SCOPED_TEST(mixed_devices),      TT_SCOPED_TEST(allocator_steady_state),
        TT_SCOPED_TEST(empty_cache_returns_unused_memory), TT_SCOPED_TEST(bad_module_is_an_error),
        TT_SCOPED_TEST(every_op_has_a_kernel),
    };
    return TT_CUDA_RUN(tests);
}
