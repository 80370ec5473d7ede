/* test_dist_nccl_setup.c — the NCCL backend's parts that need no GPU: the
 * NCCL library loads and its functions resolve; tj_dist_init("nccl") without
 * a CUDA device (ctest hides any: CUDA_VISIBLE_DEVICES is empty) and on the
 * host harness fails clearly and leaves the process usable; the launch
 * variables; the TCP rendezvous handing a 128-byte id from a forked rank 0 to
 * forked peers over 127.0.0.1, and its errors. MPI is only ever started in
 * a forked child. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "distributed/backend.h"
#include "distributed/rendezvous.h"
#include "tests/support/testing.h"
#include "tjit/distributed.h"

enum { ID_BYTES = 128 };

/* A port nothing listens on now (the kernel's choice for port 0). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A socket listening on 127.0.0.1 that never accepts nor answers. */
static int silent_listener(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void fill_id(unsigned char *id) {
    uint64_t s = 0x5eed;
    for (int i = 0; i < ID_BYTES; i++) id[i] = (unsigned char)tt_splitmix64(&s);
}

/* A forked rank: shares the id and exits 0 when it holds the right bytes
 * (rank 0 sends them; the others must receive them). */
static pid_t fork_rank(int port, int rank, int world, double timeout_s) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid) return pid;
    unsigned char want[ID_BYTES], id[ID_BYTES];
    fill_id(want);
    if (rank == 0) memcpy(id, want, sizeof id);
    else memset(id, 0, sizeof id);
    tj_status st = tjd_rendezvous_share("127.0.0.1", port, rank, world, id, sizeof id, timeout_s);
    if (st) fprintf(stderr, "rank %d: %s\n", rank, tj_last_error());
    _exit(st ? 2 : memcmp(id, want, sizeof id) ? 3 : 0);
}

static int exit_code(pid_t pid) {
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void rendezvous_hands_rank0s_id_to_every_peer(void **state) {
    (void)state;
    int port = free_port();
    /* the peers start first: they retry until rank 0 listens */
    pid_t p1 = fork_rank(port, 1, 3, 20), p2 = fork_rank(port, 2, 3, 20);
    nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
    pid_t p0 = fork_rank(port, 0, 3, 20);
    assert_int_equal(exit_code(p0), 0);
    assert_int_equal(exit_code(p1), 0);
    assert_int_equal(exit_code(p2), 0);
    /* a world of one meets nobody */
    unsigned char id[ID_BYTES] = {0};
    assert_int_equal(tjd_rendezvous_share("unused", 1, 0, 1, id, sizeof id, 1), TJ_OK);
}

static void rendezvous_errors_are_clear(void **state) {
    (void)state;
    unsigned char id[ID_BYTES] = {0};
    int port = free_port();
    /* an address that does not resolve */
    assert_int_equal(tjd_rendezvous_share("no-such-host.invalid", port, 1, 2, id, sizeof id, 1),
                     TJ_ERR_ARG);
    tt_assert_error("tj_dist_init(\"nccl\"): MASTER_ADDR \"no-such-host.invalid\" is not an address");
    /* nothing listening: the peer retries until the timeout */
    assert_int_equal(tjd_rendezvous_share("127.0.0.1", port, 1, 2, id, sizeof id, 0.5), TJ_ERR_COMM);
    tt_assert_error("rank 1: nothing accepted a connection at 127.0.0.1:");
    tt_assert_error("within 0.5 s (the timeout; last error: Connection refused)");
    /* rank 0 alone: the others never come */
    assert_int_equal(tjd_rendezvous_share("127.0.0.1", port, 0, 3, id, sizeof id, 0.5), TJ_ERR_COMM);
    tt_assert_error("2 of the 2 other ranks did not connect within 0.5 s (the timeout; missing: 1, 2)");
    /* something accepts the connection but never answers */
    int quiet_port, quiet = silent_listener(&quiet_port);
    assert_int_equal(tjd_rendezvous_share("127.0.0.1", quiet_port, 1, 2, id, sizeof id, 0.5),
                     TJ_ERR_COMM);
    tt_assert_error("rank 1: no answer from rank 0 at 127.0.0.1:");
    /* rank 0 cannot listen on a port in use */
    assert_int_equal(tjd_rendezvous_share("127.0.0.1", quiet_port, 0, 2, id, sizeof id, 0.5),
                     TJ_ERR_COMM);
    tt_assert_error("rank 0 cannot listen on port");
    tt_assert_error("Address already in use");
    close(quiet);
    assert_int_equal(tjd_rendezvous_share("127.0.0.1", 0, 1, 2, id, sizeof id, 0.5), TJ_ERR_ARG);
    tt_assert_error("is not possible");
}

/* A rank that disagrees on the world size is refused, and both say why. */
static void rendezvous_refuses_a_mismatched_rank(void **state) {
    (void)state;
    int port = free_port();
    pid_t p0 = fork_rank(port, 0, 2, 10);
    unsigned char id[ID_BYTES] = {0};
    assert_int_equal(tjd_rendezvous_share("127.0.0.1", port, 1, 3, id, sizeof id, 10), TJ_ERR_COMM);
    tt_assert_error("rank 1: rank 0 at 127.0.0.1:");
    tt_assert_error("refused this rank: rank 1 has WORLD_SIZE=3, rank 0 has 2");
    assert_int_equal(exit_code(p0), 2);
}

static void launch_variables_are_read_and_checked(void **state) {
    (void)state;
    static const char *const vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
    for (int i = 0; i < 5; i++) unsetenv(vars[i]);
    tjd_launch_env env;
    bool found = true;
    assert_int_equal(tjd_launch_env_read(&env, &found), TJ_OK);
    assert_false(found);
    setenv("RANK", "1", 1);
    assert_int_equal(tjd_launch_env_read(&env, &found), TJ_ERR_ARG);
    tt_assert_error("RANK is set but WORLD_SIZE is not");
    setenv("WORLD_SIZE", "2", 1);
    assert_int_equal(tjd_launch_env_read(&env, &found), TJ_ERR_ARG);
    tt_assert_error("WORLD_SIZE=2 needs MASTER_ADDR and MASTER_PORT");
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "port", 1);
    assert_int_equal(tjd_launch_env_read(&env, &found), TJ_ERR_ARG);
    tt_assert_error("MASTER_PORT=\"port\" is not an integer from 1 to 65535");
    setenv("MASTER_PORT", "29500", 1);
    setenv("LOCAL_RANK", "1", 1);
    assert_int_equal(tjd_launch_env_read(&env, &found), TJ_OK);
    assert_true(found);
    assert_int_equal(env.rank, 1);
    assert_int_equal(env.world_size, 2);
    assert_int_equal(env.local_rank, 1);
    assert_int_equal(env.port, 29500);
    assert_string_equal(env.addr, "127.0.0.1");
    setenv("RANK", "2", 1);
    assert_int_equal(tjd_launch_env_read(&env, &found), TJ_ERR_ARG);
    tt_assert_error("RANK=2 is not below WORLD_SIZE=2");
    for (int i = 0; i < 5; i++) unsetenv(vars[i]);
}

/* In a child, so that its choice of NCCL library (once per process) stays there. */
static void a_missing_nccl_library_is_named(void **state) {
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("TJIT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
        int version = 0;
        tj_status st = tjd_nccl_load(&version, NULL, 0);
        const char *e = tj_last_error();
#ifdef TJIT_HAVE_CUDA
        _exit(st == TJ_ERR_UNSUPPORTED && strstr(e, "cannot load NCCL (tried /nonexistent/libnccl.so.2") &&
              strstr(e, "set TJIT_NCCL_LIBRARY") ? 0 : 1);
#else
        _exit(st == TJ_ERR_UNSUPPORTED && strstr(e, "built without the CUDA backend") ? 0 : 1);
#endif
    }
    assert_int_equal(exit_code(pid), 0);
}

/* On the host harness there are CUDA devices but no GPU for NCCL. */
static void the_host_harness_is_refused(void **state) {
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("TJIT_CUDA_DRIVER", "host", 1);
        tj_status st = tj_dist_init("nccl", NULL);
        const char *e = tj_last_error();
#ifdef TJIT_HAVE_CUDA
        bool ok = st == TJ_ERR_UNSUPPORTED && strstr(e, "NCCL needs a GPU") && strstr(e, "host execution harness");
#else
        bool ok = st == TJ_ERR_UNSUPPORTED && strstr(e, "built without the CUDA backend");
#endif
        if (!ok) fprintf(stderr, "status %d: %s\n", st, e);
        _exit(ok && !tj_dist_is_initialized() ? 0 : 1);
    }
    assert_int_equal(exit_code(pid), 0);
}

static void the_nccl_library_loads(void **state) {
    (void)state;
    int version = 0;
    char path[1024] = "";
    tj_status st = tjd_nccl_load(&version, path, sizeof path);
#if defined(TJIT_HAVE_CUDA) && defined(TJIT_TEST_NCCL_FOUND)
    if (st) fail_msg("%s", tj_last_error());
    assert_true(version >= 21400);
    printf("NCCL %d.%d.%d loaded from %s\n", version / 10000, version / 100 % 100, version % 100, path);
#elif defined(TJIT_HAVE_CUDA)
    printf("(NCCL was not found when tjit was configured: %s)\n", st ? tj_last_error() : path);
    (void)version;
#else
    assert_int_equal(st, TJ_ERR_UNSUPPORTED);
    tt_assert_error("built without the CUDA backend");
#endif
}

/* No device: a clear error, and the process goes on. */
static void without_a_device_init_fails_clearly(void **state) {
    (void)state;
    tj_status st = tj_dist_init("nccl", NULL);
#ifdef TJIT_HAVE_CUDA
    assert_int_equal(st, TJ_ERR_DEVICE);
    tt_assert_error("tj_dist_init(\"nccl\"): NCCL runs collectives on CUDA tensors and this process "
                    "has no CUDA device (");
    tt_assert_error("use \"mpi\" with CPU tensors");
#else
    assert_int_equal(st, TJ_ERR_UNSUPPORTED);
    tt_assert_error("built without the CUDA backend");
#endif
    assert_false(tj_dist_is_initialized());
    assert_null(tj_dist_backend());
    tj_tensor *t = tj_ones((const int64_t[]){5}, 1, TJ_F32);
    assert_non_null(t);
    assert_int_equal(tj_get(t, (const int64_t[]){4}), 1.0);
}

/* ... and then joins an MPI group. In a child: Open MPI keeps allocations
 * until exit that the sanitizers' leak check cannot attribute, and a
 * process cannot start MPI twice. */
static void after_the_refusal_mpi_still_joins(void **state) {
    (void)state;
#ifdef TJIT_TEST_MPI
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int code = 0;
        tj_tensor *t = tj_ones((const int64_t[]){5}, 1, TJ_F32);
        if (tj_dist_init("nccl", NULL) == TJ_OK) code = 1;
        else if (tj_dist_init("mpi", NULL) != TJ_OK) code = 2;
        else if (strcmp(tj_dist_backend(), "mpi") || tj_dist_all_reduce(t, TJ_REDUCE_SUM, NULL, NULL) ||
                 tj_get(t, (const int64_t[]){4}) != 1.0)
            code = 3;
        else if (tj_dist_init("nccl", NULL) != TJ_ERR_ARG ||
                 !strstr(tj_last_error(), "this process is in a mpi group already"))
            code = 4;
        else if (tj_dist_finalize() != TJ_OK)
            code = 5;
        if (code) fprintf(stderr, "step %d: %s\n", code, tj_last_error());
        fflush(NULL);
        _exit(code);
    }
    assert_int_equal(exit_code(pid), 0);
#else
    printf("(built without MPI: skipped)\n");
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(rendezvous_hands_rank0s_id_to_every_peer),
        TT_SCOPED_TEST(rendezvous_errors_are_clear),
        TT_SCOPED_TEST(rendezvous_refuses_a_mismatched_rank),
        TT_SCOPED_TEST(launch_variables_are_read_and_checked),
        TT_SCOPED_TEST(a_missing_nccl_library_is_named),
        TT_SCOPED_TEST(the_host_harness_is_refused),
        TT_SCOPED_TEST(the_nccl_library_loads),
        TT_SCOPED_TEST(without_a_device_init_fails_clearly),
        TT_SCOPED_TEST(after_the_refusal_mpi_still_joins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
