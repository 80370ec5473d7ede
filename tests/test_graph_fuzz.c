/* test_graph_fuzz.c — the whole-table graph fuzzer (tests/support/graph_fuzz.h):
 * random well-typed graphs over every op of the table, traced from eager calls,
 * compiled through every pipeline, fused, replayed (planned and op by op, on
 * contiguous and strided inputs) and compared with eager execution bit for bit;
 * the smooth f64 ones also get their gradients checked against finite
 * differences. Then: every op of the table appeared in some graph.
 *
 * TJIT_FUZZ_GRAPHS=N runs N graphs (default 500, about 1 s in Release and
 * under ASan), TJIT_FUZZ_SEED=S starts at seed S (a failure names its seed:
 * TJIT_FUZZ_SEED=S TJIT_FUZZ_GRAPHS=1 replays it; TJIT_FUZZ_VERBOSE=1 lists
 * the calls the ops refused). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tests/support/graph_fuzz.h"

static long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : fallback;
}

static void random_graphs_equal_eager(void **state) {
    (void)state;
    long n = env_long("TJIT_FUZZ_GRAPHS", 500);
    long first = env_long("TJIT_FUZZ_SEED", 1);
    static tt_gf_counts c;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long k = 0; k < n; k++) {
        tt_gf_run_case((int)(first + k), &c);
        if (n >= 2000 && (k + 1) % 1000 == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            printf("  %ld graphs, %.0f s\n", k + 1, (double)(t1.tv_sec - t0.tv_sec));
            fflush(stdout);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int covered = 0;
    for (int i = 0; i < tj_op_count(); i++) covered += c.op_hits[i] > 0;
    printf("graph fuzz: %d graphs (%d nodes, %d gradient-checked, %d on LLVM, %d on strided "
           "inputs) in %.1f s; ops covered: %d of %d\n",
           c.graphs, c.nodes, c.gradchecked, c.llvm_cases, c.strided,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), covered,
           tj_op_count());
    for (int i = 0; i < tj_op_count(); i++)
        if (!c.op_hits[i]) printf("  never traced: %s (%d calls)\n", tj_op_name(tj_op_at(i)), c.op_calls[i]);
    /* a run of the default size must reach the whole table: an op whose
     * builder stopped producing valid calls would otherwise go unnoticed */
    if (n >= 500 && first == 1) assert_int_equal(covered, tj_op_count());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_graphs_equal_eager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
