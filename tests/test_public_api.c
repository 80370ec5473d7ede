/* test_public_api.c — every public function given NULL or invalid arguments
 * fails cleanly: a failure status, NULL or its documented failure value, and
 * a message in tj_last_error(), without a crash. The table below covers
 * every function of the headers in include/tjit/ (the checks of ir.h,
 * passes.h and onnx.h live in tests/support/api_checks_ir.c);
 * test_table_is_complete parses those headers and fails naming any function
 * the table lacks, so a new function cannot be forgotten. Functions with no invalid input (no arguments, any
 * value allowed, or a free function that ignores NULL as documented) are in
 * the table too, called on their edge values, with the reason. The generated
 * tj_<op> functions all go through tj_invoke, which has its own entry. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>

#include "tests/support/api_checks.h"
#include "tests/support/runtime_testing.h"
#include "tjit/distributed.h"

/* The expectations (FAILS_*, WORKS) are in tests/support/api_checks.h. */

/* ---- fixtures ---------------------------------------------------------------------------- */

tt_api_fixture tt_api; /* the objects the checks are given bad company with */
static tj_generator *GEN;
static const tj_device BAD_DEVICE = {(tj_device_type)7, 0};
static const tj_device MISSING_CUDA = {TJ_CUDA, 99};

static tj_status identity_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    out[0] = tj_relu(in[0]);
    return out[0] ? TJ_OK : tj_last_status();
}

static int setup(void **state) {
    (void)state;
    T = tj_zeros(SIZES, 2, TJ_F32);
    G = tj_graph_parse("graph(%x : Float(2, 3)):\n"
                       "  %y : Float(2, 3) = aten::relu(%x)\n"
                       "  return (%y)\n", NULL);
    GEN = tj_generator_new(1);
    if (!T || !G || !GEN) return -1;
    B = tj_graph_block(G);
    N = tj_block_first(B);
    V = tj_graph_input(G, 0);
    P = tj_compile(G, NULL);
    return P ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tj_program_free(P);
    tj_graph_free(G);
    tj_release(T);
    tj_generator_free(GEN);
    return 0;
}

/* ---- tjit.h ------------------------------------------------------------------------------ */

static void c_errors(void) {
    WORKS(tj_last_error());
    WORKS(tj_last_status());
    WORKS(tj_clear_error());
    tj_clear_error();
    assert_string_equal(tj_status_name((tj_status)99), "unknown status");
    expect_error("tj_status_name(99)", __FILE__, __LINE__);
}

static void c_dtypes(void) {
    FAILS_SILENTLY(assert_string_equal(tj_dtype_name((tj_dtype)9), "invalid"));
    FAILS_WITH(tj_dtype_size((tj_dtype)9), 0);
    FAILS_WITH(tj_dtype_size((tj_dtype)-1), 0);
    WORKS(assert_false(tj_dtype_is_float((tj_dtype)9)));
    WORKS(assert_false(tj_is_none(1.0)));
}

/* Scalars keep their kind, and tj_scalar_of picks it from the C type. */
static void c_scalars(void) {
    WORKS(assert_int_equal(tj_scalar_int(-3).kind, TJ_SCALAR_INT));
    WORKS(assert_true(tj_scalar_int(-3).f == -3.0 && tj_scalar_int(-3).i == -3));
    WORKS(assert_int_equal(tj_scalar_float(2.0).kind, TJ_SCALAR_FLOAT));
    WORKS(assert_true(tj_scalar_bool(true).i == 1 && tj_scalar_bool(true).kind == TJ_SCALAR_BOOL));
    WORKS(assert_true(tj_is_none(tj_scalar_none().f)));
    WORKS(assert_int_equal(tj_scalar_same(tj_scalar_int(4)).i, 4));
    WORKS(assert_int_equal(tj_scalar_of(2).kind, TJ_SCALAR_INT));
    WORKS(assert_int_equal(tj_scalar_of((int64_t)2).kind, TJ_SCALAR_INT));
    WORKS(assert_int_equal(tj_scalar_of(2.0).kind, TJ_SCALAR_FLOAT));
    WORKS(assert_int_equal(tj_scalar_of(2.0f).kind, TJ_SCALAR_FLOAT));
    WORKS(assert_int_equal(tj_scalar_of((bool)true).kind, TJ_SCALAR_BOOL));
    WORKS(assert_int_equal(tj_scalar_of(true).kind, TJ_SCALAR_INT)); /* C's true is the int 1 */
    WORKS(assert_int_equal(tj_scalar_of(tj_scalar_int(5)).i, 5));
}

static void c_devices(void) {
    char buf[32];
    tj_device d;
    FAILS_NULL(tj_device_to_string(TJ_DEVICE_CPU, NULL, 8));
    FAILS_NULL(tj_device_to_string(TJ_DEVICE_CPU, buf, 0));
    FAILS_NULL(tj_device_to_string(BAD_DEVICE, buf, sizeof buf));
    FAILS_STATUS(tj_device_parse(NULL, &d));
    FAILS_STATUS(tj_device_parse("cpu", NULL));
    FAILS_STATUS(tj_device_parse("gpu:0", &d));
    FAILS_STATUS(tj_device_parse("cuda:-1", &d));
    FAILS_WITH(tj_device_count((tj_device_type)7), -1);
    WORKS(tj_cuda_is_available());
    WORKS(tj_cuda_device_count());
    if (!tj_cuda_is_available()) FAILS_STATUS(tj_cuda_synchronize());
    tj_memory_stats stats;
    FAILS_STATUS(tj_cuda_memory_stats(0, NULL));
    FAILS_STATUS(tj_cuda_memory_stats(-1, &stats));
    FAILS_STATUS(tj_cuda_memory_stats(99, &stats));
    WORKS(tj_cuda_empty_cache());
    bool tf32 = tj_cuda_allow_tf32(), bench = tj_cuda_cudnn_benchmark();
    WORKS(tj_cuda_set_allow_tf32(tf32));
    WORKS(tj_cuda_set_cudnn_benchmark(bench));
}

static void c_creation(void) {
    const int64_t neg[1] = {-2};
    WORKS(assert_null(tj_retain(NULL))); /* NULL is ignored, as documented */
    WORKS(tj_release(NULL));
    FAILS_NULL(tj_empty(SIZES, -1, TJ_F32));
    FAILS_NULL(tj_empty(NULL, 2, TJ_F32));
    FAILS_NULL(tj_empty(SIZES, 2, (tj_dtype)9));
    FAILS_NULL(tj_empty(neg, 1, TJ_F32));
    FAILS_NULL(tj_zeros(SIZES, TJ_MAX_DIMS + 1, TJ_F32));
    FAILS_NULL(tj_ones(NULL, 1, TJ_F64));
    FAILS_NULL(tj_full(SIZES, 2, 1e30, TJ_I64));
    FAILS_NULL(tj_full(SIZES, 2, 1.0, (tj_dtype)-3));
    FAILS_NULL(tj_scalar_tensor(1.0, (tj_dtype)9));
    FAILS_NULL(tj_arange(0, 1, 0, TJ_F32));
    FAILS_NULL(tj_arange(0, 1, -1, TJ_F32));
    FAILS_NULL(tj_arange(0, NAN, 1, TJ_F32));
    FAILS_NULL(tj_arange(0, 4, 1, TJ_BOOL));
    FAILS_NULL(tj_from_array(NULL, SIZES, 2, TJ_F32));
    FAILS_NULL(tj_from_array((float[6]){0}, SIZES, 2, (tj_dtype)9));
    FAILS_NULL(tj_empty_on(SIZES, 2, TJ_F32, BAD_DEVICE));
    FAILS_NULL(tj_empty_on(SIZES, 2, TJ_F32, MISSING_CUDA));
    FAILS_NULL(tj_zeros_on(SIZES, -1, TJ_F32, TJ_DEVICE_CPU));
    FAILS_NULL(tj_ones_on(SIZES, 2, (tj_dtype)9, TJ_DEVICE_CPU));
    FAILS_NULL(tj_full_on(SIZES, 2, 1.0, TJ_F32, MISSING_CUDA));
    FAILS_NULL(tj_to_device(NULL, TJ_DEVICE_CPU));
    FAILS_NULL(tj_to_device(T, BAD_DEVICE));
    FAILS_NULL(tj_to_device(T, MISSING_CUDA));
    FAILS_STATUS(tj_move_to_device(NULL, TJ_DEVICE_CPU));
    FAILS_STATUS(tj_move_to_device(T, BAD_DEVICE));
    FAILS_STATUS(tj_move_to_device(T, MISSING_CUDA));
}

static void c_accessors(void) {
    double v;
    FAILS_WITH(tj_ndim(NULL), -1);
    FAILS_NULL(tj_sizes(NULL));
    FAILS_NULL(tj_strides(NULL));
    FAILS_WITH(tj_size(NULL, 0), -1);
    FAILS_WITH(tj_size(T, 2), -1);
    FAILS_WITH(tj_size(T, -3), -1);
    FAILS_WITH(tj_numel(NULL), -1);
    FAILS_WITH(tj_storage_offset(NULL), -1);
    FAILS_WITH(tj_tensor_dtype(NULL), TJ_NUM_DTYPES);
    FAILS_WITH(tj_tensor_device(NULL).type, TJ_NUM_DEVICE_TYPES);
    FAILS_WITH(tj_is_contiguous(NULL), false);
    FAILS_WITH(tj_shares_storage(NULL, T), false);
    FAILS_WITH(tj_shares_storage(T, NULL), false);
    FAILS_NULL(tj_data(NULL));
    FAILS_STATUS(tj_item(NULL, &v));
    FAILS_STATUS(tj_item(T, &v)); /* six elements */
    char *text = NULL;
    FAILS_SILENTLY(text = tj_tensor_to_string(NULL)); /* "(null)", as printf writes it */
    assert_string_equal(text, "(null)");
    free(text);
    FAILS_STATUS(tj_tensor_set_name(NULL, "x"));
    FAILS_NULL(tj_tensor_name(NULL));
}

static void c_get(void) {
    FAILS_SILENTLY(assert_true(isnan(tj_get(NULL, (int64_t[]){0, 0}))));
    FAILS_SILENTLY(assert_true(isnan(tj_get(T, NULL))));
    FAILS_SILENTLY(assert_true(isnan(tj_get(T, (int64_t[]){2, 0}))));
    FAILS_SILENTLY(assert_true(isnan(tj_get(T, (int64_t[]){0, 3}))));
    FAILS_SILENTLY(assert_true(isnan(tj_get(T, (int64_t[]){-1, 0}))));
    WORKS(assert_true(tj_get(T, (int64_t[]){1, 2}) == 0.0));
}

static void c_get_n(void) {
    FAILS_SILENTLY(assert_true(isnan(tj_get_n(NULL, (int64_t[]){0, 0}, 2))));
    FAILS_SILENTLY(assert_true(isnan(tj_get_n(T, (int64_t[]){0}, 1))));
    FAILS_SILENTLY(assert_true(isnan(tj_get_n(T, (int64_t[]){0, 0, 0}, 3))));
    FAILS_SILENTLY(assert_true(isnan(tj_get_n(T, (int64_t[]){0, 7}, 2))));
    assert_non_null(strstr(tj_last_error(), "index 7 at dim 1"));
    WORKS(assert_true(tj_get_n(T, (int64_t[]){1, 2}, 2) == 0.0));
}

static void c_scopes(void) {
    WORKS(tj_scope_begin());
    WORKS(tj_scope_end());
    FAILS_SILENTLY(tj_scope_end()); /* none open */
    FAILS_NULL(tj_keep(NULL));
}

static void c_random(void) {
    tj_generator *g = NULL;
    WORKS(g = tj_generator_new(UINT64_MAX));
    WORKS(tj_generator_free(g));
    WORKS(tj_generator_free(NULL));
    FAILS_SILENTLY(tj_generator_set_state(NULL, 1, 2));
    FAILS_WITH(tj_generator_seed(NULL), 0);
    FAILS_WITH(tj_generator_offset(NULL), 0);
    FAILS_WITH(tj_generator_reserve(NULL, 4), 0);
    FAILS_NULL(tj_rand(SIZES, 2, TJ_F32, NULL));
    FAILS_NULL(tj_rand(SIZES, 2, TJ_I64, GEN));
    FAILS_NULL(tj_randn(SIZES, -1, TJ_F32, GEN));
    FAILS_NULL(tj_randn(NULL, 2, TJ_F64, GEN));
    FAILS_NULL(tj_bernoulli(SIZES, 2, 1.5, TJ_F32, GEN));
    FAILS_NULL(tj_bernoulli(SIZES, 2, NAN, TJ_F32, GEN));
}

static void c_ops(void) {
    WORKS(assert_true(tj_op_count() > 0));
    FAILS_NULL(tj_op_at(-1));
    FAILS_NULL(tj_op_at(1 << 30));
    FAILS_NULL(tj_op_find(NULL));
    FAILS_NULL(tj_op_find("aten::no_such_op"));
    /* a NULL op is what tj_node_op gives for a prim node: answered, not an error */
    WORKS(assert_int_equal(tj_op_id(NULL), -1));
    WORKS(assert_null(tj_op_name(NULL)));
    WORKS(assert_null(tj_op_schema_text(NULL)));
    WORKS(assert_null(tj_op_schema(NULL)));
    WORKS(assert_int_equal(tj_op_kind_of(NULL), TJ_NUM_KINDS));
    WORKS(assert_null(tj_op_inplace_variant(NULL)));
    FAILS_SILENTLY(assert_string_equal(tj_op_kind_name((tj_op_kind)99), "invalid"));
    /* a chain: the first failure's message is kept */
    tj_clear_error();
    assert_null(tj_op_name(tj_op_find("aten::nope")));
    assert_non_null(strstr(tj_last_error(), "tj_op_find"));
}

static void c_invoke(void) {
    const tj_op_info *relu = tj_op_find("aten::relu"), *add = tj_op_find("aten::add");
    tj_tensor *out[2] = {NULL};
    tj_tensor *none[1] = {NULL}, *one[1] = {T}, *two[2] = {T, T};
    tj_attr alpha = {.f = 1.0};
    FAILS_WITH(tj_invoke(-1, one, 1, NULL, 0, out, 1), -1);
    FAILS_WITH(tj_invoke(tj_op_count(), one, 1, NULL, 0, out, 1), -1);
    FAILS_WITH(tj_invoke(tj_op_id(relu), NULL, 1, NULL, 0, out, 1), -1);
    FAILS_WITH(tj_invoke(tj_op_id(relu), none, 1, NULL, 0, out, 1), -1);
    FAILS_WITH(tj_invoke(tj_op_id(relu), two, 2, NULL, 0, out, 1), -1);
    FAILS_WITH(tj_invoke(tj_op_id(relu), one, 1, NULL, 0, NULL, 1), -1);
    FAILS_WITH(tj_invoke(tj_op_id(add), two, 2, NULL, 1, out, 1), -1);
    FAILS_WITH(tj_invoke(tj_op_id(add), two, 2, &alpha, 0, out, 1), -1);
    assert_null(out[0]);
}

static void c_hooks_threads(void) {
    const tj_record_hook *old = NULL;
    WORKS(old = tj_set_record_hook(NULL)); /* NULL removes the hook: any value is valid */
    WORKS(tj_set_record_hook(old));
    int n = tj_get_num_threads();
    WORKS(tj_get_num_threads());
    FAILS_SILENTLY(tj_set_num_threads(-2));
    assert_int_equal(tj_get_num_threads(), n);
}

/* ---- runtime.h --------------------------------------------------------------------------- */

static void c_trace(void) {
    tj_tensor *in[1] = {T};
    FAILS_NULL(tj_trace(NULL, NULL, in, 1, 1, NULL));
    FAILS_NULL(tj_trace(identity_model, NULL, NULL, 1, 1, NULL));
    FAILS_NULL(tj_trace(identity_model, NULL, in, 1, 0, NULL));
    FAILS_NULL(tj_trace(identity_model, NULL, in, -1, 1, NULL));
}

static void c_graph_meta(void) {
    FAILS_STATUS(tj_graph_bind_input(NULL, 0, T));
    FAILS_STATUS(tj_graph_bind_input(G, 5, T));
    FAILS_STATUS(tj_graph_bind_input(G, -1, T));
    FAILS_NULL(tj_graph_input_binding(NULL, 0));
    FAILS_NULL(tj_graph_input_binding(G, 5));
    WORKS(assert_null(tj_graph_input_binding(G, 0))); /* a plain input */
    FAILS_STATUS(tj_graph_add_warning(NULL, "w"));
    FAILS_STATUS(tj_graph_add_warning(G, NULL));
    FAILS_WITH(tj_graph_num_warnings(NULL), -1);
    FAILS_NULL(tj_graph_warning(NULL, 0));
    FAILS_NULL(tj_graph_warning(G, 0));
}

static void c_programs(void) {
    tj_compile_options bad_passes = {.passes = "dce,no_such_pass"};
    tj_tensor *in[1] = {T}, *out[1] = {NULL};
    tj_plan_stats stats;
    FAILS_NULL(tj_compile(NULL, NULL));
    FAILS_NULL(tj_compile(G, &bad_passes));
    FAILS_STATUS(tj_run(NULL, in, out));
    FAILS_STATUS(tj_run(P, NULL, out));
    FAILS_STATUS(tj_run(P, in, NULL));
    tj_tensor *wrong[1] = {tj_zeros(SIZES, 2, TJ_I64)};
    FAILS_STATUS(tj_run(P, wrong, out));
    tj_release(wrong[0]);
    WORKS(tj_program_free(NULL));
    FAILS_WITH(tj_program_num_inputs(NULL), -1);
    FAILS_WITH(tj_program_num_outputs(NULL), -1);
    FAILS_NULL(tj_program_code_to_string(NULL));
    FAILS_STATUS(tj_program_plan_stats(NULL, &stats));
    FAILS_STATUS(tj_program_plan_stats(P, NULL));
    FAILS_NULL(tj_program_plan_to_string(NULL));
    FAILS_NULL(tj_program_graph(NULL));
}

static void c_gradients(void) {
    int n;
    int64_t bytes;
    FAILS_STATUS(tj_backward(NULL, NULL, NULL));
    FAILS_STATUS(tj_backward(P, NULL, NULL)); /* compiled without gradients */
    FAILS_NULL(tj_program_grad(NULL, "w"));
    FAILS_NULL(tj_program_grad(P, NULL));
    FAILS_NULL(tj_program_grad(P, "no_such_parameter"));
    FAILS_SILENTLY(tj_program_zero_grad(NULL));
    FAILS_STATUS(tj_program_saved(NULL, &n, &bytes));
    FAILS_NULL(tj_program_backward_graph(NULL));
}

static tj_status hook_ready(void *ctx, int param, tj_tensor *grad, int remaining) {
    (void)ctx, (void)param, (void)grad, (void)remaining;
    return TJ_OK;
}

static void c_grad_hook(void) {
    tj_grad_hook hook = {.ready = hook_ready};
    tj_grad_hook no_ready = {0};
    FAILS_STATUS(tj_program_set_grad_hook(NULL, &hook));
    FAILS_STATUS(tj_program_set_grad_hook(P, &hook)); /* compiled without gradients */
    FAILS_STATUS(tj_program_set_grad_hook(P, NULL));
    FAILS_STATUS(tj_program_set_grad(NULL, "w", T));
    FAILS_STATUS(tj_program_set_grad(P, NULL, T));
    FAILS_STATUS(tj_program_set_grad(P, "no_such_parameter", T));
    /* a program with gradients: y = relu(x) * w */
    tj_graph *g = tj_graph_parse("graph(%x : Float(2, 3), %w : Float(2, 3)):\n"
                                 "  %r : Float(2, 3) = aten::relu(%x)\n"
                                 "  %y : Float(2, 3) = aten::mul(%r, %w)\n"
                                 "  return (%y)\n", NULL);
    assert_non_null(g);
    tj_tensor *w = tj_ones(SIZES, 2, TJ_F32);
    assert_int_equal(tj_graph_bind_input(g, 1, w), TJ_OK);
    tj_compile_options o = {.grad_parameters = true};
    tj_program *p = tj_compile(g, &o);
    assert_non_null(p);
    FAILS_STATUS(tj_program_set_grad_hook(p, &no_ready));
    WORKS(assert_int_equal(tj_program_set_grad_hook(p, &hook), TJ_OK));
    FAILS_STATUS(tj_program_set_grad_hook(p, &hook)); /* one is installed */
    WORKS(assert_int_equal(tj_program_set_grad_hook(p, NULL), TJ_OK));
    tj_tensor *wrong = tj_zeros(SIZES, 2, TJ_F64);
    FAILS_STATUS(tj_program_set_grad(p, "w", wrong));
    FAILS_STATUS(tj_program_set_grad(p, "x", T)); /* an input */
    WORKS(assert_int_equal(tj_program_set_grad(p, "w", T), TJ_OK));
    WORKS(assert_int_equal(tj_program_set_grad(p, "w", NULL), TJ_OK));
    tj_release(wrong);
    tj_program_free(p);
    tj_release(w);
    tj_graph_free(g);
}

static void c_functions(void) {
    tj_tensor *in[1] = {NULL}, *out[1] = {NULL};
    FAILS_NULL(tj_function_new(NULL, NULL, 1, 1, 4, NULL));
    FAILS_NULL(tj_function_new(identity_model, NULL, 1, 0, 4, NULL));
    FAILS_NULL(tj_function_new(identity_model, NULL, 1, 1, 0, NULL));
    FAILS_STATUS(tj_function_call(NULL, in, out));
    tj_function *f = tj_function_new(identity_model, NULL, 1, 1, 2, NULL);
    assert_non_null(f);
    FAILS_STATUS(tj_function_call(f, NULL, out));
    FAILS_STATUS(tj_function_call(f, in, out)); /* a NULL input */
    FAILS_SILENTLY(assert_int_equal(tj_function_get_stats(NULL).calls, 0));
    tj_function_free(f);
    WORKS(tj_function_free(NULL));
}

static void c_npy(void) {
    FAILS_NULL(tj_load_npy(NULL));
    FAILS_NULL(tj_load_npy("/nonexistent/dir/x.npy"));
    FAILS_STATUS(tj_save_npy(NULL, T));
    FAILS_STATUS(tj_save_npy("/nonexistent/dir/x.npy", NULL));
    FAILS_STATUS(tj_save_npy("/nonexistent/dir/x.npy", T));
}

/* ---- distributed.h: data-parallel training ------------------------------------------------ */

static void c_ddp(void) {
    tj_ddp_stats stats;
    tj_ddp_options opts = {.bucket_bytes = -1};
    FAILS_NULL(tj_ddp_wrap(NULL, NULL, NULL));
    FAILS_NULL(tj_ddp_wrap(P, NULL, NULL));   /* no process group (and no gradients) */
    FAILS_NULL(tj_ddp_wrap(P, NULL, &opts));
    FAILS_STATUS(tj_ddp_set_no_sync(NULL, true));
    FAILS_STATUS(tj_ddp_get_stats(NULL, &stats));
    WORKS(tj_ddp_free(NULL));
}

/* ---- profile.h, version.h (ir.h, passes.h, onnx.h: tests/support/api_checks_ir.c) --- */

static void c_profile(void) {
    FAILS_STATUS(tj_program_profile(NULL, true));
    FAILS_STATUS(tj_profile_reset(NULL));
    FAILS_NULL(tj_profile_report(NULL));
    FAILS_NULL(tj_profile_report(P)); /* never profiled */
    FAILS_STATUS(tj_profile_write_trace(NULL, "/tmp/unused.json"));
    FAILS_STATUS(tj_profile_write_trace(P, NULL));
}

static void c_version(void) {
    WORKS(assert_non_null(tj_version()));
    WORKS(assert_non_null(tj_build_info()));
}

/* ---- distributed.h: process groups and collectives (without mpirun: no group) ----------- */

static void c_dist_groups(void) {
    FAILS_STATUS(tj_dist_init(NULL, NULL));
    FAILS_STATUS(tj_dist_init("gloo", NULL));
    FAILS_STATUS(tj_dist_init("mpi", &(tj_dist_options){.timeout_s = -1}));
    FAILS_STATUS(tj_dist_finalize()); /* no group */
    WORKS(assert_false(tj_dist_is_initialized()));
    WORKS(assert_null(tj_dist_world()));
    WORKS(assert_int_equal(tj_dist_rank(), 0));
    WORKS(assert_int_equal(tj_dist_world_size(), 1));
    WORKS(assert_null(tj_dist_backend()));
}

static void c_dist_collectives(void) {
    tj_dist_work *w = NULL;
    bool done;
    FAILS_STATUS(tj_dist_all_reduce(NULL, TJ_REDUCE_SUM, NULL, NULL));
    FAILS_STATUS(tj_dist_all_reduce(T, TJ_REDUCE_SUM, NULL, &w)); /* before tj_dist_init */
    FAILS_STATUS(tj_dist_broadcast(T, 0, NULL, NULL));
    FAILS_STATUS(tj_dist_all_gather(T, T, NULL, NULL));
    FAILS_STATUS(tj_dist_reduce_scatter(T, T, TJ_REDUCE_SUM, NULL, NULL));
    FAILS_STATUS(tj_dist_barrier(NULL, &w));
    assert_null(w);
    WORKS(assert_int_equal(tj_dist_wait(NULL), TJ_OK));
    FAILS_STATUS(tj_dist_test(NULL, &done));
}

/* ---- the table ----------------------------------------------------------------------------- */

typedef struct api_entry {
    const char *names; /* the functions the check covers, space-separated */
    void (*check)(void);
} api_entry;

static const api_entry table[] = {
    {"tj_last_error tj_last_status tj_clear_error tj_status_name", c_errors},
    {"tj_dtype_name tj_dtype_size tj_dtype_is_float tj_is_none", c_dtypes},
    {"tj_scalar_float tj_scalar_int tj_scalar_bool tj_scalar_none tj_scalar_same", c_scalars},
    {"tj_device_to_string tj_device_parse tj_device_count tj_cuda_is_available "
     "tj_cuda_device_count tj_cuda_synchronize tj_cuda_memory_stats tj_cuda_empty_cache "
     "tj_cuda_set_allow_tf32 tj_cuda_allow_tf32 tj_cuda_set_cudnn_benchmark "
     "tj_cuda_cudnn_benchmark", c_devices},
    {"tj_retain tj_release tj_empty tj_zeros tj_ones tj_full tj_scalar_tensor tj_arange "
     "tj_from_array tj_empty_on tj_zeros_on tj_ones_on tj_full_on tj_to_device "
     "tj_move_to_device", c_creation},
    {"tj_ndim tj_sizes tj_strides tj_size tj_numel tj_storage_offset tj_tensor_dtype "
     "tj_tensor_device tj_is_contiguous tj_shares_storage tj_data tj_item tj_tensor_to_string "
     "tj_tensor_set_name tj_tensor_name", c_accessors},
    {"tj_get", c_get},
    {"tj_get_n", c_get_n},
    {"tj_scope_begin tj_scope_end tj_keep", c_scopes},
    {"tj_generator_new tj_generator_free tj_generator_set_state tj_generator_seed "
     "tj_generator_offset tj_generator_reserve tj_rand tj_randn tj_bernoulli", c_random},
    {"tj_op_count tj_op_at tj_op_find tj_op_id tj_op_name tj_op_schema_text tj_op_schema "
     "tj_op_kind_of tj_op_kind_name tj_op_inplace_variant", c_ops},
    {"tj_invoke", c_invoke},
    {"tj_set_record_hook tj_set_num_threads tj_get_num_threads", c_hooks_threads},
    {"tj_trace", c_trace},
    {"tj_graph_bind_input tj_graph_input_binding tj_graph_add_warning tj_graph_num_warnings "
     "tj_graph_warning", c_graph_meta},
    {"tj_compile tj_run tj_program_free tj_program_num_inputs tj_program_num_outputs "
     "tj_program_code_to_string tj_program_plan_stats tj_program_plan_to_string "
     "tj_program_graph", c_programs},
    {"tj_backward tj_program_grad tj_program_zero_grad tj_program_saved "
     "tj_program_backward_graph", c_gradients},
    {"tj_program_set_grad_hook tj_program_set_grad", c_grad_hook},
    {"tj_function_new tj_function_call tj_function_get_stats tj_function_free", c_functions},
    {"tj_load_npy tj_save_npy", c_npy},
    {"tj_type_tensor tj_type_tensor_of tj_type_contiguous tj_type_of_tensor tj_type_scalar "
     "tj_type_list tj_type_equal tj_type_check tj_type_to_string", tt_api_types},
    {"tj_graph_new tj_graph_free tj_graph_block tj_graph_owner tj_graph_add_input "
     "tj_graph_num_inputs tj_graph_input tj_graph_add_output tj_graph_num_outputs "
     "tj_graph_output tj_graph_writes_in_place", tt_api_graphs},
    {"tj_block_graph tj_block_num_inputs tj_block_input tj_block_add_input "
     "tj_block_remove_input tj_block_num_outputs tj_block_output tj_block_add_output "
     "tj_block_set_output tj_block_remove_output tj_block_remove_inputs "
     "tj_block_remove_outputs tj_block_first tj_block_last tj_block_param "
     "tj_block_return tj_block_num_nodes tj_block_append", tt_api_blocks},
    {"tj_node_kind_name tj_attr_kind_name tj_node_create_op tj_node_create "
     "tj_node_create_constant tj_node_create_tensor_constant tj_node_create_fusion_group",
     tt_api_node_creation},
    {"tj_node_kind_of tj_node_op tj_node_name tj_node_id tj_node_graph tj_node_block "
     "tj_node_num_inputs tj_node_input tj_node_num_outputs tj_node_output tj_node_next "
     "tj_node_prev tj_node_is_before tj_node_scratch tj_node_set_scratch", tt_api_node_access},
    {"tj_node_num_attrs tj_node_attr_name tj_node_attr_kind tj_node_attr tj_node_attrs "
     "tj_node_attr_index tj_node_set_attr tj_node_tensor tj_node_subgraph tj_node_set_subgraph",
     tt_api_node_attrs},
    {"tj_node_insert_before tj_node_insert_after tj_node_move_before tj_node_move_after "
     "tj_node_destroy tj_node_set_input tj_node_add_input tj_node_remove_input "
     "tj_node_add_output tj_node_remove_output", tt_api_editing},
    {"tj_value_type tj_value_set_type tj_value_name tj_value_set_name tj_value_id tj_value_node "
     "tj_value_offset tj_value_graph tj_value_num_uses tj_value_use tj_value_replace_uses "
     "tj_value_replace_uses_after tj_value_scratch tj_value_set_scratch", tt_api_values},
    {"tj_value_map_new tj_value_map_free tj_value_map_set tj_value_map_get tj_graph_clone "
     "tj_node_clone tj_graph_insert_before", tt_api_cloning},
    {"tj_graph_to_string tj_graph_parse tj_graph_parse_n tj_graph_verify tj_graph_to_dot",
     tt_api_text},
    {"tj_run_passes tj_default_pipeline tj_find_pass tj_num_passes tj_pass_name tj_pass_functionalize tj_pass_dce "
     "tj_pass_cse tj_pass_constant_fold tj_pass_peephole tj_pass_canonicalize tj_pass_fuse "
     "tj_pass_merge_linears tj_pass_fold_batch_norm tj_pass_split_batch_norm "
     "tj_fusion_report tj_autodiff tj_gradient_free tj_grad_graph", tt_api_passes},
    {"tj_ddp_wrap tj_ddp_set_no_sync tj_ddp_get_stats tj_ddp_free", c_ddp},
    {"tj_program_profile tj_profile_reset tj_profile_report tj_profile_write_trace", c_profile},
    {"tj_graph_export_onnx tj_graph_export_onnx_bytes tj_graph_import_onnx "
     "tj_graph_import_onnx_ex tj_graph_import_onnx_bytes tj_onnx_load_tensor "
     "tj_onnx_export_form tj_onnx_available", tt_api_onnx},
    {"tj_version tj_build_info", c_version},
    {"tj_dist_init tj_dist_finalize tj_dist_is_initialized tj_dist_world tj_dist_rank "
     "tj_dist_world_size tj_dist_backend", c_dist_groups},
    {"tj_dist_all_reduce tj_dist_broadcast tj_dist_all_gather tj_dist_reduce_scatter "
     "tj_dist_barrier tj_dist_wait tj_dist_test", c_dist_collectives},
};
enum { N_ENTRIES = sizeof table / sizeof table[0] };

static bool in_table(const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < N_ENTRIES; i++)
        for (const char *p = strstr(table[i].names, name); p; p = strstr(p + 1, name))
            if ((p == table[i].names || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
                return true;
    return false;
}

static void test_table(void **state) {
    (void)state;
    for (int i = 0; i < N_ENTRIES; i++) {
        tt_context("checking %s", table[i].names);
        table[i].check();
    }
    tj_clear_error();
}

/* ---- completeness against the headers ------------------------------------------------------ */

#ifndef TJIT_SOURCE_DIR
#error "TJIT_SOURCE_DIR names the source tree, whose public headers the table is checked against"
#endif

/* The text of path without comments and preprocessor lines. */
static char *declarations_of(const char *path) {
    char *text = tt_read_file(path);
    if (!text) fail_msg("cannot read %s", path);
    char *out = malloc(strlen(text) + 1);
    size_t k = 0;
    bool line_start = true;
    for (const char *p = text; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
            out[k++] = ' ';
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (line_start && *p == '#') { /* to the end of the line, with continuations */
            while (*p && !(*p == '\n' && p[-1] != '\\')) p++;
        } else {
            if (*p == '\n') line_start = true;
            else if (!isspace((unsigned char)*p)) line_start = false;
            out[k++] = *p++;
        }
    }
    out[k] = '\0';
    free(text);
    return out;
}

/* Appends to missing the functions declared in path that the table lacks;
 * returns how many functions path declares. */
static int check_header(const char *path, char *missing, size_t cap) {
    char *text = declarations_of(path);
    int found = 0;
    for (char *p = text; (p = strstr(p, "tj_")) != NULL;) {
        char *start = p;
        while (isalnum((unsigned char)*p) || *p == '_') p++;
        if (start > text && (isalnum((unsigned char)start[-1]) || start[-1] == '_')) continue;
        char *after = p;
        while (isspace((unsigned char)*after)) after++;
        char *before = start;
        while (before > text && isspace((unsigned char)before[-1])) before--;
        /* a declaration: a return type (a word or '*') before the name, '(' after it */
        /* not a function pointer type: typedef tj_status (*tj_model_fn)(...) */
        char *inner = after + 1;
        while (*after == '(' && isspace((unsigned char)*inner)) inner++;
        bool decl = *after == '(' && *inner != '*' && before > text &&
                    (isalnum((unsigned char)before[-1]) || before[-1] == '_' || before[-1] == '*');
        if (!decl) continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(p - start), start);
        found++;
        if (!in_table(name) && strlen(missing) + strlen(name) + 2 < cap) {
            strcat(missing, " ");
            strcat(missing, name);
        }
    }
    free(text);
    return found;
}

static void test_table_is_complete(void **state) {
    (void)state;
    static const char *const headers[] = {"tjit.h", "runtime.h", "ir.h", "passes.h",
                                          "profile.h", "onnx.h", "distributed.h",
                                          "version.h.in"};
    char missing[4096] = "";
    int total = 0;
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/include/tjit/%s", TJIT_SOURCE_DIR, headers[i]);
        int n = check_header(path, missing, sizeof missing);
        if (n == 0) fail_msg("%s declares no function: the header parser is broken", path);
        total += n;
    }
    if (missing[0])
        fail_msg("public functions with no entry in test_public_api.c's table:%s", missing);
    /* every public header is in the list above */
    DIR *dir = opendir(TJIT_SOURCE_DIR "/include/tjit");
    assert_non_null(dir);
    char unknown[1024] = "";
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        bool known = false;
        for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++)
            known = known || !strcmp(e->d_name, headers[i]);
        if (!known && strlen(unknown) + strlen(e->d_name) + 2 < sizeof unknown) {
            strcat(unknown, " ");
            strcat(unknown, e->d_name);
        }
    }
    closedir(dir);
    if (unknown[0]) fail_msg("public headers this test does not parse:%s", unknown);
    print_message("%d public functions, all in the table of %d checks\n", total, N_ENTRIES);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_complete),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
