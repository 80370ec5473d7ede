/* cuda_linalg_cases.c — see cuda_linalg_cases.h. */
#include "tests/support/cuda_linalg_cases.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tjit/ops_api.h"

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
