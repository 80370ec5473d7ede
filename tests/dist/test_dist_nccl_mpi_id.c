/* test_dist_nccl_mpi_id.c — how the NCCL backend shares its communicator's
 * id under mpirun, without a GPU: every rank joins MPI through the plugin
 * (tjd_mpi_join), rank 0's 128 bytes reach every rank (tjd_mpi_share), and
 * the ranks leave (tjd_mpi_leave). Run by ctest with 2 and 3 ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/backend.h"
#include "tests/support/testing.h"

enum { ID_BYTES = 128 };

static void fill_id(unsigned char *id, uint64_t seed) {
    for (int i = 0; i < ID_BYTES; i++) id[i] = (unsigned char)tt_splitmix64(&seed);
}

static void rank0s_id_reaches_every_rank(void **state) {
    (void)state;
    int rank = -1, world = 0;
    if (tjd_mpi_join(&rank, &world) != TJ_OK) fail_msg("%s", tj_last_error());
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    assert_int_equal(world, size ? atoi(size) : 1);
    assert_true(rank >= 0 && rank < world);
    unsigned char want[ID_BYTES], id[ID_BYTES];
    fill_id(want, 42);
    /* every rank but 0 starts with other bytes */
    if (rank == 0) memcpy(id, want, sizeof id);
    else fill_id(id, 1000 + (uint64_t)rank);
    if (tjd_mpi_share(id, sizeof id, 60) != TJ_OK) fail_msg("%s", tj_last_error());
    assert_memory_equal(id, want, sizeof id);
    /* a second exchange on the same join */
    fill_id(want, 7);
    if (rank == 0) memcpy(id, want, sizeof id);
    assert_int_equal(tjd_mpi_share(id, sizeof id, 60), TJ_OK);
    assert_memory_equal(id, want, sizeof id);
    tjd_mpi_leave(false);
    if (rank == 0) printf("the id reached %d ranks over MPI\n", world);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(rank0s_id_reaches_every_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
