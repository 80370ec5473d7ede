/* ddp_fault.c — a rank that leaves in the middle of a data-parallel step:
 * under mpirun (--mca orte_allowed_exit_without_sync 1, TJIT_DIST_TIMEOUT=3)
 * the last rank exits during its second backward pass; every other rank's
 * tj_backward must then fail with TJ_ERR_COMM within the timeout (a step or
 * two later at most), after which it exits 0 without finalizing MPI (that
 * would wait for the dead peer). A survivor that trains on, or fails
 * otherwise, exits 1, which mpirun returns. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "examples/models/models.h"
#include "tjit/distributed.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double DELAY_S;

static void *leave(void *arg) {
    (void)arg;
    struct timespec d = {0, (long)(DELAY_S * 1e9)};
    nanosleep(&d, NULL);
    _exit(0);
}

static void die(int rank, const char *what) {
    fprintf(stderr, "ddp_fault: rank %d: %s: %s\n", rank, what, tj_last_error());
    fflush(stderr);
    _exit(1);
}

int main(void) {
    setenv("OMP_NUM_THREADS", "1", 0);
    if (tj_dist_init("mpi", NULL) != TJ_OK) {
        fprintf(stderr, "ddp_fault: %s\n", tj_last_error());
        return 1;
    }
    int rank = tj_dist_rank(), world = tj_dist_world_size(), leaver = world - 1;
    const char *timeout_env = getenv("TJIT_DIST_TIMEOUT");
    double timeout = timeout_env ? atof(timeout_env) : 300;
    tj_generator *gen = tj_generator_new(11);
    tjx_task t = {&tjx_mlp, tjx_mlp.create(gen), "nll"};
    int64_t xs[2] = {4, 784}, b = 4;
    tj_tensor *in[2];
    tj_scope_begin();
    in[0] = tj_retain(tj_randn(xs, 2, TJ_F32, gen));
    in[1] = tj_retain(tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64));
    tj_scope_end();
    tj_program *p = tjx_compile_training(&t, in, NULL);
    if (!p) die(rank, "compiling");
    tj_ddp_options o = {.bucket_bytes = 64 * 1024}; /* several buckets: some in flight mid-backward */
    tj_ddp *ddp = tj_ddp_wrap(p, NULL, &o);
    if (!ddp) die(rank, "wrapping");
    double backward_s = 0;
    for (int step = 0; step < 6; step++) {
        tj_tensor *loss = NULL;
        if (tj_run(p, in, &loss)) die(rank, "forward");
        tj_release(loss);
        if (rank == leaver && step == 1) {
            DELAY_S = backward_s / 4; /* early in this backward */
            pthread_t th;
            if (pthread_create(&th, NULL, leave, NULL)) _exit(1);
            tj_backward(p, NULL, NULL);
            for (;;) pause(); /* the thread ends the process */
        }
        double t0 = now_s();
        tj_status st = tj_backward(p, NULL, NULL);
        double took = now_s() - t0;
        if (step == 0) backward_s = took;
        if (st == TJ_ERR_COMM && step >= 1) {
            if (took > 2 * timeout + 5) die(rank, "the failure took longer than the timeout");
            if (!strstr(tj_last_error(), "tj_dist_all_reduce")) die(rank, "the message names no collective");
            printf("ddp_fault: rank %d of %d: step %d failed after %.1f s (timeout %.0f s): %s\n", rank,
                   world, step, took, timeout, tj_last_error());
            /* later steps fail at once, the group being unusable */
            tj_tensor *again = NULL;
            if (tj_run(p, in, &again)) die(rank, "forward after the failure");
            tj_release(again);
            if (tj_backward(p, NULL, NULL) != TJ_ERR_COMM) die(rank, "a backward after the failure");
            fflush(stdout);
            _exit(0); /* no MPI_Finalize: it would wait for the rank that left */
        }
        if (st) die(rank, "backward");
        tjx_sgd(&t, p, 0.1);
    }
    fprintf(stderr, "ddp_fault: rank %d trained on after rank %d left\n", rank, leaver);
    fflush(stderr);
    _exit(1);
}
