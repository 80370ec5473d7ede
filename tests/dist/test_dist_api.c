/* test_dist_api.c — the distributed API without mpirun: before tj_dist_init
 * (a world of one, collectives refused saying to call it), unknown backends,
 * and a missing MPI plugin named with what to install. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tjit/distributed.h"

static void before_init_a_world_of_one(void **state) {
    (void)state;
    assert_false(tj_dist_is_initialized());
    assert_null(tj_dist_world());
    assert_int_equal(tj_dist_rank(), 0);
    assert_int_equal(tj_dist_world_size(), 1);
    assert_null(tj_dist_backend());
    tj_tensor *t = tj_ones((const int64_t[]){4}, 1, TJ_F32), *out = tj_zeros((const int64_t[]){4}, 1, TJ_F32);
    tj_dist_work *w = (tj_dist_work *)t;
    assert_int_equal(tj_dist_all_reduce(t, TJ_REDUCE_SUM, NULL, &w), TJ_ERR_ARG);
    tt_assert_error("tj_dist_all_reduce: no process group: call tj_dist_init first");
    assert_null(w);
    assert_int_equal(tj_dist_broadcast(t, 0, NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("tj_dist_broadcast: no process group: call tj_dist_init");
    assert_int_equal(tj_dist_all_gather(out, t, NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("tj_dist_all_gather: no process group");
    assert_int_equal(tj_dist_reduce_scatter(out, t, TJ_REDUCE_SUM, NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("tj_dist_reduce_scatter: no process group");
    assert_int_equal(tj_dist_barrier(NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("tj_dist_barrier: no process group");
    assert_int_equal(tj_dist_finalize(), TJ_ERR_ARG);
    tt_assert_error("tj_dist_finalize: there is no process group");
    assert_int_equal(tj_dist_wait(NULL), TJ_OK);
    assert_int_equal(tj_dist_test(NULL, &(bool){false}), TJ_ERR_ARG);
    /* the tensors are untouched */
    assert_int_equal(tj_get(t, (const int64_t[]){3}), 1.0);
}

static void unknown_backends_and_options_are_refused(void **state) {
    (void)state;
    assert_int_equal(tj_dist_init("gloo", NULL), TJ_ERR_ARG);
    tt_assert_error("unknown backend \"gloo\" (known backends: \"mpi\", \"nccl\")");
    assert_int_equal(tj_dist_init(NULL, NULL), TJ_ERR_ARG);
    tt_assert_error("backend is NULL");
    assert_int_equal(tj_dist_init("nccl", NULL), TJ_ERR_UNSUPPORTED);
    tt_assert_error("tj_dist_init(\"nccl\")");
    assert_int_equal(tj_dist_init("mpi", &(tj_dist_options){.timeout_s = -1}), TJ_ERR_ARG);
    tt_assert_error("timeout_s -1");
    setenv("TJIT_DIST_TIMEOUT", "soon", 1);
    assert_int_equal(tj_dist_init("mpi", NULL), TJ_ERR_ARG);
    tt_assert_error("TJIT_DIST_TIMEOUT=\"soon\"");
    unsetenv("TJIT_DIST_TIMEOUT");
    assert_false(tj_dist_is_initialized());
}

static void a_missing_plugin_is_named(void **state) {
    (void)state;
    setenv("TJIT_MPI_PLUGIN", "/nonexistent/libtjit_mpi.so", 1);
    tj_status st = tj_dist_init("mpi", NULL);
    unsetenv("TJIT_MPI_PLUGIN");
    assert_int_equal(st, TJ_ERR_UNSUPPORTED);
#ifdef TJIT_TEST_MPI
    tt_assert_error("cannot load the MPI plugin libtjit_mpi.so: /nonexistent/libtjit_mpi.so: "
                    "cannot open shared object file: No such file");
    tt_assert_error("apt-get install");
    /* a library that is not the plugin */
    setenv("TJIT_MPI_PLUGIN", "libm.so.6", 1);
    st = tj_dist_init("mpi", NULL);
    unsetenv("TJIT_MPI_PLUGIN");
    assert_int_equal(st, TJ_ERR_UNSUPPORTED);
    tt_assert_error("libm.so.6 is not tjit's MPI plugin: it has no tjd_mpi_plugin_v1");
#else
    tt_assert_error("built without MPI");
#endif
    assert_false(tj_dist_is_initialized());
    assert_int_equal(tj_dist_rank(), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(before_init_a_world_of_one),
        TT_SCOPED_TEST(unknown_backends_and_options_are_refused),
        TT_SCOPED_TEST(a_missing_plugin_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
