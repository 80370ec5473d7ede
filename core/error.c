/* error.c — the thread-local error state and message helpers. */
#include <stdio.h>
#include <string.h>

#include "core.h"

static _Thread_local tj_status last_status = TJ_OK;
static _Thread_local char last_message[1024];

tj_status tjc_error(tj_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    last_status = s;
    return s;
}

tj_status tjc_last_or(tj_status s, const char *fmt, ...) {
    if (last_status != TJ_OK) return last_status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    last_status = s;
    return s;
}

const char *tj_last_error(void) { return last_status == TJ_OK ? "" : last_message; }
tj_status tj_last_status(void) { return last_status; }

void tj_clear_error(void) {
    last_status = TJ_OK;
    last_message[0] = '\0';
}

const char *tj_status_name(tj_status s) {
    static const char *const names[] = {
        "ok", "bad argument", "shape mismatch", "unsupported dtype", "device mismatch",
        "out of memory", "parse error", "unsupported", "i/o error", "internal error",
        "communication error",
    };
    if ((unsigned)s >= sizeof names / sizeof names[0])
        return tjc_error(TJ_ERR_ARG, "tj_status_name: invalid status %d", (int)s), "unknown status";
    return names[s];
}

const char *tjc_fmt_sizes(char *buf, size_t n, const int64_t *sizes, int ndim) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, n - at, "[");
    for (int d = 0; d < ndim && at < n; d++)
        at += (size_t)snprintf(buf + at, n - at, d ? ", %lld" : "%lld", (long long)sizes[d]);
    if (at < n) snprintf(buf + at, n - at, "]");
    return buf;
}

tj_status tjc_wrap_dim(const char *op, int64_t dim, int ndim, int *out) {
    int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
    if (dim < lo || dim > hi)
        return tjc_error(TJ_ERR_ARG, "%s: dim %lld is out of range for a tensor of %d dims "
                         "(expected a dim in [%lld, %lld])",
                         op, (long long)dim, ndim, (long long)lo, (long long)hi);
    if (dim < 0) dim += ndim > 0 ? ndim : 1;
    *out = (int)dim;
    return TJ_OK;
}
