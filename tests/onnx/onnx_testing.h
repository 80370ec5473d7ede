/* onnx_testing.h — helpers the ONNX tests share: comparing tensors the way
 * ONNX's backend tests do, and finding the test data of libonnx-testdata.
 * Header-only (each test is one program). Prefix ot_. */
#ifndef TJIT_TESTS_ONNX_TESTING_H
#define TJIT_TESTS_ONNX_TESTING_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tjit/tjit.h"

/* ONNX's backend test tolerances (onnx/backend/test/runner: rtol 1e-3, atol 1e-7). */
#define OT_RTOL 1e-3
#define OT_ATOL 1e-7

/* Whether got equals expected: dtype and sizes exactly, values within
 * atol + rtol * |expected| (integers and bools exactly; NaN where NaN). On a
 * difference, why says where. */
static inline bool ot_close(const tj_tensor *expected, const tj_tensor *got, double rtol,
                            double atol, char *why, size_t n) {
    if (tj_tensor_dtype(expected) != tj_tensor_dtype(got)) {
        snprintf(why, n, "dtype %s, expected %s", tj_dtype_name(tj_tensor_dtype(got)),
                 tj_dtype_name(tj_tensor_dtype(expected)));
        return false;
    }
    bool same = tj_ndim(expected) == tj_ndim(got);
    for (int d = 0; same && d < tj_ndim(got); d++) same = tj_sizes(expected)[d] == tj_sizes(got)[d];
    if (!same) {
        snprintf(why, n, "sizes differ (rank %d, expected rank %d)", tj_ndim(got), tj_ndim(expected));
        return false;
    }
    bool exact = !tj_dtype_is_float(tj_tensor_dtype(got));
    int64_t idx[TJ_MAX_DIMS] = {0};
    for (int64_t k = 0; k < tj_numel(got); k++) {
        double e = tj_get(expected, idx), g = tj_get(got, idx);
        bool ok = exact ? e == g : (isnan(e) ? isnan(g) : (isinf(e) ? e == g : fabs(g - e) <= atol + rtol * fabs(e)));
        if (!ok) {
            snprintf(why, n, "element %lld is %.9g, expected %.9g", (long long)k, g, e);
            return false;
        }
        for (int d = tj_ndim(got) - 1; d >= 0 && ++idx[d] == tj_sizes(got)[d]; d--) idx[d] = 0;
    }
    return true;
}

/* The folder of libonnx-testdata's backend test data (TJIT_ONNX_TESTDATA
 * overrides), or NULL. */
static inline const char *ot_testdata_dir(void) {
    static const char *const dirs[] = {"/usr/share/libonnx-testdata/data",
                                       "/usr/include/onnx/backend/test/data"};
    const char *env = getenv("TJIT_ONNX_TESTDATA");
    struct stat st;
    if (env && stat(env, &st) == 0) return env;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (stat(dirs[i], &st) == 0 && S_ISDIR(st.st_mode)) return dirs[i];
    return NULL;
}

#endif
