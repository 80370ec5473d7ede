/* cuda_cases.h — the CUDA op tests' shared check: run one op on the CPU and on
 * a CUDA device with the same inputs and compare every output (and every
 * input the op writes in place). The same test binaries run against the host
 * execution harness in `make test` (TJIT_CUDA_DRIVER=host) and against a GPU
 * in `make test-gpu`. Prefix tt_cuda_. */
#ifndef TJIT_CUDA_CASES_H
#define TJIT_CUDA_CASES_H

#include "tests/support/testing.h"

/* The device the tests run on: cuda:0. */
#define TT_CUDA0 ((tj_device){TJ_CUDA, 0})

/* cmocka group setup: skips the whole group (cmocka's skip, reported as
 * skipped by ctest through its exit code) when no CUDA device is available. */
int tt_cuda_group_setup(void **state);
/* main() of a CUDA test file: runs tests, or reports the group skipped (exit
 * status 77, ctest's SKIP_RETURN_CODE for these tests) without a device. */
int tt_cuda_run(const char *name, const struct CMUnitTest *tests, size_t n);
#define TT_CUDA_RUN(tests) tt_cuda_run(__FILE__, tests, sizeof(tests) / sizeof((tests)[0]))

/* Runs op (by qualified name) on in[0..n_in) (host tensors; NULL for an absent
 * optional) with attrs on the CPU, and on copies of the inputs on cuda:0, and
 * fails the test unless the op succeeds on both or fails on both, every
 * output has the same dtype and sizes and values within atol + rtol * |cpu|
 * (NaN matching NaN, infinities equal), and inputs written in place match too.
 * The case is named in messages by tt_context. Returns the number of outputs. */
int tt_cuda_check_op_(const char *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                      int n_attrs, double rtol, double atol, const char *file, int line);
#define tt_cuda_check_op(op, in, n_in, attrs, n_attrs, rtol, atol) \
    tt_cuda_check_op_(op, in, n_in, attrs, n_attrs, rtol, atol, __FILE__, __LINE__)

/* A copy of t on cuda:0 with t's geometry (sizes, strides, offset), so that
 * kernels meet the transposed, strided and expanded inputs a test made, not
 * contiguous copies of them; tt_cuda_check_op copies its inputs this way. A
 * new reference (NULL with an error set on failure). */
tj_tensor *tt_cuda_copy_like(tj_tensor *t);

/* Tolerances for CUDA against CPU kernels of the same op, by dtype: the
 * documented bound (2 ulp of f32/f64 per transcendental, a few ulp more for
 * reductions in another order); exact for integers and bools. */
double tt_cuda_rtol(tj_dtype d);
double tt_cuda_atol(tj_dtype d);

/* Counts of checked cases, printed by tt_cuda_run at the end
 * ("test_cuda_x: N cases on cuda:0 (host harness)"). */
void tt_cuda_count_case(void);

#endif
