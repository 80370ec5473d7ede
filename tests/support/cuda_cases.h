/* cuda_cases.h — the CUDA op tests' shared check: run one op on the CPU and on
 * a CUDA device with the same inputs, each input in its own layout on both
 * devices, and compare every output and every input the op writes in place;
 * or check that both devices refuse a call alike. The same test binaries run
 * against the host execution harness in `make test` (TJIT_CUDA_DRIVER=host)
 * and against a GPU in `make test-gpu`. Prefix tt_cuda_. */
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

/* Makes input i of the op from its base (on either device) with tj_ view ops
 * (tracked by the test's scope) or returns base itself. ctx is the caller's. */
typedef tj_tensor *(*tt_cuda_view_fn)(tj_tensor *base, int i, void *ctx);

/* Runs op (by qualified name) with attrs on the CPU and on cuda:0. Each side
 * gets its own copy of every base[i] (a host tensor; NULL for an absent
 * optional) with base[i]'s geometry (sizes, strides, offset: the kernels meet
 * the transposed, strided, offset and expanded inputs a test made), and the op
 * runs on view(copy, i, ctx) (view NULL: on the copies themselves). Fails the
 * test unless the op succeeds on both or refuses on both with the same
 * message, every output has the same dtype and sizes and agrees (see
 * tt_cuda_assert_same), and every base agrees after the call (in-place ops
 * write through the views). The case is named in messages by tt_context and
 * counted. Returns the number of outputs; -1 when both refused, with the
 * refusal left as the last error for the caller to check. */
int tt_cuda_check_(const char *op, tj_tensor *const *base, int n_in, tt_cuda_view_fn view,
                   void *ctx, const tj_attr *attrs, int n_attrs, double rtol, double atol,
                   const char *file, int line);
/* The op on the inputs as they are. */
#define tt_cuda_check_op(op, in, n_in, attrs, n_attrs, rtol, atol) \
    tt_cuda_check_(op, in, n_in, NULL, NULL, attrs, n_attrs, rtol, atol, __FILE__, __LINE__)
/* The op on views the callback makes of the inputs on each device. */
#define tt_cuda_check_views(op, base, n_in, view, ctx, attrs, n_attrs, rtol, atol) \
    tt_cuda_check_(op, base, n_in, view, ctx, attrs, n_attrs, rtol, atol, __FILE__, __LINE__)

/* Both devices must refuse op on in (NULL for an absent optional; device
 * inputs by tt_cuda_copy_like) with the same message. Counts the case. */
void tt_cuda_check_refused_(const char *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                            int n_attrs, const char *file, int line);
#define tt_cuda_check_refused(op, in, n_in, attrs, n_attrs) \
    tt_cuda_check_refused_(op, in, n_in, attrs, n_attrs, __FILE__, __LINE__)

/* Fails unless a host tensor and a CUDA tensor have the same dtype and sizes
 * and hold the same values: exact for integers and bools (all 64 bits, not
 * through double), within atol + rtol * |cpu| for floats (rtol and atol
 * TT_CUDA_DTYPE_BOUND: their dtype's bound), with NaN matching NaN and
 * infinities and the sign of zero equal. what names them in messages. */
void tt_cuda_assert_same_(const char *what, tj_tensor *cpu, tj_tensor *dev, double rtol,
                          double atol, const char *file, int line);
#define tt_cuda_assert_same(what, cpu, dev, rtol, atol) \
    tt_cuda_assert_same_(what, cpu, dev, rtol, atol, __FILE__, __LINE__)

/* A copy of t on cuda:0 with t's geometry: t's whole storage copied, and the
 * same view made of it there. A new reference, not tracked by scopes (NULL
 * for NULL; NULL with an error set on failure). */
tj_tensor *tt_cuda_copy_like(tj_tensor *t);

/* Tolerances for CUDA against CPU kernels of the same op, by dtype: the
 * documented bound (2 ulp of f32/f64 per transcendental, a few ulp more for
 * reductions in another order); exact for integers and bools. */
double tt_cuda_rtol(tj_dtype d);
double tt_cuda_atol(tj_dtype d);

/* Given as both rtol and atol: each compared tensor within tt_cuda_rtol and
 * tt_cuda_atol of its own dtype, for a call whose result dtype the caller
 * does not spell out (exp of an i64 tensor is f32). */
#define TT_CUDA_DTYPE_BOUND (-1.0)

/* Whether cuda:0 is a GPU (TJIT_CUDA_DRIVER is not "host"): the math
 * library there is CUDA's, not the CPU's. */
bool tt_cuda_on_gpu(void);

/* Counts of checked cases, printed by tt_cuda_run at the end
 * ("test_cuda_x: N cases on cuda:0 (host harness)"). */
void tt_cuda_count_case(void);

#endif
