/* cuda_cases.c — see cuda_cases.h. */
#include "tests/support/cuda_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static long n_cases;

void tt_cuda_count_case(void) { n_cases++; }

double tt_cuda_rtol(tj_dtype d) { return d == TJ_F32 ? 2e-5 : d == TJ_F64 ? 1e-12 : 0; }
double tt_cuda_atol(tj_dtype d) { return d == TJ_F32 ? 1e-6 : d == TJ_F64 ? 1e-14 : 0; }

int tt_cuda_group_setup(void **state) {
    (void)state;
    return tj_cuda_is_available() ? 0 : -1;
}

int tt_cuda_run(const char *name, const struct CMUnitTest *tests, size_t n) {
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    if (!tj_cuda_is_available()) {
        printf("%s: skipped: no CUDA device (%s)\n", base,
               tj_last_error()[0] ? tj_last_error() : "none found");
        return 77;
    }
    const char *drv = getenv("TJIT_CUDA_DRIVER");
    int failed = _cmocka_run_group_tests(base, tests, n, NULL, NULL);
    printf("%s: %ld cases on cuda:0 (%s)\n", base, n_cases,
           drv && !strcmp(drv, "host") ? "host execution harness" : "GPU");
    return failed;
}

/* A copy of t on device d with t's geometry: its whole storage goes over as
 * bytes and the same view is made there (no kernel of the op families runs). */
static tj_tensor *copy_like(tj_tensor *t, tj_device d) {
    if (tj_is_contiguous(t)) return tjc_to_device(t, d);
    int64_t n = (int64_t)(t->storage->nbytes / tj_dtype_size(t->dtype)), one = 1;
    tj_tensor *flat = tjc_make_view(t, &n, &one, 1, 0);
    tj_tensor *copy = flat ? tjc_to_device(flat, d) : NULL;
    tj_tensor *view = copy ? tjc_make_view(copy, t->sizes, t->strides, t->ndim, t->offset) : NULL;
    tj_release(flat);
    tj_release(copy);
    return view;
}

tj_tensor *tt_cuda_copy_like(tj_tensor *t) { return copy_like(t, TT_CUDA0); }

/* Compares a CUDA result with the CPU's. */
static void compare(const char *op, const char *what, int k, tj_tensor *cpu, tj_tensor *dev,
                    double rtol, double atol, const char *file, int line) {
    if (tj_tensor_device(dev).type != TJ_CUDA) {
        print_error("%s: %s %d is on %s, not cuda\n", op, what, k,
                    tj_tensor_device(dev).type == TJ_CPU ? "cpu" : "?");
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
    tj_tensor *host = copy_like(dev, TJ_DEVICE_CPU);
    if (!host) {
        print_error("%s: %s %d: copying to the host failed: %s\n", op, what, k, tj_last_error());
        _fail(file, line);
    }
    tt_ref r = tt_ref_of(cpu);
    tt_assert_close_ref_(host, &r, rtol, atol, file, line);
    tt_ref_free(&r);
    tj_release(host);
}

int tt_cuda_check_op_(const char *name, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                      int n_attrs, double rtol, double atol, const char *file, int line) {
    const tj_op_info *op = tj_op_find(name);
    if (!op) {
        print_error("no op named %s\n", name);
        _fail(file, line);
    }
    enum { MAX_IN = 16, MAX_OUT = 64 };
    assert_true(n_in <= MAX_IN);
    tj_tensor *cpu_in[MAX_IN], *dev_in[MAX_IN], *cpu_out[MAX_OUT], *dev_out[MAX_OUT];
    /* in-place ops write their inputs: each side gets its own copies */
    for (int i = 0; i < n_in; i++) {
        cpu_in[i] = dev_in[i] = NULL;
        if (!in[i]) continue;
        tj_tensor *c[1];
        assert_int_equal(tjc_invoke_nested(tjc_op(TJ_OP_clone), &in[i], 1, NULL, c, 1), 1);
        cpu_in[i] = c[0];
        dev_in[i] = tt_cuda_copy_like(in[i]);
        if (!dev_in[i]) {
            print_error("%s: copying input %d to cuda:0 failed: %s\n", name, i, tj_last_error());
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
    for (int k = 0; k < n_cpu; k++) {
        compare(name, "output", k, cpu_out[k], dev_out[k], rtol, atol, file, line);
    }
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
