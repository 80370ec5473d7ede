/* ddp.c — data-parallel training steps under mpirun (make bench-ddp, through
 * bench/ddp_report.py): the MLP and the transformer block of examples/models,
 * each step a forward, tj_backward with DistributedDataParallel (tj_ddp_wrap
 * over MPI) and SGD. Weak scaling, as DDP is used: every rank trains on a
 * batch of its own of a fixed size (MLP 256 rows, transformer 1 sequence of
 * 128), so the global batch is ranks times that. One thread per rank.
 *
 * steps/s is the median over timed windows after warm-up; every window starts
 * after a barrier, and rank 0 decides the steps per window from its warm-up
 * (every rank must run the same number of steps: each one all-reduces). The
 * DDP statistics of the timed steps give the all-reduce time (comm_s) and the
 * part of it tj_backward waited for after the backward program ended
 * (exposed_s): hidden = 1 - exposed/comm is the share that overlapped backward.
 * Then the wrapper is freed and the same windows are timed without DDP, every
 * rank at once (no_comm_steps_per_s): the ranks' sharing of the machine alone.
 * Rank 0 prints the ISA lines and one line per workload and bucket size:
 *   ddp {"impl": "tjit", "workload": "mlp", "ranks": 2, "steps_per_s": ..., ...}
 * Usage: mpirun -np N bench_ddp [--budget S] [--windows K] [--only mlp,transformer]
 *                               [--bucket-bytes B[,B...]]   (0: the 25 MB default) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tjit/distributed.h"

typedef struct workload {
    const char *name;
    const tjx_model *model;
    const char *loss;
    int64_t batch; /* per rank */
    double lr;
} workload;

static const workload WORKLOADS[] = {
    {"mlp", &tjx_mlp, "nll", 256, 0.01},
    {"transformer", &tjx_transformer, "square", 1, 0.01},
};

typedef struct options {
    double budget; /* seconds of timed steps per workload and bucket size */
    int windows;
    const char *only;
    int64_t bucket_bytes[8];
    int n_buckets;
} options;

static int fail(const char *what) {
    fprintf(stderr, "bench_ddp (rank %d): %s: %s\n", tj_dist_rank(), what, tj_last_error());
    return 1;
}

/* This rank's batch: the model's inputs at the workload's batch size and the
 * loss's target, from a generator seeded by the rank (new references). */
static tj_status make_batch(const workload *w, tj_tensor **in) {
    tj_generator *gen = tj_generator_new(1000 + (uint64_t)tj_dist_rank());
    tj_scope_begin();
    if (w->model == &tjx_mlp) {
        int64_t x[2] = {w->batch, 784};
        in[0] = tj_keep(tj_randn(x, 2, TJ_F32, gen));
        tj_tensor *u = tj_rand(&w->batch, 1, TJ_F64, gen);
        in[1] = tj_keep(tj_to_dtype(tj_floor(tj_mul_scalar(u, 10.0)), TJ_I64));
    } else {
        int64_t x[3] = {w->batch, 128, 256};
        in[0] = tj_keep(tj_randn(x, 3, TJ_F32, gen));
        in[1] = tj_keep(tj_zeros(NULL, 0, TJ_F32)); /* "square" needs no target */
    }
    tj_scope_end();
    tj_generator_free(gen);
    return in[0] && in[1] ? TJ_OK : tj_last_status();
}

/* Rank 0's value of x on every rank. */
static tj_status share(double *x) {
    tj_tensor *t = tj_from_array(x, (int64_t[]){1}, 1, TJ_F64);
    tj_status st = t ? tj_dist_broadcast(t, 0, NULL, NULL) : tj_last_status();
    if (!st) *x = ((double *)tj_data(t))[0];
    tj_release(t);
    return st;
}

static tj_status steps(tjx_task *t, tj_program *p, tj_tensor **in, double lr, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        tj_status st = tjx_train_step(t, p, in, lr, NULL);
        if (st) return st;
    }
    return TJ_OK;
}

/* Times `windows` windows of n steps each, every one after a barrier: steps/s to rate. */
static tj_status windows(tjx_task *t, tj_program *p, tj_tensor **in, double lr, int64_t n,
                         int windows, double *rate) {
    for (int k = 0; k < windows; k++) {
        tj_status st = tj_dist_barrier(NULL, NULL);
        double t0 = bench_now();
        if (!st) st = steps(t, p, in, lr, n);
        if (st) return st;
        rate[k] = (double)n / (bench_now() - t0);
    }
    return TJ_OK;
}

/* Times one workload with one bucket size; rank 0 prints its line. */
static int run(const workload *w, int64_t bucket_bytes, const options *o) {
    /* the same start on every rank (the wrap broadcasts rank 0's anyway) */
    tj_generator *gen = tj_generator_new(3);
    tjx_task t = {w->model, w->model->create(gen), w->loss};
    tj_generator_free(gen);
    tj_tensor *in[2] = {NULL, NULL};
    if (!t.params || make_batch(w, in)) return fail("inputs");
    tj_program *p = tjx_compile_training(&t, in, NULL);
    if (!p) return fail("compile");
    tj_ddp_options dopt = {.bucket_bytes = bucket_bytes};
    tj_ddp *ddp = tj_ddp_wrap(p, NULL, &dopt);
    if (!ddp) return fail("tj_ddp_wrap");

    /* warm-up, then rank 0's time of a step sets the steps per window */
    if (steps(&t, p, in, w->lr, 3)) return fail("warm-up");
    double t0 = bench_now();
    if (steps(&t, p, in, w->lr, 3)) return fail("warm-up");
    double n_steps = o->budget / o->windows / ((bench_now() - t0) / 3);
    if (n_steps < 2) n_steps = 2;
    if (share(&n_steps)) return fail("broadcast");
    int64_t n = (int64_t)n_steps;

    tj_ddp_stats s0, s1;
    double *rate = malloc(sizeof(double) * (size_t)o->windows);
    double *alone = malloc(sizeof(double) * (size_t)o->windows);
    if (tj_ddp_get_stats(ddp, &s0)) return fail("tj_ddp_get_stats");
    if (windows(&t, p, in, w->lr, n, o->windows, rate)) return fail("timed steps");
    if (tj_ddp_get_stats(ddp, &s1)) return fail("tj_ddp_get_stats");
    /* the same steps without DDP, every rank at once: what the ranks' sharing
     * of the machine leaves of one rank's speed, with no communication */
    tj_ddp_free(ddp);
    if (steps(&t, p, in, w->lr, 2) || windows(&t, p, in, w->lr, n, o->windows, alone))
        return fail("steps without DDP");
    double mean_rate = 0;
    for (int k = 0; k < o->windows; k++) mean_rate += rate[k] / o->windows;
    double med = bench_median(rate, o->windows), med_alone = bench_median(alone, o->windows);
    double st = (double)(s1.steps - s0.steps), comm = s1.comm_s - s0.comm_s;
    double exposed = s1.exposed_s - s0.exposed_s;
    char hidden[32] = "null"; /* no all-reduce time: nothing to hide (one rank) */
    if (comm > 0) snprintf(hidden, sizeof hidden, "%.4g", 1.0 - exposed / comm);
    if (tj_dist_rank() == 0) {
        printf("ddp {\"impl\": \"tjit\", \"workload\": \"%s\", \"ranks\": %d, "
               "\"batch_per_rank\": %lld, \"global_batch\": %lld, \"threads_per_rank\": %d, "
               "\"bucket_bytes\": %lld, \"buckets\": %d, \"parameters\": %d, \"grad_bytes\": %lld, "
               "\"windows\": %d, \"steps_per_window\": %lld, \"steps_per_s\": %.6g, "
               "\"steps_per_s_min\": %.6g, \"steps_per_s_max\": %.6g, \"steps_per_s_mean\": %.6g, "
               "\"no_comm_steps_per_s\": %.6g, \"comm_ms_per_step\": %.6g, "
               "\"exposed_ms_per_step\": %.6g, \"hidden\": %s, \"early_buckets_per_step\": %.4g}\n",
               w->name, tj_dist_world_size(), (long long)w->batch,
               (long long)(w->batch * tj_dist_world_size()), tj_get_num_threads(),
               (long long)(bucket_bytes ? bucket_bytes : 25 << 20) /* 0: the default, 25 MiB */, s1.buckets, s1.parameters,
               (long long)(st > 0 ? (double)(s1.bytes_reduced - s0.bytes_reduced) / st : 0),
               o->windows, (long long)n, med, rate[0], rate[o->windows - 1], mean_rate, med_alone,
               st > 0 ? 1e3 * comm / st : 0, st > 0 ? 1e3 * exposed / st : 0, hidden,
               st > 0 ? (double)(s1.buckets_started_early - s0.buckets_started_early) / st : 0);
        fflush(stdout);
    }
    free(rate);
    free(alone);
    tj_program_free(p);
    tj_release(in[0]);
    tj_release(in[1]);
    w->model->destroy(t.params);
    return 0;
}

static int parse(int argc, char **argv, options *o) {
    *o = (options){.budget = 3.0, .windows = 5, .only = NULL, .n_buckets = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--budget") && v) o->budget = atof(argv[++i]);
        else if (!strcmp(a, "--windows") && v) o->windows = atoi(argv[++i]);
        else if (!strcmp(a, "--only") && v) o->only = argv[++i];
        else if (!strcmp(a, "--bucket-bytes") && v) {
            o->n_buckets = 0;
            for (char *s = argv[++i], *end; *s && o->n_buckets < 8; s = *end ? end + 1 : end) {
                o->bucket_bytes[o->n_buckets++] = strtoll(s, &end, 10);
                if (end == s || (*end && *end != ','))
                    return fprintf(stderr, "bench_ddp: bad --bucket-bytes %s\n", v), 1;
            }
        } else {
            fprintf(stderr, "usage: mpirun -np N bench_ddp [--budget S] [--windows K] "
                            "[--only mlp,transformer] [--bucket-bytes B[,B...]]\n");
            return 1;
        }
    }
    if (o->budget <= 0 || o->windows < 1)
        return fprintf(stderr, "bench_ddp: --budget and --windows must be positive\n"), 1;
    return 0;
}

static bool chosen(const options *o, const char *name) {
    if (!o->only) return true;
    size_t n = strlen(name);
    for (const char *s = o->only; (s = strstr(s, name)); s += n)
        if ((s == o->only || s[-1] == ',') && (s[n] == 0 || s[n] == ',')) return true;
    return false;
}

int main(int argc, char **argv) {
    options o;
    if (parse(argc, argv, &o)) return 2;
    tj_set_num_threads(1); /* one thread per rank, as OMP_NUM_THREADS=1 for PyTorch */
    if (tj_dist_init("mpi", NULL)) {
        fprintf(stderr, "bench_ddp: tj_dist_init: %s\n", tj_last_error());
        return 1;
    }
    if (tj_dist_rank() == 0) {
        bench_print_isa();
        printf("tjit %s, %d ranks, %d thread(s) per rank\n", tj_version(), tj_dist_world_size(),
               tj_get_num_threads());
        fflush(stdout);
    }
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof WORKLOADS / sizeof *WORKLOADS; i++)
        for (int b = 0; !rc && b < o.n_buckets && chosen(&o, WORKLOADS[i].name); b++)
            rc = run(&WORKLOADS[i], o.bucket_bytes[b], &o);
    tj_dist_finalize();
    return rc;
}
