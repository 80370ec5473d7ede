/* cuda_views.c — see cuda_views.h. */
#include "tests/support/cuda_views.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"

/* A contiguous host copy (a new reference). */
static tj_tensor *host_contiguous(tj_tensor *t) {
    if (tj_tensor_device(t).type != TJ_CPU) return tjc_to_device(t, TJ_DEVICE_CPU);
    tj_tensor *c = NULL;
    if (tjc_invoke_nested(tjc_op(TJ_OP_contiguous), &t, 1, NULL, &c, 1) != 1) return NULL;
    return c;
}

static bool float_close(double got, double want, double rtol, double atol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    if (want == 0 && got == 0) return signbit(want) == signbit(got);
    return fabs(got - want) <= atol + rtol * fabs(want);
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
    const char *pc = tjc_data_ptr(hc), *pd = tjc_data_ptr(hd);
    int64_t n = tj_numel(hc);
    for (int64_t i = 0; i < n; i++) {
        bool ok;
        char vc[64], vd[64];
        switch (d) {
        case TJ_F32:
        case TJ_F64: {
            double c = d == TJ_F32 ? ((const float *)pc)[i] : ((const double *)pc)[i];
            double g = d == TJ_F32 ? ((const float *)pd)[i] : ((const double *)pd)[i];
            ok = float_close(g, c, rtol, atol);
            snprintf(vc, sizeof vc, "%.17g", c);
            snprintf(vd, sizeof vd, "%.17g", g);
            break;
        }
        case TJ_I64: {
            int64_t c = ((const int64_t *)pc)[i], g = ((const int64_t *)pd)[i];
            ok = c == g;
            snprintf(vc, sizeof vc, "%" PRId64, c);
            snprintf(vd, sizeof vd, "%" PRId64, g);
            break;
        }
        default: {
            bool c = ((const unsigned char *)pc)[i] != 0, g = ((const unsigned char *)pd)[i] != 0;
            ok = c == g;
            snprintf(vc, sizeof vc, "%d", c);
            snprintf(vd, sizeof vd, "%d", g);
            break;
        }
        }
        if (!ok) {
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

int tt_cuda_check_views_(const char *name, tj_tensor *const *base, int n_in, tt_cuda_view_fn view,
                         void *ctx, const tj_attr *attrs, int n_attrs, double rtol, double atol,
                         const char *file, int line) {
    const tj_op_info *op = tj_op_find(name);
    if (!op) {
        print_error("no op named %s\n", name);
        _fail(file, line);
    }
    enum { MAX_IN = 16, MAX_OUT = 64 };
    assert_true(n_in <= MAX_IN);
    tj_tensor *cpu_base[MAX_IN], *dev_base[MAX_IN], *cpu_in[MAX_IN], *dev_in[MAX_IN];
    tj_tensor *cpu_out[MAX_OUT], *dev_out[MAX_OUT];
    for (int i = 0; i < n_in; i++) {
        tj_tensor *c[1];
        assert_int_equal(tjc_invoke_nested(tjc_op(TJ_OP_clone), &base[i], 1, NULL, c, 1), 1);
        cpu_base[i] = c[0];
        dev_base[i] = tjc_to_device(base[i], TT_CUDA0);
        if (!dev_base[i]) {
            print_error("%s: copying input %d to cuda:0 failed: %s\n", name, i, tj_last_error());
            _fail(file, line);
        }
        cpu_in[i] = view ? view(cpu_base[i], i, ctx) : cpu_base[i];
        dev_in[i] = view ? view(dev_base[i], i, ctx) : dev_base[i];
        if (!cpu_in[i] || !dev_in[i]) {
            print_error("%s: making the view of input %d failed: %s\n", name, i, tj_last_error());
            _fail(file, line);
        }
    }
    tj_clear_error();
    int n_cpu = tj_invoke(tj_op_id(op), cpu_in, n_in, attrs, n_attrs, cpu_out, MAX_OUT);
    char cpu_err[512];
    snprintf(cpu_err, sizeof cpu_err, "%s", tj_last_error());
    tj_clear_error();
    int n_dev = tj_invoke(tj_op_id(op), dev_in, n_in, attrs, n_attrs, dev_out, MAX_OUT);
    if ((n_cpu < 0) != (n_dev < 0) || n_cpu != n_dev) {
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
        snprintf(what, sizeof what, "%s: input %d after the call", name, i);
        tt_cuda_assert_same_(what, cpu_base[i], dev_base[i], rtol, atol, file, line);
    }
    for (int i = 0; i < n_in; i++) {
        tj_release(cpu_base[i]);
        tj_release(dev_base[i]);
    }
    if (n_cpu < 0) tjc_error(refused, "%s", cpu_err); /* the caller may check the message */
    tt_cuda_count_case();
    return n_cpu;
}
