/* cuda_cases.c — see cuda_cases.h. */
#include "tests/support/cuda_cases.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static long n_cases;

void tt_cuda_count_case(void) { n_cases++; }

double tt_cuda_rtol(tj_dtype d) { return d == TJ_F32 ? 2e-5 : d == TJ_F64 ? 1e-12 : 0; }
double tt_cuda_atol(tj_dtype d) { return d == TJ_F32 ? 1e-6 : d == TJ_F64 ? 1e-14 : 0; }

bool tt_cuda_on_gpu(void) {
    const char *drv = getenv("TJIT_CUDA_DRIVER");
    return !drv || strcmp(drv, "host") != 0;
}

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
    const char *only = getenv("TT_TEST_FILTER"); /* e.g. TT_TEST_FILTER=models_training */
    if (only && only[0]) cmocka_set_test_filter(only);
    int failed = _cmocka_run_group_tests(base, tests, n, NULL, NULL);
    printf("%s: %ld cases on cuda:0 (%s)\n", base, n_cases,
           tt_cuda_on_gpu() ? "GPU" : "host execution harness");
    return failed;
}

/* t's whole storage copied to device d as bytes, and t's view of it made
 * there: no kernel of the op families runs, whatever t's layout. */
static tj_tensor *replica(const tj_tensor *t, tj_device d) {
    size_t es = tj_dtype_size(t->dtype);
    int64_t n = (int64_t)(t->storage->nbytes / es);
    tj_tensor *base = tjc_alloc_on(d, &n, 1, t->dtype);
    if (!base) return NULL;
    if (n > 0 && tjc_copy_bytes(base->storage->data, d, t->storage->data, t->storage->device,
                                (size_t)n * es) != TJ_OK) {
        tj_release(base);
        return NULL;
    }
    tj_tensor *v = tjc_make_view(base, t->sizes, t->strides, t->ndim, t->offset);
    tj_release(base);
    return v;
}

tj_tensor *tt_cuda_copy_like(tj_tensor *t) { return t ? replica(t, TT_CUDA0) : NULL; }

static bool float_close(double got, double want, double rtol, double atol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    if (want == 0 && got == 0) return signbit(want) == signbit(got);
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Element i of host tensors c (the CPU's) and g (the device's), both
 * contiguous of dtype d: whether they agree. */
static bool element_agrees(tj_dtype d, const void *c, const void *g, int64_t i, double rtol, double atol) {
    switch (d) {
    case TJ_F32: return float_close(((const float *)g)[i], ((const float *)c)[i], rtol, atol);
    case TJ_F64: return float_close(((const double *)g)[i], ((const double *)c)[i], rtol, atol);
    case TJ_I64: return ((const int64_t *)c)[i] == ((const int64_t *)g)[i];
    default: return (((const unsigned char *)c)[i] != 0) == (((const unsigned char *)g)[i] != 0);
    }
}

/* Element i of host tensor t of dtype d, printed into buf (only for a
 * message: formatting every element that agrees took most of the tests' time). */
static void format_element(tj_dtype d, const void *t, int64_t i, char *buf, size_t len) {
    switch (d) {
    case TJ_F32: snprintf(buf, len, "%.17g", (double)((const float *)t)[i]); break;
    case TJ_F64: snprintf(buf, len, "%.17g", ((const double *)t)[i]); break;
    case TJ_I64: snprintf(buf, len, "%" PRId64, ((const int64_t *)t)[i]); break;
    default: snprintf(buf, len, "%d", ((const unsigned char *)t)[i] != 0); break;
    }
}

/* A contiguous host copy (a new reference). A device tensor comes over as
 * its storage, so reading a result runs no device kernel. */
static tj_tensor *host_contiguous(tj_tensor *t) {
    tj_tensor *h = NULL, *c = NULL;
    if (tj_tensor_device(t).type != TJ_CPU && !(t = h = replica(t, TJ_DEVICE_CPU))) return NULL;
    if (tjc_invoke_nested(tjc_op(TJ_OP_contiguous), &t, 1, NULL, &c, 1) != 1) c = NULL;
    tj_release(h);
    return c;
}

void tt_cuda_assert_same_(const char *what, tj_tensor *cpu, tj_tensor *dev, double rtol,
                          double atol, const char *file, int line) {
    char dn[TJC_DEVICE_BUF];
    if (tj_tensor_device(dev).type != TJ_CUDA) {
        print_error("%s: result is on %s, not cuda\n", what,
                    tjc_fmt_device(dn, sizeof dn, tj_tensor_device(dev)));
        _fail(file, line);
    }
    tj_dtype d = tj_tensor_dtype(cpu);
    if (rtol == TT_CUDA_DTYPE_BOUND) rtol = tt_cuda_rtol(d);
    if (atol == TT_CUDA_DTYPE_BOUND) atol = tt_cuda_atol(d);
    if (d != tj_tensor_dtype(dev) || tj_ndim(cpu) != tj_ndim(dev) ||
        memcmp(tj_sizes(cpu), tj_sizes(dev), sizeof(int64_t) * (size_t)tj_ndim(cpu))) {
        char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF];
        print_error("%s: cpu gives %s %s, cuda %s %s\n", what, tj_dtype_name(d),
                    tjc_fmt_sizes(a, sizeof a, tj_sizes(cpu), tj_ndim(cpu)),
                    tj_dtype_name(tj_tensor_dtype(dev)),
                    tjc_fmt_sizes(b, sizeof b, tj_sizes(dev), tj_ndim(dev)));
        _fail(file, line);
    }
    tj_tensor *hc = host_contiguous(cpu), *hd = host_contiguous(dev);
    if (!hc || !hd) {
        print_error("%s: reading the results failed: %s\n", what, tj_last_error());
        _fail(file, line);
    }
    const void *pc = tjc_data_ptr(hc), *pd = tjc_data_ptr(hd);
    int64_t n = tj_numel(hc);
    for (int64_t i = 0; i < n; i++) {
        if (!element_agrees(d, pc, pd, i, rtol, atol)) {
            char vc[64], vd[64];
            format_element(d, pc, i, vc, sizeof vc);
            format_element(d, pd, i, vd, sizeof vd);
            print_error("%s: element %" PRId64 " (row-major) of %s: cpu %s, cuda %s\n", what, i,
                        tj_dtype_name(d), vc, vd);
            tj_release(hc);
            tj_release(hd);
            _fail(file, line);
        }
    }
    tj_release(hc);
    tj_release(hd);
}

/* op (by qualified name) on cpu_in and on dev_in. Returns the CPU's number
 * of outputs and sets *n_dev to the device's; a CPU refusal's message is
 * kept in cpu_err, the device's stays the last error. */
static int run_on_both(const char *name, tj_tensor *const *cpu_in, tj_tensor *const *dev_in,
                       int n_in, const tj_attr *attrs, int n_attrs, tj_tensor **cpu_out,
                       tj_tensor **dev_out, int max_out, int *n_dev, char *cpu_err, size_t len,
                       const char *file, int line) {
    const tj_op_info *op = tj_op_find(name);
    if (!op) {
        print_error("no op named %s\n", name);
        _fail(file, line);
    }
    tj_clear_error();
    int n_cpu = tj_invoke(tj_op_id(op), cpu_in, n_in, attrs, n_attrs, cpu_out, max_out);
    snprintf(cpu_err, len, "%s", tj_last_error());
    tj_clear_error();
    *n_dev = tj_invoke(tj_op_id(op), dev_in, n_in, attrs, n_attrs, dev_out, max_out);
    return n_cpu;
}

int tt_cuda_check_(const char *name, tj_tensor *const *base, int n_in, tt_cuda_view_fn view,
                   void *ctx, const tj_attr *attrs, int n_attrs, double rtol, double atol,
                   const char *file, int line) {
    enum { MAX_IN = 16, MAX_OUT = 64 };
    assert_true(n_in <= MAX_IN);
    tj_tensor *cpu_base[MAX_IN], *dev_base[MAX_IN], *cpu_in[MAX_IN], *dev_in[MAX_IN];
    tj_tensor *cpu_out[MAX_OUT], *dev_out[MAX_OUT];
    /* in-place ops write their inputs: each side gets its own copies */
    for (int i = 0; i < n_in; i++) {
        cpu_base[i] = dev_base[i] = cpu_in[i] = dev_in[i] = NULL;
        if (!base[i]) continue;
        cpu_base[i] = replica(base[i], TJ_DEVICE_CPU);
        dev_base[i] = replica(base[i], TT_CUDA0);
        if (!cpu_base[i] || !dev_base[i]) {
            print_error("%s: copying input %d failed: %s\n", name, i, tj_last_error());
            _fail(file, line);
        }
        cpu_in[i] = view ? view(cpu_base[i], i, ctx) : cpu_base[i];
        dev_in[i] = view ? view(dev_base[i], i, ctx) : dev_base[i];
        if (!cpu_in[i] || !dev_in[i]) {
            print_error("%s: making the view of input %d failed: %s\n", name, i, tj_last_error());
            _fail(file, line);
        }
    }
    char cpu_err[512];
    int n_dev, n_cpu = run_on_both(name, cpu_in, dev_in, n_in, attrs, n_attrs, cpu_out, dev_out,
                                   MAX_OUT, &n_dev, cpu_err, sizeof cpu_err, file, line);
    if ((n_cpu < 0) != (n_dev < 0) || (n_cpu >= 0 && n_cpu != n_dev)) {
        print_error("%s: cpu gives %d outputs%s%s, cuda %d%s%s\n", name, n_cpu,
                    n_cpu < 0 ? ": " : "", n_cpu < 0 ? cpu_err : "", n_dev,
                    n_dev < 0 ? ": " : "", n_dev < 0 ? tj_last_error() : "");
        _fail(file, line);
    }
    tj_status refused = tj_last_status();
    if (n_cpu < 0 && strcmp(cpu_err, tj_last_error()) != 0) {
        print_error("%s: both refuse, with different messages:\n  cpu:  %s\n  cuda: %s\n", name,
                    cpu_err, tj_last_error());
        _fail(file, line);
    }
    tj_clear_error();
    char what[160];
    for (int k = 0; k < n_cpu; k++) {
        snprintf(what, sizeof what, "%s: output %d", name, k);
        tt_cuda_assert_same_(what, cpu_out[k], dev_out[k], rtol, atol, file, line);
    }
    for (int i = 0; i < n_in; i++) {
        if (!base[i]) continue;
        snprintf(what, sizeof what, "%s: input %d after the call", name, i);
        tt_cuda_assert_same_(what, cpu_base[i], dev_base[i], rtol, atol, file, line);
    }
    /* outputs and views were tracked by the test's scope (tj_ calls at depth 0) */
    for (int i = 0; i < n_in; i++) {
        tj_release(cpu_base[i]);
        tj_release(dev_base[i]);
    }
    if (n_cpu < 0) tjc_error(refused, "%s", cpu_err); /* the caller may check the message */
    tt_cuda_count_case();
    return n_cpu;
}

void tt_cuda_check_refused_(const char *name, tj_tensor *const *in, int n_in,
                            const tj_attr *attrs, int n_attrs, const char *file, int line) {
    enum { MAX_IN = 16, MAX_OUT = 64 };
    assert_true(n_in <= MAX_IN);
    tj_tensor *dev_in[MAX_IN], *out[MAX_OUT];
    for (int i = 0; i < n_in; i++) {
        dev_in[i] = tt_cuda_copy_like(in[i]);
        if (in[i] && !dev_in[i]) {
            print_error("%s: copying input %d to cuda:0 failed: %s\n", name, i, tj_last_error());
            _fail(file, line);
        }
    }
    char cpu_err[512];
    int n_dev, n_cpu = run_on_both(name, in, dev_in, n_in, attrs, n_attrs, out, out, MAX_OUT,
                                   &n_dev, cpu_err, sizeof cpu_err, file, line);
    if (n_cpu >= 0 || n_dev >= 0 || strcmp(cpu_err, tj_last_error())) {
        print_error("%s: both devices should refuse it alike; cpu gives %d (%s), cuda %d (%s)\n",
                    name, n_cpu, cpu_err, n_dev, tj_last_error());
        _fail(file, line);
    }
    tj_clear_error();
    for (int i = 0; i < n_in; i++) tj_release(dev_in[i]);
    tt_cuda_count_case();
}
