/* test_dist_timeout.c — a peer that leaves mid-job (run by ctest under
 * mpirun -np 2 with TJIT_DIST_TIMEOUT=2 and orte_allowed_exit_without_sync):
 * rank 1 exits without a word after a first all-reduce; rank 0's next
 * all-reduce fails with TJ_ERR_COMM naming the collective, its rank and the
 * timeout within a few seconds, later collectives are refused, and
 * tj_dist_finalize returns at once. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/testing.h"
#include "tjit/distributed.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void a_peer_that_leaves_times_out(void **state) {
    (void)state;
    assert_int_equal(tj_dist_init("mpi", NULL), TJ_OK);
    assert_int_equal(tj_dist_world_size(), 2);
    tj_tensor *t = tj_ones((const int64_t[]){1000}, 1, TJ_F32);
    assert_int_equal(tj_dist_all_reduce(t, TJ_REDUCE_SUM, NULL, NULL), TJ_OK);
    assert_int_equal(tj_get(t, (const int64_t[]){7}), 2.0);
    if (tj_dist_rank() == 1) {
        tj_release(t);
        fflush(NULL);
        _exit(0); /* mid-step, without finalising */
    }
    /* one handle in flight and one blocking call: both fail */
    tj_tensor *u = tj_ones((const int64_t[]){10}, 1, TJ_F64);
    tj_dist_work *w = NULL;
    assert_int_equal(tj_dist_all_reduce(u, TJ_REDUCE_AVG, NULL, &w), TJ_OK);
    double t0 = now_s();
    tj_status st = tj_dist_all_reduce(t, TJ_REDUCE_SUM, NULL, NULL);
    double took = now_s() - t0;
    printf("rank 0: %s after %.2f s: %s\n", tj_status_name(st), took, tj_last_error());
    assert_int_equal(st, TJ_ERR_COMM);
    assert_true(took < 10.0);
    assert_int_equal(tj_dist_wait(w), TJ_ERR_COMM);
    tt_assert_error("tj_dist_all_reduce: rank 0");
    tj_clear_error();
    assert_int_equal(tj_dist_all_reduce(t, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_COMM);
    /* the first message (a timeout of the handle's collective) names the cause */
    tt_assert_error("refused: the group failed earlier");
    tt_assert_error("not complete after 2 s");
    assert_int_equal(tj_dist_barrier(NULL, NULL), TJ_ERR_COMM);
    t0 = now_s();
    assert_int_equal(tj_dist_finalize(), TJ_OK);
    assert_true(now_s() - t0 < 1.0);
    assert_false(tj_dist_is_initialized());
    /* MPI cannot start again in this process: said, not attempted */
    assert_int_equal(tj_dist_init("mpi", NULL), TJ_ERR_COMM);
    tt_assert_error("cannot be restarted");
    tj_release(t);
    tj_release(u);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(a_peer_that_leaves_times_out)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
