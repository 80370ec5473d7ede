/* collectives.c — the tj_dist_* collectives on tensors: their argument
 * checks, the contiguous buffers they run on, and their handles
 * (tj_dist_wait, tj_dist_test). The group's thread runs them (group.c).
 *
 * A non-contiguous tensor is copied into a contiguous buffer owned by the
 * collective, and a non-contiguous result copied back when it completes.
 * AVG is a sum divided by the world size, for f32 and f64 only (an integer
 * average would truncate); a backend that averages itself (NCCL) gets AVG. bool tensors reduce as logic: SUM and MAX are or,
 * MIN is and.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "distributed/dist.h"

/* Copies between t's elements (row-major order) and the contiguous buf. */
static void strided_copy(tj_tensor *t, void *buf, bool into_tensor) {
    size_t es = tj_dtype_size(t->dtype);
    int64_t n = tjc_numel(t->sizes, t->ndim), idx[TJ_MAX_DIMS] = {0};
    char *base = tjc_data_ptr(t), *b = buf;
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        if (into_tensor) memcpy(base + off * (int64_t)es, b + i * (int64_t)es, es);
        else memcpy(b + i * (int64_t)es, base + off * (int64_t)es, es);
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->sizes[d]; d--) idx[d] = 0;
    }
}

void tjd_work_complete(tj_dist_work *w) {
    if (w->avg_divisor > 0) {
        if (w->args.dtype == TJ_F32) {
            float *p = w->args.recv;
            for (int64_t i = 0; i < w->args.count; i++) p[i] = (float)(p[i] / w->avg_divisor);
        } else {
            double *p = w->args.recv;
            for (int64_t i = 0; i < w->args.count; i++) p[i] /= w->avg_divisor;
        }
    }
    if (w->unpack_into) strided_copy(w->unpack_into, w->tmp, true);
}

void tjd_work_free(tj_dist_work *w) {
    if (!w) return;
    free(w->tmp);
    free(w->tmp_send);
    if (w->args.ready_free) w->args.ready_free(w->args.ready);
    tj_release(w->held[0]);
    tj_release(w->held[1]);
    free(w);
}

/* ---- argument checks ------------------------------------------------------------------ */

#define RETURN_IF_ERROR(expr)                  \
    do {                                       \
        tj_status st_ = (expr);                \
        if (st_ != TJ_OK) return st_;          \
    } while (0)

static tj_status check_tensor(const char *coll, const char *arg, const tj_tensor *t, tjd_backend *b,
                              bool is_result) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "%s: %s is NULL", coll, arg);
    tjc_check_live(t, coll);
    tj_device dev = tj_tensor_device(t);
    if (dev.type != b->device) {
        char have[32], want[32];
        tj_device_to_string(dev, have, sizeof have);
        tj_device_to_string((tj_device){b->device, 0}, want, sizeof want);
        return tjc_error(TJ_ERR_DEVICE, "%s: %s is on %s; the %s backend takes %s tensors", coll, arg,
                         have, b->name, b->device == TJ_CPU ? "cpu" : "cuda");
    }
    if (b->check_tensor) RETURN_IF_ERROR(b->check_tensor(b, coll, arg, t));
    if (is_result && tjc_has_internal_overlap(t))
        return tjc_error(TJ_ERR_ARG, "%s: %s has overlapping elements (an expanded view); a "
                         "collective cannot write into it", coll, arg);
    return TJ_OK;
}

/* Counts past what the backend takes are refused on every rank alike. */
static tj_status check_count(const char *coll, const char *arg, int64_t count, const tjd_backend *b) {
    if (count <= b->max_count) return TJ_OK;
    return tjc_error(TJ_ERR_UNSUPPORTED, "%s: %s has %lld elements; the %s backend moves at most "
                     "%lld per rank in one collective", coll, arg, (long long)count, b->name,
                     (long long)b->max_count);
}

static tj_status check_op(const char *coll, tj_reduce_op op, tj_dtype dtype) {
    if ((unsigned)op > TJ_REDUCE_MIN)
        return tjc_error(TJ_ERR_ARG, "%s: reduce op %d is not one of TJ_REDUCE_SUM, AVG, MAX, MIN",
                         coll, (int)op);
    if (op == TJ_REDUCE_AVG && !tj_dtype_is_float(dtype))
        return tjc_error(TJ_ERR_DTYPE, "%s: avg of %s tensors is refused (an integer average "
                         "would truncate); use sum, then divide", coll, tj_dtype_name(dtype));
    return TJ_OK;
}

/* ---- buffers and submission -------------------------------------------------------- */

static tj_dist_work *new_work(const char *coll, tjd_coll_kind kind) {
    tj_dist_work *w = calloc(1, sizeof *w);
    if (!w) {
        tjc_error(TJ_ERR_MEMORY, "%s: out of memory", coll);
        return NULL;
    }
    w->args.kind = kind;
    w->args.root = 0;
    return w;
}

/* The contiguous buffer a collective reads t from (t's own memory when it is
 * contiguous); for a result, copied back when the collective completes. */
static tj_status buffer_of(const char *coll, tj_dist_work *w, tj_tensor *t, bool is_result,
                           void **out) {
    if (tj_is_contiguous(t)) {
        *out = tjc_data_ptr(t);
        return TJ_OK;
    }
    size_t bytes = (size_t)tj_numel(t) * tj_dtype_size(t->dtype);
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) return tjc_error(TJ_ERR_MEMORY, "%s: out of memory for a contiguous copy (%zu bytes)",
                               coll, bytes);
    strided_copy(t, buf, false);
    if (is_result) {
        w->tmp = buf;
        w->unpack_into = t;
    } else {
        w->tmp_send = buf;
    }
    *out = buf;
    return TJ_OK;
}

/* Queues w; with work NULL waits for it and frees it, else hands it over. */
static tj_status submit(tjd_backend *b, tj_dist_group *group, tj_dist_work *w, tj_dist_work **work) {
    tj_status st = b->prepare ? b->prepare(b, &w->args) : TJ_OK;
    if (st == TJ_OK) st = tjd_group_submit(group, w);
    if (st != TJ_OK) {
        tjd_work_free(w);
        return st;
    }
    if (work) {
        *work = w;
        return TJ_OK;
    }
    st = tjd_work_finish(w);
    tjd_work_free(w);
    return st;
}

/* ---- the collectives ----------------------------------------------------------------- */

/* A collective that works on t itself (all_reduce, broadcast): its buffer
 * (t's own, or a contiguous copy) and t held until the item is freed. */
static tj_status in_place_work(const char *coll, tjd_coll_kind kind, tj_tensor *t, tj_dist_work **out) {
    tj_dist_work *w = new_work(coll, kind);
    if (!w) return TJ_ERR_MEMORY;
    tj_status st = buffer_of(coll, w, t, true, &w->args.recv);
    if (st != TJ_OK) {
        tjd_work_free(w);
        return st;
    }
    w->args.dtype = t->dtype;
    w->args.count = tj_numel(t);
    w->held[0] = tj_retain(t);
    *out = w;
    return TJ_OK;
}

tj_status tj_dist_all_reduce(tj_tensor *t, tj_reduce_op op, tj_dist_group *group, tj_dist_work **work) {
    static const char coll[] = "tj_dist_all_reduce";
    tjd_backend *b;
    if (work) *work = NULL;
    RETURN_IF_ERROR(tjd_group_resolve(group, coll, &b));
    RETURN_IF_ERROR(check_tensor(coll, "t", t, b, true));
    RETURN_IF_ERROR(check_op(coll, op, t->dtype));
    RETURN_IF_ERROR(check_count(coll, "t", tj_numel(t), b));
    tj_dist_work *w;
    RETURN_IF_ERROR(in_place_work(coll, TJD_ALL_REDUCE, t, &w));
    bool divide = op == TJ_REDUCE_AVG && !b->native_avg;
    w->args.op = divide ? TJ_REDUCE_SUM : op;
    w->avg_divisor = divide && b->world_size > 1 ? (double)b->world_size : 0; /* by 1: nothing to do */
    return submit(b, group, w, work);
}

tj_status tj_dist_broadcast(tj_tensor *t, int root, tj_dist_group *group, tj_dist_work **work) {
    static const char coll[] = "tj_dist_broadcast";
    tjd_backend *b;
    if (work) *work = NULL;
    RETURN_IF_ERROR(tjd_group_resolve(group, coll, &b));
    RETURN_IF_ERROR(check_tensor(coll, "t", t, b, true));
    if (root < 0 || root >= b->world_size)
        return tjc_error(TJ_ERR_ARG, "%s: root %d is not a rank of the group (0 to %d)", coll, root,
                         b->world_size - 1);
    RETURN_IF_ERROR(check_count(coll, "t", tj_numel(t), b));
    tj_dist_work *w;
    RETURN_IF_ERROR(in_place_work(coll, TJD_BROADCAST, t, &w));
    w->args.root = root;
    return submit(b, group, w, work);
}

/* all_gather and reduce_scatter: a small and a large tensor, one world_size
 * times the other, of one dtype, not overlapping. */
static tj_status check_pair(const char *coll, tj_tensor *out, const tj_tensor *in, tjd_backend *b,
                            bool out_is_large) {
    RETURN_IF_ERROR(check_tensor(coll, "out", out, b, true));
    RETURN_IF_ERROR(check_tensor(coll, "in", in, b, false));
    if (out->dtype != in->dtype)
        return tjc_error(TJ_ERR_DTYPE, "%s: out is %s and in is %s; they must match", coll,
                         tj_dtype_name(out->dtype), tj_dtype_name(in->dtype));
    const tj_tensor *small = out_is_large ? in : out, *large = out_is_large ? out : in;
    if (tj_numel(large) != tj_numel(small) * b->world_size) {
        char ss[TJC_SIZES_BUF], ls[TJC_SIZES_BUF];
        tjc_fmt_sizes(ss, sizeof ss, small->sizes, small->ndim);
        tjc_fmt_sizes(ls, sizeof ls, large->sizes, large->ndim);
        return tjc_error(TJ_ERR_SHAPE, "%s: %s %s has %lld elements; it needs world size %d times "
                         "%s's %lld (%s %s)", coll, out_is_large ? "out" : "in", ls,
                         (long long)tj_numel(large), b->world_size, out_is_large ? "in" : "out",
                         (long long)tj_numel(small), out_is_large ? "in" : "out", ss);
    }
    if (tj_numel(out) > 0 && tj_numel(in) > 0 && tjc_may_overlap(out, in))
        return tjc_error(TJ_ERR_ARG, "%s: out and in share memory; give the result its own tensor",
                         coll);
    return TJ_OK;
}

static tj_status pair_collective(const char *coll, tjd_coll_kind kind, tj_tensor *out,
                                 const tj_tensor *in, tj_reduce_op op, tj_dist_group *group,
                                 tj_dist_work **work) {
    tjd_backend *b;
    if (work) *work = NULL;
    RETURN_IF_ERROR(tjd_group_resolve(group, coll, &b));
    RETURN_IF_ERROR(check_pair(coll, out, in, b, kind == TJD_ALL_GATHER));
    if (kind == TJD_REDUCE_SCATTER) RETURN_IF_ERROR(check_op(coll, op, in->dtype));
    if (kind == TJD_ALL_GATHER) RETURN_IF_ERROR(check_count(coll, "in", tj_numel(in), b));
    else RETURN_IF_ERROR(check_count(coll, "out", tj_numel(out), b));
    tj_dist_work *w = new_work(coll, kind);
    if (!w) return TJ_ERR_MEMORY;
    void *send = NULL;
    tj_status st = buffer_of(coll, w, (tj_tensor *)in, false, &send);
    if (st == TJ_OK) st = buffer_of(coll, w, out, true, &w->args.recv);
    if (st != TJ_OK) {
        tjd_work_free(w);
        return st;
    }
    w->args.send = send;
    w->args.dtype = in->dtype;
    w->args.count = kind == TJD_ALL_GATHER ? tj_numel(in) : tj_numel(out);
    bool divide = kind == TJD_REDUCE_SCATTER && op == TJ_REDUCE_AVG && !b->native_avg;
    w->args.op = divide ? TJ_REDUCE_SUM : op;
    w->avg_divisor = divide && b->world_size > 1 ? (double)b->world_size : 0; /* by 1: nothing to do */
    w->held[0] = tj_retain(out);
    w->held[1] = tj_retain((tj_tensor *)in);
    return submit(b, group, w, work);
}

tj_status tj_dist_all_gather(tj_tensor *out, const tj_tensor *in, tj_dist_group *group,
                             tj_dist_work **work) {
    return pair_collective("tj_dist_all_gather", TJD_ALL_GATHER, out, in, TJ_REDUCE_SUM, group, work);
}

tj_status tj_dist_reduce_scatter(tj_tensor *out, const tj_tensor *in, tj_reduce_op op,
                                 tj_dist_group *group, tj_dist_work **work) {
    return pair_collective("tj_dist_reduce_scatter", TJD_REDUCE_SCATTER, out, in, op, group, work);
}

tj_status tj_dist_barrier(tj_dist_group *group, tj_dist_work **work) {
    static const char coll[] = "tj_dist_barrier";
    tjd_backend *b;
    if (work) *work = NULL;
    RETURN_IF_ERROR(tjd_group_resolve(group, coll, &b));
    tj_dist_work *w = new_work(coll, TJD_BARRIER);
    if (!w) return TJ_ERR_MEMORY;
    return submit(b, group, w, work);
}

/* ---- handles ------------------------------------------------------------------------- */

tj_status tj_dist_wait(tj_dist_work *work) {
    if (!work) return TJ_OK;
    tj_status st = tjd_work_finish(work);
    tjd_work_free(work);
    return st;
}

tj_status tj_dist_test(tj_dist_work *work, bool *done) {
    if (!work || !done)
        return tjc_error(TJ_ERR_ARG, "tj_dist_test: %s is NULL", work ? "done" : "work");
    *done = tjd_work_is_done(work);
    /* a collective that failed says so here too (tj_dist_wait returns the same) */
    return *done ? tjd_work_finish(work) : TJ_OK;
}
