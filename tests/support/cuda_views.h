/* cuda_views.h — a stricter sibling of tt_cuda_check_op for the pointwise and
 * shape tests: each input is a view made on each device from a base tensor
 * (tt_cuda_check_op copies its inputs to the device contiguous, so the
 * kernels would never see strides, offsets, broadcast strides or overlap), and
 * outputs are compared exactly for integers and bools (all 64 bits, not
 * through double), within tolerance for floats, with NaN, infinities and the
 * sign of zero matching. Prefix tt_cuda_. */
#ifndef TJIT_CUDA_VIEWS_H
#define TJIT_CUDA_VIEWS_H

#include "tests/support/cuda_cases.h"

/* Makes input i of the op from its base (on either device) with tj_ view ops
 * (tracked by the test's scope) or returns base itself. ctx is the caller's. */
typedef tj_tensor *(*tt_cuda_view_fn)(tj_tensor *base, int i, void *ctx);

/* Runs op on view(base[i]) (view NULL: the bases themselves) on the CPU and
 * on cuda:0, each side with its own copies of the bases, and fails unless both
 * succeed or both fail, every output agrees, and every base agrees afterwards
 * (in-place ops write through the views). Counts one case; returns the number
 * of outputs (-1 when both refused). */
int tt_cuda_check_views_(const char *op, tj_tensor *const *base, int n_in, tt_cuda_view_fn view,
                         void *ctx, const tj_attr *attrs, int n_attrs, double rtol, double atol,
                         const char *file, int line);
#define tt_cuda_check_views(op, base, n_in, view, ctx, attrs, n_attrs, rtol, atol) \
    tt_cuda_check_views_(op, base, n_in, view, ctx, attrs, n_attrs, rtol, atol, __FILE__, __LINE__)

/* Fails unless a host tensor and a CUDA tensor hold the same values under the
 * rules above (what names them in messages). */
void tt_cuda_assert_same_(const char *what, tj_tensor *cpu, tj_tensor *dev, double rtol,
                          double atol, const char *file, int line);
#define tt_cuda_assert_same(what, cpu, dev, rtol, atol) \
    tt_cuda_assert_same_(what, cpu, dev, rtol, atol, __FILE__, __LINE__)

#endif
