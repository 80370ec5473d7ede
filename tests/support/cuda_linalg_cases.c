/* cuda_linalg_cases.c — see cuda_linalg_cases.h. */
#include "tests/support/cuda_linalg_cases.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tjit/ops_api.h"

tj_tensor *tt_cuda_same_layout(tj_tensor *t) {
    if (!t) return NULL;
    size_t es = tj_dtype_size(t->dtype);
    int64_t n = (int64_t)(t->storage->nbytes / es);
    tj_tensor *base = tjc_alloc_on(TT_CUDA0, &n, 1, t->dtype);
    if (!base) fail_msg("allocating %lld elements on cuda:0: %s", (long long)n, tj_last_error());
    if (tjc_copy_bytes(tjc_data_ptr(base), TT_CUDA0, t->storage->data, TJ_DEVICE_CPU,
                       (size_t)n * es) != TJ_OK)
        fail_msg("copying to cuda:0: %s", tj_last_error());
    tj_tensor *v = tjc_make_view(base, t->sizes, t->strides, t->ndim, t->offset);
    tj_release(base);
    if (!v) fail_msg("a view on cuda:0: %s", tj_last_error());
    return v;
}

void tt_cuda_check_refused_(const char *name, tj_tensor *const *in, int n_in,
                            const tj_attr *attrs, int n_attrs, const char *file, int line) {
    const tj_op_info *op = tj_op_find(name);
    if (!op) {
        print_error("no op named %s\n", name);
        _fail(file, line);
    }
    enum { MAX_IN = 8 };
    assert_true(n_in <= MAX_IN);
    tj_tensor *dev_in[MAX_IN], *out[1] = {NULL};
    for (int i = 0; i < n_in; i++) dev_in[i] = tt_cuda_same_layout(in[i]);
    tj_clear_error();
    int n_cpu = tj_invoke(tj_op_id(op), in, n_in, attrs, n_attrs, out, 1);
    char cpu_err[512];
    snprintf(cpu_err, sizeof cpu_err, "%s", tj_last_error());
    tj_clear_error();
    int n_dev = tj_invoke(tj_op_id(op), dev_in, n_in, attrs, n_attrs, out, 1);
    if (n_cpu >= 0 || n_dev >= 0 || strcmp(cpu_err, tj_last_error())) {
        print_error("%s: both devices should refuse it alike; cpu gives %d (%s), cuda %d (%s)\n",
                    name, n_cpu, cpu_err, n_dev, tj_last_error());
        _fail(file, line);
    }
    tj_clear_error();
    for (int i = 0; i < n_in; i++) tj_release(dev_in[i]);
    tt_cuda_count_case();
}

tj_tensor *tt_in_layout(tj_generator *g, tj_tensor *t, tt_layout l) {
    int nd = tj_ndim(t);
    if (l == TT_TRANSPOSED && nd >= 2)
        return tj_transpose(tj_contiguous(tj_transpose(t, -1, -2)), -1, -2);
    if (l == TT_STRIDED && nd >= 1) return tt_noncontiguous(g, t);
    if (l == TT_CHANNELS_LAST && nd >= 3) {
        /* [n, c, rest...] stored as [n, rest..., c] */
        int64_t to[TJ_MAX_DIMS], back[TJ_MAX_DIMS];
        to[0] = 0;
        for (int d = 2; d < nd; d++) to[d - 1] = d;
        to[nd - 1] = 1;
        for (int d = 0; d < nd; d++) back[to[d]] = d;
        return tj_permute(tj_contiguous(tj_permute(t, to, nd)), back, nd);
    }
    return t;
}

const char *tt_layout_name(tt_layout l) {
    static const char *const names[] = {"dense", "transposed", "strided", "channels-last"};
    return (unsigned)l < TT_N_LAYOUTS ? names[l] : "?";
}

double tt_product_tol(tj_dtype d, int64_t k) {
    double s = sqrt((double)(k > 1 ? k : 1));
    return d == TJ_F32 ? 1e-5 * s : d == TJ_F64 ? 1e-13 * s : 0;
}
