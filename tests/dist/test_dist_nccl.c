/* test_dist_nccl.c — the NCCL backend's collectives on CUDA tensors against
 * the same computation done on the CPU (label gpu). Alone it is a world of
 * one; under mpirun every rank takes its own GPU. Exits 77 (skipped) where
 * there is no GPU, or fewer GPUs than ranks. Each rank builds every rank's
 * inputs from the rank number, so all expectations are computed locally:
 * each dtype (f32 f64 i64 bool), sizes 0, 1, 1001 and 2^20 + 3, every
 * reduction, blocking and with handles outstanding together, inputs just
 * written by a kernel on the caller's stream, and the tensors refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tjit/distributed.h"

static int rank, world;
static long cases;
static tj_device gpu;

enum { ALL_REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER };
static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};
static const int64_t lengths[] = {0, 1, 1001, (1 << 20) + 3};

/* Exact in every dtype, so sums agree whatever order NCCL adds in. */
static double input_value(tj_dtype d, int r, int64_t i, int seed) {
    uint64_t s = ((uint64_t)r << 48) ^ ((uint64_t)seed << 36) ^ (uint64_t)i;
    uint64_t h = tt_splitmix64(&s);
    switch (d) {
    case TJ_F32:
    case TJ_F64: return (double)((int64_t)(h % 33) - 16) * 0.25;
    case TJ_I64: return (double)((int64_t)(h % 2001) - 1000) * 1000003.0;
    default: return (double)(h % 3 == 0);
    }
}

/* Rank r's input on the GPU (elements [first, first + n) of it). */
static tj_tensor *input(tj_dtype d, int r, int64_t first, int64_t n, int seed) {
    size_t es = tj_dtype_size(d);
    char *buf = malloc((size_t)(n ? n : 1) * es);
    assert_non_null(buf);
    for (int64_t i = 0; i < n; i++) {
        double v = input_value(d, r, first + i, seed);
        switch (d) {
        case TJ_F32: ((float *)buf)[i] = (float)v; break;
        case TJ_F64: ((double *)buf)[i] = v; break;
        case TJ_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
        default: ((bool *)buf)[i] = v != 0; break;
        }
    }
    tj_tensor *host = tj_from_array(buf, (const int64_t[]){n}, 1, d);
    free(buf);
    assert_non_null(host);
    tj_tensor *t = tj_to_device(host, gpu);
    if (!t) fail_msg("tj_to_device: %s", tj_last_error());
    return t;
}

static tj_tensor *zeros(tj_dtype d, int64_t n) {
    tj_tensor *t = tj_zeros_on((const int64_t[]){n}, 1, d, gpu);
    if (!t) fail_msg("tj_zeros_on: %s", tj_last_error());
    return t;
}

static double fold(tj_reduce_op op, tj_dtype d, double acc, double v) {
    if (d == TJ_BOOL) return op == TJ_REDUCE_MIN ? (acc && v) : (acc || v);
    switch (op) {
    case TJ_REDUCE_MAX: return v > acc ? v : acc;
    case TJ_REDUCE_MIN: return v < acc ? v : acc;
    default: return acc + v;
    }
}

static double reduced(tj_reduce_op op, tj_dtype d, int64_t i, int seed) {
    double acc = input_value(d, 0, i, seed);
    for (int r = 1; r < world; r++) acc = fold(op, d, acc, input_value(d, r, i, seed));
    if (op == TJ_REDUCE_AVG) acc /= world;
    return d == TJ_F32 ? (double)(float)acc : acc;
}

typedef struct coll_case {
    int kind;
    tj_reduce_op op;
    int root;
    tj_dtype dtype;
    int64_t n;
    int seed;
    tj_tensor *result, *in;
    tj_dist_work *work;
} coll_case;

static void prepare(coll_case *c, int kind, tj_reduce_op op, tj_dtype d, int64_t n, int seed) {
    *c = (coll_case){.kind = kind, .op = op, .root = seed % world, .dtype = d, .n = n, .seed = seed};
    switch (kind) {
    case ALL_REDUCE:
    case BROADCAST: c->result = input(d, rank, 0, n, seed); break;
    case ALL_GATHER:
        c->in = input(d, rank, 0, n, seed);
        c->result = zeros(d, n * world);
        break;
    default:
        c->in = input(d, rank, 0, n * world, seed);
        c->result = zeros(d, n);
        break;
    }
}

static tj_status start(coll_case *c, bool blocking) {
    tj_dist_work **w = blocking ? NULL : &c->work;
    switch (c->kind) {
    case ALL_REDUCE: return tj_dist_all_reduce(c->result, c->op, NULL, w);
    case BROADCAST: return tj_dist_broadcast(c->result, c->root, NULL, w);
    case ALL_GATHER: return tj_dist_all_gather(c->result, c->in, NULL, w);
    default: return tj_dist_reduce_scatter(c->result, c->in, c->op, NULL, w);
    }
}

static void verify(const coll_case *c) {
    static const char *const kinds[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter"};
    static const char *const ops[] = {"sum", "avg", "max", "min"};
    tj_tensor *host = tj_to_device(c->result, TJ_DEVICE_CPU);
    if (!host) fail_msg("copy to the host: %s", tj_last_error());
    tt_ref got = tt_ref_of(host);
    for (int64_t i = 0; i < got.numel; i++) {
        double want;
        switch (c->kind) {
        case ALL_REDUCE: want = reduced(c->op, c->dtype, i, c->seed); break;
        case BROADCAST: want = input_value(c->dtype, c->root, i, c->seed); break;
        case ALL_GATHER: want = input_value(c->dtype, (int)(i / c->n), i % c->n, c->seed); break;
        default: want = reduced(c->op, c->dtype, rank * c->n + i, c->seed); break;
        }
        if (got.v[i] != want)
            fail_msg("rank %d: %s %s of %s, %lld elements per rank: element %lld is %.17g, expected "
                     "%.17g", rank, kinds[c->kind], ops[c->op], tj_dtype_name(c->dtype),
                     (long long)c->n, (long long)i, got.v[i], want);
    }
    tt_ref_free(&got);
    cases++;
}

static int all_cases(coll_case *cs, tj_dtype d, int64_t n, int seed) {
    int k = 0;
    for (tj_reduce_op op = TJ_REDUCE_SUM; op <= TJ_REDUCE_MIN; op++) {
        if (op == TJ_REDUCE_AVG && !tj_dtype_is_float(d)) continue;
        prepare(&cs[k], ALL_REDUCE, op, d, n, seed + k);
        k++;
        prepare(&cs[k], REDUCE_SCATTER, op, d, n, seed + k);
        k++;
    }
    prepare(&cs[k], BROADCAST, TJ_REDUCE_SUM, d, n, seed + k);
    prepare(&cs[k + 1], ALL_GATHER, TJ_REDUCE_SUM, d, n, seed + k + 1);
    return k + 2;
}

static void blocking_collectives_match_the_cpu(void **state) {
    (void)state;
    for (size_t di = 0; di < 4; di++)
        for (size_t li = 0; li < 4; li++) {
            tj_scope_begin();
            coll_case cs[16];
            int k = all_cases(cs, dtypes[di], lengths[li], (int)(di * 100 + li * 10));
            for (int i = 0; i < k; i++) {
                if (start(&cs[i], true) != TJ_OK) fail_msg("%s", tj_last_error());
                verify(&cs[i]);
            }
            tj_scope_end();
        }
}

static void handles_outstanding_together(void **state) {
    (void)state;
    for (size_t di = 0; di < 4; di++)
        for (size_t li = 0; li < 4; li++) {
            tj_scope_begin();
            coll_case cs[16];
            int k = all_cases(cs, dtypes[di], lengths[li], (int)(di * 100 + li * 10 + 5));
            for (int i = 0; i < k; i++) assert_int_equal(start(&cs[i], false), TJ_OK);
            bool done = false;
            while (!done) assert_int_equal(tj_dist_test(cs[0].work, &done), TJ_OK);
            for (int i = k - 1; i >= 0; i--) {
                assert_int_equal(tj_dist_wait(cs[i].work), TJ_OK);
                verify(&cs[i]);
            }
            tj_scope_end();
        }
}

/* The collective follows the kernels the caller queued just before it: a
 * large product still running on this thread's stream when it is called. */
static void collectives_follow_the_callers_kernels(void **state) {
    (void)state;
    const int64_t n = 1 << 22;
    for (int round = 0; round < 4; round++) {
        tj_tensor *a = tj_full_on((const int64_t[]){n}, 1, 3.0, TJ_F32, gpu);
        tj_tensor *b = tj_full_on((const int64_t[]){n}, 1, (double)(rank + round), TJ_F32, gpu);
        assert_non_null(a);
        assert_non_null(b);
        tj_tensor *x = tj_mul(a, b); /* queued, not waited for */
        assert_non_null(x);
        assert_int_equal(tj_dist_all_reduce(x, TJ_REDUCE_SUM, NULL, NULL), TJ_OK);
        double want = 0;
        for (int r = 0; r < world; r++) want += 3.0 * (r + round);
        assert_true(tj_get(x, (const int64_t[]){0}) == want);
        assert_true(tj_get(x, (const int64_t[]){n - 1}) == want);
        cases++;
    }
}

static void barrier_and_group_queries(void **state) {
    (void)state;
    assert_string_equal(tj_dist_backend(), "nccl");
    assert_int_equal(tj_dist_barrier(NULL, NULL), TJ_OK);
    tj_dist_work *w = NULL;
    assert_int_equal(tj_dist_barrier(NULL, &w), TJ_OK);
    assert_int_equal(tj_dist_wait(w), TJ_OK);
    cases += 2;
}

static void wrong_tensors_are_refused(void **state) {
    (void)state;
    tj_tensor *cpu = tj_ones((const int64_t[]){4}, 1, TJ_F32);
    assert_int_equal(tj_dist_all_reduce(cpu, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_DEVICE);
    tt_assert_error("tj_dist_all_reduce: t is on cpu; the nccl backend takes cuda tensors");
    tj_tensor *g = zeros(TJ_F32, 4 * world);
    assert_int_equal(tj_dist_all_gather(g, cpu, NULL, NULL), TJ_ERR_DEVICE);
    tt_assert_error("tj_dist_all_gather: in is on cpu");
    tj_tensor *m = tj_zeros_on((const int64_t[]){3, 5}, 2, TJ_F32, gpu);
    tj_tensor *mt = tj_transpose(m, 0, 1);
    assert_non_null(mt);
    assert_int_equal(tj_dist_all_reduce(mt, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("t is not contiguous; the nccl backend takes contiguous CUDA tensors");
    tj_tensor *ti = zeros(TJ_I64, 3);
    assert_int_equal(tj_dist_all_reduce(ti, TJ_REDUCE_AVG, NULL, NULL), TJ_ERR_DTYPE);
    tt_assert_error("avg of i64");
    if (tj_device_count(TJ_CUDA) > 1) {
        tj_tensor *other = tj_zeros_on((const int64_t[]){3}, 1, TJ_F32,
                                       TJ_DEVICE_CUDA((gpu.index + 1) % tj_device_count(TJ_CUDA)));
        assert_int_equal(tj_dist_all_reduce(other, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_DEVICE);
        tt_assert_error("this rank's NCCL communicator is on cuda:");
    }
    /* the group goes on, in step */
    tj_tensor *one = tj_ones_on((const int64_t[]){3}, 1, TJ_I64, gpu);
    assert_int_equal(tj_dist_all_reduce(one, TJ_REDUCE_SUM, NULL, NULL), TJ_OK);
    assert_true(tj_get(one, (const int64_t[]){2}) == (double)world);
    cases++;
}

int main(void) {
    const char *mpi_size = getenv("OMPI_COMM_WORLD_SIZE");
    int ranks = mpi_size ? atoi(mpi_size) : 1;
    if (!tj_cuda_is_available() || tj_device_count(TJ_CUDA) < ranks) {
        printf("skipped: %d rank(s) need as many GPUs; %d found (%s)\n", ranks,
               tj_device_count(TJ_CUDA), tj_last_error());
        return 77;
    }
    if (tj_dist_init("nccl", &(tj_dist_options){.timeout_s = 120}) != TJ_OK) {
        fprintf(stderr, "tj_dist_init(\"nccl\"): %s\n", tj_last_error());
        return 1;
    }
    rank = tj_dist_rank();
    world = tj_dist_world_size();
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    gpu = TJ_DEVICE_CUDA(lr ? atoi(lr) : rank % tj_device_count(TJ_CUDA));
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(barrier_and_group_queries),
        TT_SCOPED_TEST(blocking_collectives_match_the_cpu),
        TT_SCOPED_TEST(handles_outstanding_together),
        TT_SCOPED_TEST(collectives_follow_the_callers_kernels),
        TT_SCOPED_TEST(wrong_tensors_are_refused),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (rank == 0) printf("NCCL collective cases: %ld (world size %d)\n", cases, world);
    if (tj_dist_finalize() != TJ_OK) {
        fprintf(stderr, "tj_dist_finalize: %s\n", tj_last_error());
        return 1;
    }
    return failed ? 1 : 0;
}
