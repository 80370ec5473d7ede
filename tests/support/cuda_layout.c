/* cuda_layout.c — see cuda_layout.h. */
#include "tests/support/cuda_layout.h"

#include <stdio.h>
#include <string.h>

#include "core/core.h"

/* t's whole storage copied to dev, and t's view of it made there. */
static tj_tensor *replica(const tj_tensor *t, tj_device dev) {
    size_t es = tj_dtype_size(t->dtype);
    int64_t n = (int64_t)(t->storage->nbytes / es);
    tj_tensor *base = tjc_alloc_on(dev, &n, 1, t->dtype);
    if (!base) return NULL;
    if (n > 0 && tjc_copy_bytes(base->storage->data, dev, t->storage->data, t->storage->device,
                                (size_t)n * es) != TJ_OK) {
        tj_release(base);
        return NULL;
    }
    tj_tensor *v = tjc_make_view(base, t->sizes, t->strides, t->ndim, t->offset);
    tj_release(base);
    return v;
}

static void compare(const char *op, const char *what, int k, tj_tensor *cpu, tj_tensor *dev,
                    double rtol, double atol, const char *file, int line) {
    if (tj_tensor_device(dev).type != TJ_CUDA) {
        print_error("%s: %s %d is not on cuda\n", op, what, k);
        _fail(file, line);
    }
    if (tj_tensor_dtype(cpu) != tj_tensor_dtype(dev) || tj_ndim(cpu) != tj_ndim(dev) ||
        memcmp(tj_sizes(cpu), tj_sizes(dev), sizeof(int64_t) * (size_t)tj_ndim(cpu))) {
        char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF];
        print_error("%s: %s %d: cpu gives %s %s, cuda %s %s\n", op, what, k,
                    tj_dtype_name(tj_tensor_dtype(cpu)),
                    tjc_fmt_sizes(a, sizeof a, tj_sizes(cpu), tj_ndim(cpu)),
                    tj_dtype_name(tj_tensor_dtype(dev)),
                    tjc_fmt_sizes(b, sizeof b, tj_sizes(dev), tj_ndim(dev)));
        _fail(file, line);
    }
    /* storage and view copied back, so a strided input needs no kernel on the device */
    tj_tensor *host = replica(dev, TJ_DEVICE_CPU);
    if (!host) {
        print_error("%s: %s %d: copying to the host failed: %s\n", op, what, k, tj_last_error());
        _fail(file, line);
    }
    tt_ref r = tt_ref_of(cpu);
    tt_assert_close_ref_(host, &r, rtol, atol, file, line);
    tt_ref_free(&r);
    tj_release(host);
}

int tt_cuda_check_layout_(const char *name, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                          int n_attrs, double rtol, double atol, const char *file, int line) {
    const tj_op_info *op = tj_op_find(name);
    if (!op) {
        print_error("no op named %s\n", name);
        _fail(file, line);
    }
    enum { MAX_IN = 16, MAX_OUT = 64 };
    assert_true(n_in <= MAX_IN);
    tj_tensor *cpu_in[MAX_IN], *dev_in[MAX_IN], *cpu_out[MAX_OUT], *dev_out[MAX_OUT];
    for (int i = 0; i < n_in; i++) {
        cpu_in[i] = in[i] ? replica(in[i], TJ_DEVICE_CPU) : NULL;
        dev_in[i] = in[i] ? replica(in[i], TT_CUDA0) : NULL;
        if (in[i] && (!cpu_in[i] || !dev_in[i])) {
            print_error("%s: copying input %d failed: %s\n", name, i, tj_last_error());
            _fail(file, line);
        }
    }
    tj_clear_error();
    int n_cpu = tj_invoke(tj_op_id(op), cpu_in, n_in, attrs, n_attrs, cpu_out, MAX_OUT);
    char cpu_err[512];
    snprintf(cpu_err, sizeof cpu_err, "%s", tj_last_error());
    tj_clear_error();
    int n_dev = tj_invoke(tj_op_id(op), dev_in, n_in, attrs, n_attrs, dev_out, MAX_OUT);
    if ((n_cpu < 0) != (n_dev < 0) || (n_cpu >= 0 && n_cpu != n_dev)) {
        print_error("%s: cpu gives %d outputs%s%s, cuda %d%s%s\n", name, n_cpu,
                    n_cpu < 0 ? ": " : "", n_cpu < 0 ? cpu_err : "", n_dev,
                    n_dev < 0 ? ": " : "", n_dev < 0 ? tj_last_error() : "");
        _fail(file, line);
    }
    tj_clear_error();
    for (int k = 0; k < n_cpu; k++)
        compare(name, "output", k, cpu_out[k], dev_out[k], rtol, atol, file, line);
    for (int i = 0; i < n_in; i++)
        if (in[i]) compare(name, "input (after the call)", i, cpu_in[i], dev_in[i], rtol, atol,
                           file, line);
    /* outputs were tracked by the test's scope (tj_invoke at depth 0) */
    for (int i = 0; i < n_in; i++) {
        tj_release(cpu_in[i]);
        tj_release(dev_in[i]);
    }
    tt_cuda_count_case();
    return n_cpu;
}
