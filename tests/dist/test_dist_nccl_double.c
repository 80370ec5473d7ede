/* test_dist_nccl_double.c — the nccl backend's own logic without a GPU: run
 * on the CUDA backend's host harness (TJIT_CUDA_DRIVER=host, two devices)
 * with the tests' stand-in for NCCL (nccl_double.c, TJIT_NCCL_LIBRARY), a
 * world of one. Checks what the backend hands NCCL (dtype and op codes,
 * avg as a sum in a world of one, counts, in-place buffers, nothing for empty tensors, the barrier), that it
 * polls a non-blocking communicator through creation, every enqueue and
 * finalization, the tensors it refuses, TJIT_DIST_CHECK's comparison staged
 * through device memory, and its failures: an enqueue that never completes
 * (the timeout, then ncclCommAbort), an asynchronous error, a communicator
 * whose other rank never joins. Failures run in forked children, each its
 * own process group, before the parent makes its own. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/rendezvous.h"
#include "tests/support/testing.h"
#include "tjit/distributed.h"

typedef struct nccl_double_state { /* as in nccl_double.c */
    int inits, calls, aborts, destroys, finalizes;
    char last[32];
    int dtype, op, root;
    size_t count;
    int hang_next, fail_next;
} nccl_double_state;

enum { UINT8 = 1, INT64 = 4, FLOAT32 = 7, FLOAT64 = 8 };
enum { SUM = 0, MAX = 2, MIN = 3, AVG = 4 };

static const tj_device gpu = {TJ_CUDA, 0};

/* The double's state, once the backend has loaded it. */
static nccl_double_state *double_state(void) {
    void *dl = dlopen(getenv("TJIT_NCCL_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(dl);
    nccl_double_state *s = dlsym(dl, "tjit_nccl_double");
    dlclose(dl); /* the backend's reference keeps it loaded */
    assert_non_null(s);
    return s;
}

static tj_tensor *on_gpu(tj_dtype d, int64_t n, int seed) {
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = (double)((i * 7 + seed) % 11) - 5;
        if (d == TJ_BOOL) v[i] = v[i] > 0;
    }
    tj_tensor *host = tj_from_array(v, (const int64_t[]){n}, 1, TJ_F64);
    free(v);
    tj_tensor *typed = host ? tj_to_dtype(host, d) : NULL;
    tj_tensor *t = typed ? tj_to_device(typed, gpu) : NULL;
    if (!t) fail_msg("a tensor on cuda:0: %s", tj_last_error());
    return t;
}

/* t's values equal want's (both read on the host). */
static void assert_same(tj_tensor *t, tj_tensor *want) {
    tj_tensor *a = tj_to_device(t, TJ_DEVICE_CPU), *b = tj_to_device(want, TJ_DEVICE_CPU);
    assert_non_null(a);
    assert_non_null(b);
    tt_ref ra = tt_ref_of(a), rb = tt_ref_of(b);
    assert_int_equal(ra.numel, rb.numel);
    for (int64_t i = 0; i < ra.numel; i++)
        if (ra.v[i] != rb.v[i]) fail_msg("element %lld: %g, expected %g", (long long)i, ra.v[i], rb.v[i]);
    tt_ref_free(&ra);
    tt_ref_free(&rb);
}

static int exit_code(pid_t pid) {
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* ---- failures, each in a child ---------------------------------------------------- */

/* A port nothing listens on now (the kernel's choice for port 0). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len))
        return 29500;
    close(fd);
    return ntohs(a.sin_port);
}

/* Runs fn in a child that exits with its result (0 for success). */
static void in_child(int (*fn)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int code = fn();
        if (code) fprintf(stderr, "child failed at step %d: %s\n", code, tj_last_error());
        fflush(NULL);
        _exit(code);
    }
    assert_int_equal(exit_code(pid), 0);
}

static int enqueue_that_never_completes(void) {
    if (tj_dist_init("nccl", &(tj_dist_options){.timeout_s = 0.5})) return 1;
    nccl_double_state *s = double_state();
    tj_tensor *t = on_gpu(TJ_F32, 5, 0);
    s->hang_next = 1;
    if (tj_dist_all_reduce(t, TJ_REDUCE_SUM, NULL, NULL) != TJ_ERR_COMM) return 2;
    if (!strstr(tj_last_error(), "tj_dist_all_reduce: rank 0: ncclAllReduce was not enqueued within "
                                 "0.5 s (the timeout: a peer left or never called it)")) return 3;
    if (s->aborts != 1) return 4;
    if (tj_dist_barrier(NULL, NULL) != TJ_ERR_COMM || !strstr(tj_last_error(), "the group failed earlier"))
        return 5;
    if (tj_dist_finalize() != TJ_OK || s->aborts != 1 || s->destroys != 0) return 6;
    return 0;
}

static int asynchronous_error(void) {
    if (tj_dist_init("nccl", NULL)) return 1;
    nccl_double_state *s = double_state();
    tj_tensor *t = on_gpu(TJ_F64, 5, 0);
    s->fail_next = 1;
    tj_dist_work *w = NULL;
    if (tj_dist_broadcast(t, 0, NULL, &w) != TJ_OK) return 2;
    if (tj_dist_wait(w) != TJ_ERR_COMM) return 3;
    if (!strstr(tj_last_error(), "tj_dist_broadcast: rank 0: NCCL reports: remote process exited or "
                                 "there was a network error")) return 4;
    if (s->aborts != 1) return 5;
    if (tj_dist_finalize() != TJ_OK) return 6;
    return 0;
}

/* Rank 0 of two meets its peer at the rendezvous, but the peer never
 * creates its part of the communicator. */
static int a_rank_that_never_joins(void) {
    int lfd_port = free_port();
    char port[16];
    snprintf(port, sizeof port, "%d", lfd_port);
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", port, 1);
    pid_t peer = fork();
    if (peer == 0) {
        unsigned char id[128];
        _exit(tjd_rendezvous_share("127.0.0.1", lfd_port, 1, 2, id, sizeof id, 10) ? 1 : 0);
    }
    tj_status st = tj_dist_init("nccl", &(tj_dist_options){.timeout_s = 0.5});
    int peer_code = exit_code(peer);
    if (st != TJ_ERR_COMM) return 1;
    if (!strstr(tj_last_error(), "tj_dist_init(\"nccl\"): rank 0 on cuda:0: the NCCL communicator of "
                                 "2 ranks was not complete after 0.5 s (the timeout: a rank never "
                                 "joined)")) return 2;
    if (peer_code != 0 || double_state()->aborts != 1 || tj_dist_is_initialized()) return 3;
    return 0;
}

static int checked_collectives(void) {
    setenv("TJIT_DIST_CHECK", "1", 1);
    if (tj_dist_init("nccl", NULL)) return 1;
    nccl_double_state *s = double_state();
    tj_tensor *t = on_gpu(TJ_I64, 9, 3), *want = on_gpu(TJ_I64, 9, 3);
    if (tj_dist_all_reduce(t, TJ_REDUCE_MIN, NULL, NULL)) return 2;
    /* the comparison (ten i64 maxima on the staging memory), then the collective */
    if (s->calls != 2 || s->dtype != INT64 || s->op != MIN || s->count != 9) return 3;
    tj_tensor *a = tj_to_device(t, TJ_DEVICE_CPU), *b = tj_to_device(want, TJ_DEVICE_CPU);
    for (int64_t i = 0; i < 9; i++)
        if (tj_get(a, &i) != tj_get(b, &i)) return 4;
    if (tj_dist_finalize()) return 5;
    return 0;
}

static void failures_are_clear_and_abort_the_communicator(void **state) {
    (void)state;
    in_child(enqueue_that_never_completes);
    in_child(asynchronous_error);
    in_child(a_rank_that_never_joins);
    in_child(checked_collectives);
}

/* ---- a working group ---------------------------------------------------------------- */

static nccl_double_state *S;

static void the_group_is_made_by_polling(void **state) {
    (void)state;
    assert_int_equal(tj_dist_init("nccl", NULL), TJ_OK);
    assert_string_equal(tj_dist_backend(), "nccl");
    assert_int_equal(tj_dist_rank(), 0);
    assert_int_equal(tj_dist_world_size(), 1);
    S = double_state();
    assert_int_equal(S->inits, 1);
}

static int code_of(tj_dtype d) {
    return d == TJ_F32 ? FLOAT32 : d == TJ_F64 ? FLOAT64 : d == TJ_I64 ? INT64 : UINT8;
}

static void collectives_hand_nccl_the_right_codes(void **state) {
    (void)state;
    static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};
    /* 2^17 + 3 elements: the last 3 of a one-rank ncclAvg are never written
     * (nccl_double.c models NCCL 2.28's kernel) */
    static const int64_t lengths[] = {0, 1, 1001, (1 << 17) + 3};
    static const int ops[][4] = {/* sum avg max min, by dtype kind */
                                 {SUM, SUM, MAX, MIN},  /* float: avg of one rank is a sum */
                                 {SUM, -1, MAX, MIN},   /* i64 */
                                 {MAX, -1, MAX, MIN}};  /* bool: or, or, and */
    int checked = 0;
    for (int di = 0; di < 4; di++)
        for (int li = 0; li < 4; li++) {
            tj_dtype d = dtypes[di];
            int64_t n = lengths[li];
            const int *codes = ops[d == TJ_I64 ? 1 : d == TJ_BOOL ? 2 : 0];
            for (int op = 0; op < 4; op++) {
                if (codes[op] < 0) continue;
                tj_tensor *t = on_gpu(d, n, op), *want = on_gpu(d, n, op);
                int calls = S->calls;
                assert_int_equal(tj_dist_all_reduce(t, (tj_reduce_op)op, NULL, NULL), TJ_OK);
                assert_same(t, want);
                if (n == 0) {
                    assert_int_equal(S->calls, calls); /* nothing to move: nothing enqueued */
                    continue;
                }
                assert_int_equal(S->calls, calls + 1);
                assert_string_equal(S->last, "ncclAllReduce");
                assert_int_equal(S->dtype, code_of(d));
                assert_int_equal(S->op, codes[op]);
                assert_int_equal(S->count, (size_t)n);
                tj_tensor *out = tj_zeros_on((const int64_t[]){n}, 1, d, gpu);
                assert_int_equal(tj_dist_reduce_scatter(out, want, (tj_reduce_op)op, NULL, NULL), TJ_OK);
                assert_string_equal(S->last, "ncclReduceScatter");
                assert_int_equal(S->op, codes[op]);
                assert_same(out, want);
                checked += 2;
            }
            tj_tensor *b = on_gpu(d, n, 9), *in = on_gpu(d, n, 4);
            tj_tensor *gathered = tj_zeros_on((const int64_t[]){n}, 1, d, gpu);
            tj_dist_work *w1 = NULL, *w2 = NULL;
            assert_int_equal(tj_dist_broadcast(b, 0, NULL, &w1), TJ_OK);
            assert_int_equal(tj_dist_all_gather(gathered, in, NULL, &w2), TJ_OK);
            assert_int_equal(tj_dist_wait(w2), TJ_OK);
            assert_int_equal(tj_dist_wait(w1), TJ_OK);
            assert_same(b, on_gpu(d, n, 9));
            assert_same(gathered, in);
            if (n > 0) {
                assert_string_equal(S->last, "ncclAllGather");
                assert_int_equal(S->dtype, code_of(d));
            }
            checked += 2;
        }
    int calls = S->calls;
    assert_int_equal(tj_dist_barrier(NULL, NULL), TJ_OK);
    assert_int_equal(S->calls, calls + 1);
    assert_int_equal(S->dtype, UINT8);
    assert_int_equal(S->op, MAX);
    assert_int_equal(S->count, 1);
    printf("collectives checked through the stand-in: %d\n", checked + 1);
}

static void tensors_nccl_cannot_take_are_refused(void **state) {
    (void)state;
    tj_tensor *cpu = tj_zeros((const int64_t[]){4}, 1, TJ_F32);
    assert_int_equal(tj_dist_all_reduce(cpu, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_DEVICE);
    tt_assert_error("tj_dist_all_reduce: t is on cpu; the nccl backend takes cuda tensors");
    tj_tensor *other = tj_zeros_on((const int64_t[]){4}, 1, TJ_F32, TJ_DEVICE_CUDA(1));
    assert_non_null(other);
    assert_int_equal(tj_dist_broadcast(other, 0, NULL, NULL), TJ_ERR_DEVICE);
    tt_assert_error("tj_dist_broadcast: t is on cuda:1; this rank's NCCL communicator is on cuda:0");
    tj_tensor *m = tj_zeros_on((const int64_t[]){3, 4}, 2, TJ_F32, gpu);
    tj_tensor *g = tj_zeros_on((const int64_t[]){12}, 1, TJ_F32, gpu);
    assert_int_equal(tj_dist_all_gather(g, tj_transpose(m, 0, 1), NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("tj_dist_all_gather: in is not contiguous; the nccl backend takes contiguous "
                    "CUDA tensors (tj_contiguous makes one)");
    assert_int_equal(tj_dist_all_reduce(on_gpu(TJ_BOOL, 3, 0), TJ_REDUCE_AVG, NULL, NULL), TJ_ERR_DTYPE);
    tt_assert_error("avg of bool");
}

static void finalize_flushes_and_destroys(void **state) {
    (void)state;
    assert_int_equal(tj_dist_finalize(), TJ_OK);
    assert_int_equal(S->finalizes, 1);
    assert_int_equal(S->destroys, 1);
    assert_int_equal(S->aborts, 0);
    assert_false(tj_dist_is_initialized());
}

int main(void) {
    const char *lib = getenv("TJIT_NCCL_LIBRARY");
    if (!lib || !strstr(lib, "tjit_test_nccl")) {
        fprintf(stderr, "TJIT_NCCL_LIBRARY must name the tests' stand-in, libtjit_test_nccl.so\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(failures_are_clear_and_abort_the_communicator),
        TT_SCOPED_TEST(the_group_is_made_by_polling),
        TT_SCOPED_TEST(collectives_hand_nccl_the_right_codes),
        TT_SCOPED_TEST(tensors_nccl_cannot_take_are_refused),
        TT_SCOPED_TEST(finalize_flushes_and_destroys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
