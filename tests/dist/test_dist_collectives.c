/* test_dist_collectives.c — every collective against the same computation
 * done on one process. Run by ctest under mpirun with 2 and 3 ranks, and
 * alone (MPI's singleton: a world of one). Each rank builds every rank's
 * inputs from the rank number and computes the expected results itself.
 * Covers each dtype, sizes 0, 1, 1001 and 2^20 + 3 (4 to 8 MB), blocking
 * calls and many handles outstanding at once waited out of order,
 * non-contiguous tensors, and the errors a rank detects alone. Rank 0 prints
 * how many cases were checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tjit/distributed.h"

static int rank, world;
static long cases;
static tj_generator *gen;

enum { ALL_REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER };
static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};
static const int64_t lengths[] = {0, 1, 1001, (1 << 20) + 3};

/* Rank r's element i of input `seed`: exact in every dtype, so that sums
 * are exact whatever order MPI adds in. */
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

/* A 1-D tensor of n elements (1001 as [7, 143]) holding rank r's input,
 * elements [first, first + n) of it; non-contiguous on request. */
static tj_tensor *input(tj_dtype d, int r, int64_t first, int64_t n, int seed, bool strided) {
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
    int64_t sizes[2] = {n, 0};
    int ndim = 1;
    if (n == 1001) sizes[0] = 7, sizes[1] = 143, ndim = 2;
    tj_tensor *t = tj_from_array(buf, sizes, ndim, d);
    free(buf);
    assert_non_null(t);
    if (strided) {
        t = tt_noncontiguous(gen, t);
        if (n > 1) assert_false(tj_is_contiguous(t));
    }
    return t;
}

static tj_tensor *zeros(tj_dtype d, int64_t n, bool strided) {
    tj_tensor *t = tj_zeros((const int64_t[]){n}, 1, d);
    assert_non_null(t);
    return strided ? tt_noncontiguous(gen, t) : t;
}

static double fold(tj_reduce_op op, tj_dtype d, double acc, double v) {
    if (d == TJ_BOOL) return op == TJ_REDUCE_MIN ? (acc && v) : (acc || v);
    switch (op) {
    case TJ_REDUCE_MAX: return v > acc ? v : acc;
    case TJ_REDUCE_MIN: return v < acc ? v : acc;
    default: return acc + v;
    }
}

/* The reduction over ranks of element i of input seed, as the dtype holds it. */
static double reduced(tj_reduce_op op, tj_dtype d, int64_t i, int seed) {
    double acc = input_value(d, 0, i, seed);
    for (int r = 1; r < world; r++) acc = fold(op, d, acc, input_value(d, r, i, seed));
    if (op == TJ_REDUCE_AVG) acc /= world;
    return d == TJ_F32 ? (double)(float)acc : acc;
}

/* One collective's tensors and what its result must be. */
typedef struct coll_case {
    int kind;
    tj_reduce_op op;
    int root;
    tj_dtype dtype;
    int64_t n; /* elements per rank */
    int seed;
    tj_tensor *result, *in;
    tj_dist_work *work;
} coll_case;

static void prepare(coll_case *c, int kind, tj_reduce_op op, tj_dtype d, int64_t n, int seed,
                    bool strided) {
    *c = (coll_case){.kind = kind, .op = op, .root = seed % world, .dtype = d, .n = n, .seed = seed};
    switch (kind) {
    case ALL_REDUCE:
    case BROADCAST: c->result = input(d, rank, 0, n, seed, strided); break;
    case ALL_GATHER:
        c->in = input(d, rank, 0, n, seed, strided);
        c->result = zeros(d, n * world, strided);
        break;
    default: /* reduce_scatter: this rank's full input of world * n elements */
        c->in = input(d, rank, 0, n * world, seed, strided);
        c->result = zeros(d, n, strided);
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
    tt_ref got = tt_ref_of(c->result);
    for (int64_t i = 0; i < got.numel; i++) {
        double want;
        switch (c->kind) {
        case ALL_REDUCE: want = reduced(c->op, c->dtype, i, c->seed); break;
        case BROADCAST: want = input_value(c->dtype, c->root, i, c->seed); break;
        case ALL_GATHER: want = input_value(c->dtype, (int)(i / c->n), i % c->n, c->seed); break;
        default: want = reduced(c->op, c->dtype, rank * c->n + i, c->seed); break;
        }
        if (got.v[i] != want)
            fail_msg("rank %d: %s %s of %s, %lld elements per rank%s: element %lld is %.17g, "
                     "expected %.17g", rank, kinds[c->kind], ops[c->op], tj_dtype_name(c->dtype),
                     (long long)c->n, tj_is_contiguous(c->result) ? "" : " (non-contiguous)",
                     (long long)i, got.v[i], want);
    }
    tt_ref_free(&got);
    cases++;
}

/* Every collective and reduction that dtype d takes, as cases into cs. */
static int all_cases(coll_case *cs, tj_dtype d, int64_t n, int seed, bool strided) {
    int k = 0;
    for (tj_reduce_op op = TJ_REDUCE_SUM; op <= TJ_REDUCE_MIN; op++) {
        if (op == TJ_REDUCE_AVG && !tj_dtype_is_float(d)) continue;
        prepare(&cs[k], ALL_REDUCE, op, d, n, seed + k, strided);
        k++;
        prepare(&cs[k], REDUCE_SCATTER, op, d, n, seed + k, strided);
        k++;
    }
    prepare(&cs[k], BROADCAST, TJ_REDUCE_SUM, d, n, seed + k, strided);
    prepare(&cs[k + 1], ALL_GATHER, TJ_REDUCE_SUM, d, n, seed + k + 1, strided);
    return k + 2;
}

static void blocking_collectives_match_one_process(void **state) {
    (void)state;
    for (size_t di = 0; di < 4; di++)
        for (size_t li = 0; li < 4; li++)
            for (int strided = 0; strided < 2; strided++) {
                tj_scope_begin();
                coll_case cs[16];
                int k = all_cases(cs, dtypes[di], lengths[li], (int)(di * 100 + li * 10), strided);
                for (int i = 0; i < k; i++) {
                    assert_int_equal(start(&cs[i], true), TJ_OK);
                    verify(&cs[i]);
                }
                tj_scope_end();
            }
}

/* Every case of a dtype and size outstanding at once, waited last to first
 * (and polled with tj_dist_test first). */
static void handles_outstanding_together_waited_out_of_order(void **state) {
    (void)state;
    for (size_t di = 0; di < 4; di++)
        for (size_t li = 0; li < 4; li++) {
            tj_scope_begin();
            coll_case cs[16];
            int k = all_cases(cs, dtypes[di], lengths[li], (int)(di * 100 + li * 10 + 5), li == 2);
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

/* Many small all-reduces in flight: each rank's thread starts them in call order. */
static void many_handles_in_flight(void **state) {
    (void)state;
    enum { N = 64 };
    coll_case cs[N];
    for (int i = 0; i < N; i++) {
        prepare(&cs[i], ALL_REDUCE, (tj_reduce_op)(i % 4), TJ_F64, 1 + i * 37, 1000 + i, false);
        assert_int_equal(start(&cs[i], false), TJ_OK);
    }
    for (int i = 0; i < N; i++) {
        int j = (i * 29) % N; /* every index once, scattered */
        assert_int_equal(tj_dist_wait(cs[j].work), TJ_OK);
        verify(&cs[j]);
    }
}

/* Sums of arbitrary floats depend on the order they are added in; every
 * rank must still get the same bits (data-parallel replicas stay identical). */
static void every_rank_gets_the_same_bits(void **state) {
    (void)state;
    for (int d = 0; d < 2; d++)
        for (int op = TJ_REDUCE_SUM; op <= TJ_REDUCE_AVG; op++)
            for (int64_t n = 1001; n <= (1 << 20) + 3; n += (1 << 20) + 2 - 1001) {
                tj_dtype dt = d ? TJ_F64 : TJ_F32;
                tj_tensor *t = tt_random(gen, (const int64_t[]){n}, 1, dt, -1e3, 1e3);
                assert_int_equal(tj_dist_all_reduce(t, (tj_reduce_op)op, NULL, NULL), TJ_OK);
                tj_tensor *all = zeros(dt, n * world, false);
                assert_int_equal(tj_dist_all_gather(all, t, NULL, NULL), TJ_OK);
                size_t bytes = (size_t)n * tj_dtype_size(dt);
                for (int r = 0; r < world; r++)
                    if (memcmp((char *)tj_data(all) + (size_t)r * bytes, tj_data(t), bytes))
                        fail_msg("rank %d: the %s %s all-reduce of %lld elements differs from rank %d's",
                                 rank, tj_dtype_name(dt), op ? "avg" : "sum", (long long)n, r);
                cases++;
            }
}

static void barrier_and_group_queries(void **state) {
    (void)state;
    assert_true(tj_dist_is_initialized());
    assert_non_null(tj_dist_world());
    assert_string_equal(tj_dist_backend(), "mpi");
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    assert_int_equal(world, size ? atoi(size) : 1);
    assert_true(rank >= 0 && rank < world);
    assert_int_equal(tj_dist_barrier(NULL, NULL), TJ_OK);
    tj_dist_work *w = NULL;
    assert_int_equal(tj_dist_barrier(tj_dist_world(), &w), TJ_OK);
    assert_non_null(w);
    assert_int_equal(tj_dist_wait(w), TJ_OK);
    assert_int_equal(tj_dist_wait(NULL), TJ_OK);
    cases += 2;
}

#define REFUSED(call, status, needle)                \
    do {                                             \
        tj_clear_error();                            \
        assert_int_equal((call), (status));          \
        tt_assert_error(needle);                     \
        cases++;                                     \
    } while (0)

/* What a rank detects alone: refused before anything is sent, so the ranks
 * stay in step (the all-reduce at the end checks that). */
static void errors_are_refused_naming_the_collective(void **state) {
    (void)state;
    tj_tensor *t = input(TJ_F32, rank, 0, 6, 1, false);
    tj_tensor *small = zeros(TJ_F32, 5, false), *big = zeros(TJ_F32, 6 * world + 1, false);
    tj_dist_work *w = (tj_dist_work *)&rank; /* set to NULL on refusal */
    REFUSED(tj_dist_all_reduce(NULL, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_ARG, "tj_dist_all_reduce: t is NULL");
    REFUSED(tj_dist_broadcast(NULL, 0, NULL, &w), TJ_ERR_ARG, "tj_dist_broadcast: t is NULL");
    assert_null(w);
    REFUSED(tj_dist_all_gather(NULL, t, NULL, NULL), TJ_ERR_ARG, "tj_dist_all_gather: out is NULL");
    REFUSED(tj_dist_all_gather(big, NULL, NULL, NULL), TJ_ERR_ARG, "tj_dist_all_gather: in is NULL");
    REFUSED(tj_dist_reduce_scatter(small, NULL, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_ARG,
            "tj_dist_reduce_scatter: in is NULL");
    REFUSED(tj_dist_test(NULL, &(bool){false}), TJ_ERR_ARG, "tj_dist_test: work is NULL");
    REFUSED(tj_dist_broadcast(t, world, NULL, NULL), TJ_ERR_ARG, "tj_dist_broadcast: root");
    REFUSED(tj_dist_broadcast(t, -1, NULL, NULL), TJ_ERR_ARG, "is not a rank of the group");
    REFUSED(tj_dist_all_reduce(t, (tj_reduce_op)7, NULL, NULL), TJ_ERR_ARG, "reduce op 7");
    REFUSED(tj_dist_all_gather(big, t, NULL, NULL), TJ_ERR_SHAPE, "tj_dist_all_gather: out");
    REFUSED(tj_dist_all_gather(small, t, NULL, NULL), TJ_ERR_SHAPE, "world size");
    REFUSED(tj_dist_reduce_scatter(small, t, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_SHAPE,
            "tj_dist_reduce_scatter: in");
    tj_tensor *ti = input(TJ_I64, rank, 0, 6, 1, false), *tb = input(TJ_BOOL, rank, 0, 6, 1, false);
    REFUSED(tj_dist_all_reduce(ti, TJ_REDUCE_AVG, NULL, NULL), TJ_ERR_DTYPE, "avg of i64");
    REFUSED(tj_dist_all_reduce(tb, TJ_REDUCE_AVG, NULL, NULL), TJ_ERR_DTYPE, "avg of bool");
    tj_tensor *gi = zeros(TJ_I64, 6 * world, false);
    REFUSED(tj_dist_reduce_scatter(zeros(TJ_I64, 6, false), input(TJ_I64, rank, 0, 6 * world, 1, false),
                                   TJ_REDUCE_AVG, NULL, NULL), TJ_ERR_DTYPE, "tj_dist_reduce_scatter: avg");
    REFUSED(tj_dist_all_gather(gi, t, NULL, NULL), TJ_ERR_DTYPE, "out is i64 and in is f32");
    /* a result that overlaps its input, or itself */
    tj_tensor *whole = zeros(TJ_F32, 6 * world, false);
    tj_tensor *part = tj_slice(whole, 0, 0, 6, 1);
    REFUSED(tj_dist_all_gather(whole, part, NULL, NULL), TJ_ERR_ARG, "share memory");
    tj_tensor *expanded = tj_expand(tj_zeros((const int64_t[]){1}, 1, TJ_F32), (const int64_t[]){4}, 1);
    assert_non_null(expanded);
    REFUSED(tj_dist_all_reduce(expanded, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_ARG, "overlapping elements");
    REFUSED(tj_dist_all_reduce(t, TJ_REDUCE_SUM, (tj_dist_group *)t, NULL), TJ_ERR_ARG,
            "not a live process group");
    /* a CUDA tensor, where one can be made (a build with the CUDA backend:
     * on a GPU, or on the host execution harness, TJIT_CUDA_DRIVER=host) */
    tj_tensor *cuda = tj_empty_on((const int64_t[]){4}, 1, TJ_F32, TJ_DEVICE_CUDA(0));
    if (cuda) {
        REFUSED(tj_dist_all_reduce(cuda, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_DEVICE,
                "t is on cuda:0; the mpi backend takes cpu tensors");
        REFUSED(tj_dist_all_gather(big, cuda, NULL, NULL), TJ_ERR_DEVICE, "in is on cuda:0");
    } else if (rank == 0) {
        printf("(no CUDA tensor can be made here: the wrong-device case is skipped: %s)\n",
               tj_last_error());
    }
    tj_clear_error();
    /* the group still works, in step on every rank */
    tj_tensor *one = tj_ones((const int64_t[]){3}, 1, TJ_I64);
    assert_int_equal(tj_dist_all_reduce(one, TJ_REDUCE_SUM, NULL, NULL), TJ_OK);
    assert_int_equal(tj_get(one, (const int64_t[]){2}), (double)world);
    cases++;
}

/* With TJIT_DIST_CHECK the ranks compare each collective's arguments
 * first: every rank refuses one they disagree on, naming what differs, and
 * the group goes on. */
static void disagreements_are_refused_when_checked(void **state) {
    (void)state;
    const char *check = getenv("TJIT_DIST_CHECK");
    if (!check || !strcmp(check, "0") || world == 1) {
        if (rank == 0) printf("(TJIT_DIST_CHECK is off or the world is one process: skipped)\n");
        skip();
    }
    tj_tensor *t = zeros(TJ_F32, 5 + (rank == 1), false);
    REFUSED(tj_dist_all_reduce(t, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_COMM,
            "tj_dist_all_reduce: rank");
    tt_assert_error("the ranks disagree on the element count (from 5 to 6; this rank:");
    tj_tensor *u = zeros(rank == 0 ? TJ_F64 : TJ_F32, 4, false);
    REFUSED(tj_dist_broadcast(u, 0, NULL, NULL), TJ_ERR_COMM, "disagree on the dtype (from f32 to f64");
    tj_tensor *v = zeros(TJ_F32, 4, false);
    REFUSED(tj_dist_broadcast(v, rank == 0 ? 1 : 0, NULL, NULL), TJ_ERR_COMM, "disagree on the root");
    REFUSED(tj_dist_all_reduce(v, rank == 0 ? TJ_REDUCE_MAX : TJ_REDUCE_AVG, NULL, NULL), TJ_ERR_COMM,
            "disagree on the reduce op (from max to avg");
    tj_tensor *big = zeros(TJ_F32, 4 * world, false);
    REFUSED(rank == 0 ? tj_dist_barrier(NULL, NULL) : tj_dist_all_gather(big, v, NULL, NULL),
            TJ_ERR_COMM, "disagree on the collective");
    /* the group goes on */
    tj_tensor *one = tj_ones((const int64_t[]){3}, 1, TJ_F32);
    assert_int_equal(tj_dist_all_reduce(one, TJ_REDUCE_AVG, NULL, NULL), TJ_OK);
    assert_int_equal(tj_get(one, (const int64_t[]){1}), 1.0);
    cases++;
}

int main(void) {
    if (tj_dist_init("mpi", NULL) != TJ_OK) {
        fprintf(stderr, "tj_dist_init: %s\n", tj_last_error());
        return 1;
    }
    rank = tj_dist_rank();
    world = tj_dist_world_size();
    gen = tj_generator_new(7 + (uint64_t)rank);
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(barrier_and_group_queries),
        TT_SCOPED_TEST(blocking_collectives_match_one_process),
        TT_SCOPED_TEST(handles_outstanding_together_waited_out_of_order),
        TT_SCOPED_TEST(many_handles_in_flight),
        TT_SCOPED_TEST(every_rank_gets_the_same_bits),
        TT_SCOPED_TEST(errors_are_refused_naming_the_collective),
        TT_SCOPED_TEST(disagreements_are_refused_when_checked),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (rank == 0) printf("collective cases: %ld (world size %d)\n", cases, world);
    tj_generator_free(gen);
    if (tj_dist_finalize() != TJ_OK) {
        fprintf(stderr, "tj_dist_finalize: %s\n", tj_last_error());
        return 1;
    }
    return failed ? 1 : 0;
}
