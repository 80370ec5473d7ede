/* train.c — training through traced forward graphs and derived backward
 * graphs: the MLP on a classification set made here (ten Gaussian clusters in
 * 784 dims), the 2-layer LSTM on a sequence task (follow a running sum), and
 * SGD steps of the CNN and of the transformer block. Parameters are bound to
 * the programs by reference, so SGD updates them in place.
 * Usage: example_train [mlp|lstm|cnn|transformer|all] [steps] [--device cpu|cuda] [--ddp]
 * With --device cuda the parameters and batch_norm's running statistics move
 * to the GPU (tj_move_to_device) and the data, made on the host from the same
 * seeds as on the CPU, is copied there: the programs are traced on CUDA
 * inputs, so forward, saved values, backward and SGD all stay on the device,
 * and only the loss of each step comes back. Exit status 2 when there is no
 * CUDA device.
 * With --ddp, under `mpirun -np N`, each rank trains on its shard of the same
 * global batch (DistributedDataParallel, tjit/distributed.h): the gradients
 * are averaged across the ranks during backward, and rank 0 prints the mean
 * of the ranks' losses. On CUDA the ranks communicate through NCCL, one GPU
 * each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tjit/distributed.h"

/* ---- data parallelism (--ddp) ---------------------------------------------------------- */

static bool DDP; /* under mpirun with --ddp: tj_dist_init done */
static tj_device DEVICE = {TJ_CPU, 0}; /* where the models train (--device) */

/* This rank's share of a global batch along dim, in place of *t (a scalar
 * target is every rank's); false, with a message, when the batch does not
 * split evenly across the ranks. */
static bool take_shard(tj_tensor **t, int dim, const char *what) {
    int world = tj_dist_world_size();
    if (!DDP || tj_ndim(*t) == 0) return true;
    int64_t batch = tj_size(*t, dim);
    if (batch % world) {
        if (tj_dist_rank() == 0)
            fprintf(stderr, "train %s: the global batch of %lld does not split evenly across %d ranks\n",
                    what, (long long)batch, world);
        return false;
    }
    int64_t n = batch / world;
    tj_scope_begin();
    tj_tensor *mine = tj_retain(tj_contiguous(tj_narrow(*t, dim, tj_dist_rank() * n, n)));
    tj_scope_end();
    tj_release(*t);
    *t = mine;
    return mine != NULL;
}

/* The program's gradients averaged across the ranks from now on; NULL (and
 * nothing to do) without --ddp. */
static bool wrap(tj_program *p, tj_ddp **ddp, const char *what) {
    *ddp = NULL;
    if (!DDP || !p) return true;
    *ddp = tj_ddp_wrap(p, NULL, NULL);
    if (!*ddp) fprintf(stderr, "train %s: %s\n", what, tj_last_error());
    return *ddp != NULL;
}

/* The mean of the ranks' losses (the loss itself without --ddp). */
static double mean_loss(double loss) {
    if (!DDP) return loss;
    int64_t one = 1;
    tj_scope_begin();
    tj_tensor *t = tj_to_device(tj_from_array(&loss, &one, 1, TJ_F64), DEVICE); /* nccl: on the GPU */
    if (!t || tj_dist_all_reduce(t, TJ_REDUCE_AVG, NULL, NULL) || tj_item(t, &loss)) loss = NAN;
    tj_scope_end();
    return loss;
}

static bool printing(void) { return tj_dist_rank() == 0; }

/* ---- the device (--device) ---------------------------------------------------------- */

/* The GPU this rank trains on: cuda:0 alone; under --ddp the one the NCCL
 * group picked for this rank (docs/distributed.md, "Devices per rank"). */
static int rank_gpu(void) {
    if (!DDP) return 0;
    const char *local = getenv("LOCAL_RANK");
    if (!local || !local[0]) local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (local && local[0]) return atoi(local);
    int n = tj_cuda_device_count();
    return n > 0 ? tj_dist_rank() % n : 0;
}

/* *t replaced by its copy on the training device (nothing to do on the CPU). */
static bool to_training_device(tj_tensor **t, const char *what) {
    if (DEVICE.type == TJ_CPU || !*t) return *t != NULL;
    tj_scope_begin();
    tj_tensor *moved = tj_retain(tj_to_device(*t, DEVICE));
    tj_scope_end();
    if (!moved) fprintf(stderr, "train %s: copying the data to cuda:%d: %s\n", what, DEVICE.index,
                        tj_last_error());
    tj_release(*t);
    *t = moved;
    return moved != NULL;
}

/* The model's parameters and buffers (batch_norm's running statistics) on the
 * training device, in place, as module.to(device): the programs traced later
 * bind them where they are. */
static bool move_model(const tjx_model *m, void *params) {
    enum { CAP = 64 };
    tj_tensor *all[CAP];
    int n = m->parameters(params, all, CAP);
    if (m->buffers && n < CAP) n += m->buffers(params, all + n, CAP - n);
    if (n > CAP) {
        fprintf(stderr, "train %s: more than %d parameters and buffers to move\n", m->name, CAP);
        return false;
    }
    for (int i = 0; i < n && DEVICE.type != TJ_CPU; i++)
        if (tj_move_to_device(all[i], DEVICE)) {
            fprintf(stderr, "train %s: moving %s: %s\n", m->name, tj_tensor_name(all[i]), tj_last_error());
            return false;
        }
    return true;
}

/* ---- data ------------------------------------------------------------------------ */

/* ten cluster centres, fixed by the seed; made in a scope of their own so they
 * outlive whatever scope is open */
static tj_tensor *centres(void) {
    static tj_tensor *c;
    if (!c) {
        tj_generator *g = tj_generator_new(1234);
        int64_t s[2] = {10, 784};
        tj_scope_begin();
        c = tj_retain(tj_randn(s, 2, TJ_F32, g));
        tj_scope_end();
        tj_generator_free(g);
    }
    return c;
}

/* x = centre[class] + noise; the classes are the targets (new references) */
static void mlp_batch(tj_generator *gen, tj_tensor **x, tj_tensor **y) {
    int64_t b = 64, s[2] = {64, 784};
    tj_scope_begin();
    tj_tensor *cls = tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64);
    tj_tensor *noise = tj_mul_scalar(tj_randn(s, 2, TJ_F32, gen), 2.0);
    *x = tj_retain(tj_add(tj_index_select(centres(), 0, cls), noise, 1.0));
    *y = tj_retain(cls);
    tj_scope_end();
}

/* the LSTM follows tanh of the running sum of its input's first feature */
static tj_tensor *running_sum_target(tj_tensor *x) {
    int64_t steps = tj_size(x, 0), batch = tj_size(x, 1);
    tj_tensor *t = tj_zeros((int64_t[]){steps, batch, 64}, 3, TJ_F32);
    float *d = tj_data(t);
    for (int64_t b = 0; b < batch; b++) {
        double sum = 0;
        for (int64_t s = 0; s < steps; s++) {
            sum += tj_get(x, (int64_t[]){s, b, 0});
            for (int64_t h = 0; h < 64; h++) d[(s * batch + b) * 64 + h] = (float)tanh(0.5 * sum);
        }
    }
    return t;
}

static bool printed_step(int step, int steps, int every) {
    return step % (steps / every ? steps / every : 1) == 0 || step == steps - 1;
}

/* ---- runs ---------------------------------------------------------------------------- */

/* " on cuda:N" when training there, for the headings */
static const char *where(void) {
    static char text[32];
    if (DEVICE.type == TJ_CPU) return "";
    snprintf(text, sizeof text, " on cuda:%d", DEVICE.index);
    return text;
}

/* The step's inputs sharded (--ddp) and on the training device. */
static bool place_inputs(tj_tensor **in, int n, int batch_dim, const char *what) {
    bool ok = true;
    for (int i = 0; i < n; i++) ok = ok && take_shard(&in[i], batch_dim, what);
    for (int i = 0; i < n; i++) ok = ok && to_training_device(&in[i], what);
    return ok;
}

static int train_mlp(int steps) {
    tj_generator *gen = tj_generator_new(7);
    tjx_task t = {&tjx_mlp, tjx_mlp.create(gen), "nll"};
    tj_tensor *in[2];
    mlp_batch(gen, &in[0], &in[1]);
    bool ready = place_inputs(in, 2, 0, "mlp") && move_model(&tjx_mlp, t.params);
    tj_program *p = ready ? tjx_compile_training(&t, in, NULL) : NULL;
    tj_ddp *ddp = NULL;
    int rc = 0;
    if (ready && !p) fprintf(stderr, "train mlp: %s\n", tj_last_error());
    if (!p || !wrap(p, &ddp, "mlp")) {
        rc = 1;
    } else if (printing()) {
        printf("MLP 784-256-256-10 on ten Gaussian clusters, batch 64, SGD lr 0.05%s", where());
        if (DDP) printf(" (%d ranks, %lld rows each)", tj_dist_world_size(), (long long)tj_size(in[0], 0));
        printf(":\n");
    }
    for (int step = 0; !rc && step < steps; step++) {
        if (step) { /* a fresh batch each step, the same on every rank */
            tj_release(in[0]);
            tj_release(in[1]);
            mlp_batch(gen, &in[0], &in[1]);
            if (!place_inputs(in, 2, 0, "mlp")) {
                rc = 1;
                break;
            }
        }
        double loss;
        if (tjx_train_step(&t, p, in, 0.05, &loss)) {
            fprintf(stderr, "train mlp: %s\n", tj_last_error());
            rc = 1;
            break;
        }
        loss = mean_loss(loss);
        if (printing() && printed_step(step, steps, 10)) printf("  step %3d  loss %.4f\n", step, loss);
    }
    tj_ddp_free(ddp);
    tj_release(in[0]);
    tj_release(in[1]);
    tj_program_free(p);
    tjx_mlp.destroy(t.params);
    tj_generator_free(gen);
    tj_release(centres());
    return rc;
}

/* Trains a registry model on its example inputs. */
static int train_model(const tjx_model *m, const char *loss, bool sequence_target, int steps,
                       double lr) {
    tj_generator *gen = tj_generator_new(9);
    tjx_task t = {m, m->create(gen), loss};
    tj_tensor *in[4];
    if (!t.params || m->make_inputs(t.params, gen, in)) return 1;
    /* the target is made on the host, from the input there */
    in[m->n_in] = sequence_target ? running_sum_target(in[0]) : tj_zeros(NULL, 0, TJ_F32);
    /* a sequence's batch is its second dimension */
    bool ready = place_inputs(in, m->n_in + 1, sequence_target, m->name) && move_model(m, t.params);
    tj_program *p = ready ? tjx_compile_training(&t, in, NULL) : NULL;
    tj_ddp *ddp = NULL;
    int rc = 0;
    if (ready && !p) fprintf(stderr, "train %s: %s\n", m->name, tj_last_error());
    if (!p || !wrap(p, &ddp, m->name)) rc = 1;
    for (int step = 0; !rc && step < steps; step++) {
        double l;
        if (tjx_train_step(&t, p, in, lr, &l)) {
            fprintf(stderr, "train %s: %s\n", m->name, tj_last_error());
            rc = 1;
            break;
        }
        l = mean_loss(l);
        if (printing() && printed_step(step, steps, 8)) printf("  %s step %3d  loss %.5f\n", m->name, step, l);
    }
    tj_ddp_free(ddp);
    for (int i = 0; i <= m->n_in; i++) tj_release(in[i]);
    tj_program_free(p);
    m->destroy(t.params);
    tj_generator_free(gen);
    return rc;
}

int main(int argc, char **argv) {
    const char *args[2] = {NULL, NULL}, *device = "cpu";
    int n_args = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ddp")) DDP = true;
        else if (!strcmp(argv[i], "--device")) device = i + 1 < argc ? argv[++i] : "";
        else if (n_args < 2) args[n_args++] = argv[i];
    }
    bool cuda = !strcmp(device, "cuda");
    if (!cuda && strcmp(device, "cpu")) {
        fprintf(stderr, "example_train: --device %s: expected cpu or cuda\n", device);
        return 2;
    }
    const char *which = args[0] ? args[0] : "all";
    int steps = args[1] ? atoi(args[1]) : 60;
    if (cuda && !tj_cuda_is_available()) {
        const char *why = tj_last_error();
        fprintf(stderr, "example_train --device cuda: no CUDA device is available%s%s (without a GPU, "
                "TJIT_CUDA_DRIVER=host runs the CUDA kernels on the host execution harness)\n",
                why[0] ? ": " : "", why);
        return 2;
    }
    if (DDP && tj_dist_init(cuda ? "nccl" : "mpi", NULL) != TJ_OK) {
        fprintf(stderr, "example_train --ddp: %s\n", tj_last_error());
        return 1;
    }
    if (cuda) DEVICE = TJ_DEVICE_CUDA(rank_gpu());
    bool all = !strcmp(which, "all");
    int rc = 0;
    if (all || !strcmp(which, "mlp")) rc |= train_mlp(steps);
    if (all || !strcmp(which, "lstm")) {
        if (printing()) printf("2-layer LSTM following tanh of a running sum, mse, SGD lr 0.5%s:\n", where());
        rc |= train_model(&tjx_lstm, "mse", true, steps, 0.5);
    }
    if (all || !strcmp(which, "cnn")) {
        if (printing()) printf("CNN%s, three SGD steps (loss: mean square of the logits):\n", where());
        rc |= train_model(&tjx_cnn, "square", false, 3, 0.001);
    }
    if (all || !strcmp(which, "transformer")) {
        if (printing())
            printf("transformer block%s, three SGD steps (loss: mean square of the outputs):\n", where());
        rc |= train_model(&tjx_transformer, "square", false, 3, 0.01);
    }
    if (DDP) tj_dist_finalize();
    return rc;
}
