/* test_cuda_harness.c — the host execution harness (backends/cuda/harness.h)
 * running the kernels of backends/cuda/kernels/selftest.cu against plain C:
 *   - grid-stride loops over many blocks, shared-memory trees, warp shuffles
 *     (every mode and width, partial warps, 64-bit values), votes, matches,
 *     reductions, disjoint half-warp masks, __syncthreads_count/and/or,
 *     dynamic shared memory, atomics across blocks running in parallel, a
 *     struct by value, 2-D and 3-D grids and blocks;
 *   - the errors: divergent barriers, a return before a barrier, half a warp
 *     at a full-mask shuffle, a deadlock and __trap come back as errors naming
 *     the kernel (never a hang), and the harness runs on afterwards; bad
 *     launch configurations; a compile error with the compiler's message;
 *   - the .so cache: a second load compiles nothing, an untrusted cache
 *     directory is not read; two threads loading and launching at once;
 *   - the cost of a launch of 1 x 256 threads, with and without a barrier.
 * Built without the CUDA backend, every test is skipped. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tests/support/runtime_testing.h"
#ifdef TJIT_HAVE_CUDA
#include "backends/cuda/harness.h"
#include "backends/cuda/sources.h"

static tjh_module *selftest;

static int load_selftest(void **state) {
    (void)state;
    const char *src = tjcu_source_text("selftest.cu");
    if (!src || tjh_module_load("selftest.cu", src, &selftest) != TJ_OK) {
        fprintf(stderr, "loading selftest.cu: %s\n", src ? tj_last_error() : "not embedded");
        return -1;
    }
    return 0;
}
static int unload_selftest(void **state) {
    (void)state;
    tjh_module_unload(selftest);
    return 0;
}

static tjh_function *kernel(const char *name) {
    tjh_function *f = NULL;
    if (tjh_get_function(selftest, name, &f) != TJ_OK) fail_msg("%s", tj_last_error());
    return f;
}

static tjcu_dim3 d3(unsigned x, unsigned y, unsigned z) { return tjcu_dim3_of(x, y, z); }

static void launch(const char *name, tjcu_dim3 grid, tjcu_dim3 block, size_t shared, void **args) {
    if (tjh_launch(kernel(name), grid, block, shared, args) != TJ_OK) fail_msg("%s: %s", name, tj_last_error());
}

/* Launches a kernel that must fail; the message must name the kernel and contain needle. */
static void launch_fails(const char *name, tjcu_dim3 grid, tjcu_dim3 block, void **args, const char *needle) {
    tj_clear_error();
    assert_int_equal(tjh_launch(kernel(name), grid, block, 0, args), TJ_ERR_INTERNAL);
    tt_assert_error(name);
    tt_assert_error(needle);
}

/* small integers as floats: every sum below is exact in any order */
static float *int_floats(int64_t n, unsigned seed) {
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((int)(seed >> 16) % 101 - 50);
    }
    return x;
}

/* ---- execution model ------------------------------------------------------------- */

static void test_saxpy_grid_stride(void **state) {
    (void)state;
    int64_t n = 100003;
    float *x = int_floats(n, 1), *y = int_floats(n, 2), *want = malloc((size_t)n * sizeof *want);
    float a = 0.5f;
    for (int64_t i = 0; i < n; i++) want[i] = a * x[i] + y[i];
    void *args[] = {&n, &a, &x, &y};
    launch("selftest_saxpy", d3(7, 1, 1), d3(128, 1, 1), 0, args); /* ~110 elements a thread */
    for (int64_t i = 0; i < n; i++) want[i] = a * x[i] + want[i];
    launch("selftest_saxpy", d3(1000, 1, 1), d3(96, 1, 1), 0, args); /* one or two a thread */
    for (int64_t i = 0; i < n; i++) assert_float_equal(y[i], want[i], 0);
    free(x), free(y), free(want);
}

static void test_block_sum_many_blocks(void **state) {
    (void)state;
    int64_t n = 250000;
    const unsigned blocks = 300, threads = 256;
    float *x = int_floats(n, 3), *out = calloc(blocks, sizeof *out);
    void *args[] = {&x, &n, &out};
    launch("selftest_block_sum", d3(blocks, 1, 1), d3(threads, 1, 1), 0, args);
    for (unsigned b = 0; b < blocks; b++) {
        double want = 0;
        for (int64_t i = (int64_t)b * threads; i < n; i += (int64_t)blocks * threads)
            for (unsigned t = 0; t < threads && i + t < n; t++) want += x[i + t];
        assert_float_equal(out[b], want, 0);
    }
    free(x), free(out);
}

static void test_warp_shuffles_and_votes(void **state) {
    (void)state;
    const unsigned blocks = 3, threads = 64, n = blocks * threads, warps = n / 32;
    float *x = int_floats(n, 4), sums[6], all_sums[192], scan[192], bcast[192];
    unsigned votes[18];
    x[40] = 150; /* any(x > 100) in warp 1 only */
    void *args[] = {&x, &(float *){sums}, &(float *){all_sums}, &(float *){scan}, &(float *){bcast},
                    &(unsigned *){votes}};
    launch("selftest_warp", d3(blocks, 1, 1), d3(threads, 1, 1), 0, args);
    for (unsigned w = 0; w < warps; w++) {
        float total = 0, prefix = 0;
        unsigned ballot = 0, any = 0, all = 1;
        for (unsigned l = 0; l < 32; l++) total += x[32 * w + l];
        assert_float_equal(sums[w], total, 0);
        for (unsigned l = 0; l < 32; l++) {
            unsigned i = 32 * w + l;
            prefix += x[i];
            assert_float_equal(all_sums[i], total, 0);
            assert_float_equal(scan[i], prefix, 0);
            assert_float_equal(bcast[i], x[32 * w + 3], 0);
            ballot |= (unsigned)(x[i] > 0) << l;
            all &= x[i] > -100;
            any |= x[i] > 100;
        }
        assert_int_equal(votes[3 * w], ballot);
        assert_int_equal(votes[3 * w + 1], all);
        assert_int_equal(votes[3 * w + 2], any);
    }
    free(x);
}

/* PTX's shfl.sync for a lane of a warp that has `lanes` lanes */
static int64_t shuffled(const long long *x, int warp_base, int lanes, int lane, int mode, int arg, int width) {
    int b = arg & 31, base = lane & ~(width - 1), end = base + width - 1, j;
    switch (mode) {
    case 0: j = base | (b & (width - 1)); break;
    case 1: j = lane - b >= base ? lane - b : lane; break;
    case 2: j = lane + b <= end ? lane + b : lane; break;
    default: j = (lane ^ b) <= end ? lane ^ b : lane; break;
    }
    return x[warp_base + (j < lanes ? j : lane)];
}

static void test_shuffle_modes_widths(void **state) {
    (void)state;
    const unsigned sizes[] = {64, 48}; /* 48: the second warp has 16 lanes */
    long long x[64], y[64];
    for (int i = 0; i < 64; i++) x[i] = (long long)i * 0x100000001ll + 7; /* both halves matter */
    const int widths[] = {32, 16, 8, 4, 2, 1}, argv_[] = {0, 1, 3, 5, 17, 31};
    int checked = 0;
    for (int s = 0; s < 2; s++)
        for (int mode = 0; mode < 4; mode++)
            for (int w = 0; w < 6; w++)
                for (int a = 0; a < 6; a++) {
                    int width = widths[w], arg = argv_[a];
                    void *args[] = {&mode, &arg, &width, &(long long *){x}, &(long long *){y}};
                    launch("selftest_shuffle", d3(1, 1, 1), d3(sizes[s], 1, 1), 0, args);
                    for (unsigned i = 0; i < sizes[s]; i++) {
                        int base = (int)(i / 32 * 32), lanes = (int)sizes[s] - base > 32 ? 32 : (int)sizes[s] - base;
                        if (y[i] != shuffled(x, base, lanes, (int)i % 32, mode, arg, width))
                            fail_msg("block %u mode %d arg %d width %d: thread %u got %lld", sizes[s], mode, arg,
                                     width, i, y[i]);
                        checked++;
                    }
                }
    assert_int_equal(checked, 4 * 6 * 6 * (64 + 48));
}

static void test_warp_matches_and_reductions(void **state) {
    (void)state;
    int x[64], out[8 * 64];
    for (int i = 0; i < 64; i++) x[i] = i < 32 ? (i % 3) * 1000 + i : 5000 + i % 4; /* warp 1: x / 1000 all 5 */
    void *args[] = {&(int *){x}, &(int *){out}};
    launch("selftest_warp_misc", d3(1, 1, 1), d3(64, 1, 1), 0, args);
    for (int w = 0; w < 2; w++) {
        int sum = 0, mn = x[32 * w], mx = x[32 * w], all_same = 1;
        unsigned orv = 0;
        for (int l = 0; l < 32; l++) {
            int v = x[32 * w + l];
            sum += v, orv |= (unsigned)v;
            mn = v < mn ? v : mn, mx = v > mx ? v : mx;
            all_same &= v / 1000 == x[32 * w] / 1000;
        }
        for (int l = 0; l < 32; l++) {
            int i = 32 * w + l;
            const int *o = out + 8 * i;
            unsigned same = 0;
            for (int k = 0; k < 32; k++) same |= (unsigned)(x[32 * w + k] == x[i]) << k;
            assert_int_equal((unsigned)o[0], 0xffffffffu);
            assert_int_equal((unsigned)o[1], same);
            assert_int_equal((unsigned)o[2], all_same ? 0xffffffffu : 0);
            assert_int_equal(o[3], all_same);
            assert_int_equal(o[4], sum);
            assert_int_equal(o[5], mn + mx);
            assert_int_equal((unsigned)o[6], orv);
            assert_int_equal(o[7], x[32 * w + (l < 16 ? l ^ 1 : l ^ 2)]);
        }
    }
    assert_int_equal(out[3], 0);       /* warp 0: x / 1000 differs */
    assert_int_equal(out[8 * 32 + 3], 1); /* warp 1: all 5 */
}

static void test_block_votes(void **state) {
    (void)state;
    const unsigned blocks = 4, threads = 96;
    int x[384], out[12] = {0};
    for (unsigned i = 0; i < blocks * threads; i++) x[i] = i < threads ? 1 : i < 2 * threads ? 0 : (int)(i % 7) - 3;
    void *args[] = {&(int *){x}, &(int *){out}};
    launch("selftest_block_votes", d3(blocks, 1, 1), d3(threads, 1, 1), 0, args);
    for (unsigned b = 0; b < blocks; b++) {
        int count = 0;
        for (unsigned t = 0; t < threads; t++) count += x[b * threads + t] > 0;
        assert_int_equal(out[3 * b], count);
        assert_int_equal(out[3 * b + 1], count == (int)threads);
        assert_int_equal(out[3 * b + 2], count > 0);
    }
}

static void test_dynamic_shared_memory(void **state) {
    (void)state;
    const unsigned blocks = 5, threads = 96;
    double x[480], y[480];
    for (unsigned i = 0; i < blocks * threads; i++) x[i] = i * 1.5;
    void *args[] = {&(double *){x}, &(double *){y}};
    launch("selftest_reverse", d3(blocks, 1, 1), d3(threads, 1, 1), threads * sizeof(double), args);
    for (unsigned b = 0; b < blocks; b++)
        for (unsigned t = 0; t < threads; t++) assert_float_equal(y[b * threads + t], x[b * threads + threads - 1 - t], 0);
}

static void test_atomics_across_blocks(void **state) {
    (void)state;
    int64_t n = 200000;
    float *x = int_floats(n, 5), total = 0;
    double dtotal = 0, want = 0;
    unsigned long long count = 0;
    int maxv = -1000, want_max = -1000;
    for (int64_t i = 0; i < n; i++) want += x[i], want_max = x[i] > want_max ? (int)x[i] : want_max;
    void *args[] = {&x, &n, &(float *){&total}, &(double *){&dtotal}, &(unsigned long long *){&count},
                    &(int *){&maxv}};
    launch("selftest_atomics", d3(64, 1, 1), d3(128, 1, 1), 0, args);
    assert_float_equal(total, want, 0);
    assert_float_equal(dtotal, want, 0);
    assert_int_equal(count, n);
    assert_int_equal(maxv, want_max);
    free(x);
}

struct selftest_affine { /* as selftest.cu has it */
    float scale;
    int n;
    double shift;
    char tag;
};

static void test_struct_argument(void **state) {
    (void)state;
    struct selftest_affine p = {.scale = 2.5f, .n = 70, .shift = -0.25, .tag = 3};
    float x[96];
    double y[96];
    for (int i = 0; i < 96; i++) x[i] = (float)i, y[i] = -1;
    void *args[] = {&p, &(float *){x}, &(double *){y}};
    launch("selftest_affine_apply", d3(3, 1, 1), d3(32, 1, 1), 0, args);
    for (int i = 0; i < 96; i++) assert_float_equal(y[i], i < p.n ? 2.5f * x[i] - 0.25 + 3 : -1, 0);
}

static void test_3d_grid_and_block(void **state) {
    (void)state;
    tjcu_dim3 grid = d3(3, 2, 2), block = d3(4, 3, 2);
    unsigned per_block = 24, total = 12 * per_block, *out = malloc(6 * total * sizeof *out);
    memset(out, 0xff, 6 * total * sizeof *out);
    void *args[] = {&out};
    launch("selftest_coords", grid, block, 0, args);
    unsigned g = 0;
    for (unsigned bz = 0; bz < 2; bz++)
        for (unsigned by = 0; by < 2; by++)
            for (unsigned bx = 0; bx < 3; bx++)
                for (unsigned tz = 0; tz < 2; tz++)
                    for (unsigned ty = 0; ty < 3; ty++)
                        for (unsigned tx = 0; tx < 4; tx++, g++) {
                            const unsigned want[6] = {tx, ty, tz, bx, by, bz};
                            for (int k = 0; k < 6; k++) assert_int_equal(out[6 * g + k], want[k]);
                        }
    assert_int_equal(g, total);
    free(out);
}

static void test_2d_transpose(void **state) {
    (void)state;
    int rows = 37, cols = 45;
    float *in = int_floats(rows * cols, 6), *out = calloc((size_t)(rows * cols), sizeof *out);
    void *args[] = {&in, &out, &rows, &cols};
    launch("selftest_transpose", d3(3, 3, 1), d3(16, 16, 1), 0, args);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) assert_float_equal(out[c * rows + r], in[r * cols + c], 0);
    free(in), free(out);
}

/* ---- errors ----------------------------------------------------------------------- */

static void test_divergent_barrier_is_an_error(void **state) {
    (void)state;
    int out[64], split = 20;
    void *args[] = {&split, &(int *){out}};
    launch_fails("selftest_divergent_barrier", d3(2, 1, 1), d3(64, 1, 1), args, "divergent barriers");
    launch_fails("selftest_early_exit", d3(1, 1, 1), d3(64, 1, 1), args, "returned while 20 threads wait at __syncthreads");
    void *one[] = {&(int *){out}};
    launch_fails("selftest_divergent_shuffle", d3(1, 1, 1), d3(64, 1, 1), one, "__shfl_sync");
    launch_fails("selftest_deadlock", d3(1, 1, 1), d3(64, 1, 1), one, "deadlock");
    int at = 2, wide[8 * 32];
    void *trap[] = {&at, &(int *){wide}};
    launch_fails("selftest_trap", d3(8, 1, 1), d3(32, 1, 1), trap, "block (2, 0, 0): thread (5, 0, 0) called __trap()");
    /* the runner goes on: every thread reaches the barrier now */
    split = 64;
    launch("selftest_divergent_barrier", d3(2, 1, 1), d3(64, 1, 1), 0, args);
    launch("selftest_early_exit", d3(1, 1, 1), d3(64, 1, 1), 0, args);
    for (int i = 0; i < 64; i++) assert_int_equal(out[i], 1);
}

static void test_bad_launches(void **state) {
    (void)state;
    tjh_function *f = kernel("selftest_touch");
    float x[1024];
    void *args[] = {&(float *){x}};
    assert_int_equal(tjh_launch(f, d3(1, 1, 1), d3(1025, 1, 1), 0, args), TJ_ERR_ARG);
    tt_assert_error("selftest_touch: block (1025, 1, 1) exceeds");
    assert_int_equal(tjh_launch(f, d3(1, 1, 1), d3(32, 32, 2), 0, args), TJ_ERR_ARG);
    assert_int_equal(tjh_launch(f, d3(0, 1, 1), d3(32, 1, 1), 0, args), TJ_ERR_ARG);
    tt_assert_error("zero extent");
    assert_int_equal(tjh_launch(f, d3(1, 65536, 1), d3(32, 1, 1), 0, args), TJ_ERR_ARG);
    assert_int_equal(tjh_launch(f, d3(1, 1, 1), d3(32, 1, 1), TJH_MAX_DYNAMIC_SHARED + 1, args), TJ_ERR_ARG);
    tt_assert_error("dynamic shared memory");
    assert_int_equal(tjh_launch(NULL, d3(1, 1, 1), d3(1, 1, 1), 0, args), TJ_ERR_ARG);
    tjh_function *none = NULL;
    assert_int_equal(tjh_get_function(selftest, "selftest_nothing", &none), TJ_ERR_ARG);
    assert_null(none);
    tt_assert_error("module selftest.cu has no kernel selftest_nothing");
}

static void test_compile_error_has_the_message(void **state) {
    (void)state;
    const char *src = "#include \"tjcu_builtins.h\"\n"
                      "extern \"C\" __global__ void broken(int *x) { x[threadIdx.x] = no_such_name; }\n"
                      "TJCU_EXPORT(broken)\n";
    tjh_module *m = NULL;
    tj_clear_error();
    assert_int_equal(tjh_module_load("broken.cu", src, &m), TJ_ERR_UNSUPPORTED);
    assert_null(m);
    tt_assert_error("module broken.cu: the host C++ compiler");
    tt_assert_error("broken.cu:2:");
    tt_assert_error("no_such_name");
}

/* ---- the cache --------------------------------------------------------------------- */

static const char *tiny_source = "#include \"tjcu_builtins.h\"\n"
                                 "extern \"C\" __global__ void tiny_fill(int v, int *out) {\n"
                                 "    out[blockIdx.x * blockDim.x + threadIdx.x] = v + (int)threadIdx.x;\n"
                                 "}\n"
                                 "TJCU_EXPORT(tiny_fill)\n";

static void run_tiny(tjh_module *m, int v) {
    tjh_function *f;
    assert_int_equal(tjh_get_function(m, "tiny_fill", &f), TJ_OK);
    int out[64] = {0};
    void *args[] = {&v, &(int *){out}};
    assert_int_equal(tjh_launch(f, d3(2, 1, 1), d3(32, 1, 1), 0, args), TJ_OK);
    for (int i = 0; i < 64; i++) assert_int_equal(out[i], v + i % 32);
}

static void test_cache_second_load_compiles_nothing(void **state) {
    (void)state;
    char *dir = tt_mkdtemp();
    setenv("TJIT_CACHE_DIR", dir, 1);
    tjh_stats s0 = tjh_get_stats();
    tjh_module *a, *b, *c;
    assert_int_equal(tjh_module_load("tiny.cu", tiny_source, &a), TJ_OK);
    tjh_stats s1 = tjh_get_stats();
    assert_int_equal(s1.compiles, s0.compiles + 1);
    assert_int_equal(tjh_module_load("tiny.cu", tiny_source, &b), TJ_OK); /* loaded: shared */
    assert_ptr_equal(a, b);
    assert_int_equal(tjh_get_stats().memory_hits, s1.memory_hits + 1);
    tjh_module_unload(b);
    run_tiny(a, 10);
    tjh_module_unload(a);
    assert_int_equal(tjh_module_load("tiny.cu", tiny_source, &c), TJ_OK); /* unloaded: from the disk */
    tjh_stats s2 = tjh_get_stats();
    assert_int_equal(s2.compiles, s1.compiles);
    assert_int_equal(s2.disk_hits, s1.disk_hits + 1);
    run_tiny(c, 20);
    tjh_module_unload(c);
    /* the same directory made writable by others is not read: compiled again */
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(tjh_module_load("tiny.cu", tiny_source, &c), TJ_OK);
    tjh_stats s3 = tjh_get_stats();
    assert_int_equal(s3.compiles, s2.compiles + 1);
    assert_int_equal(s3.disk_hits, s2.disk_hits);
    run_tiny(c, 30);
    tjh_module_unload(c);
    chmod(dir, 0700);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

/* ---- threads ------------------------------------------------------------------------ */

typedef struct worker {
    unsigned seed;
    int ok;
} worker;

static void *launch_loop(void *p) {
    worker *w = p;
    tjh_module *m;
    tjh_function *f;
    if (tjh_module_load("selftest.cu", tjcu_source_text("selftest.cu"), &m) != TJ_OK) return NULL;
    if (tjh_get_function(m, "selftest_block_sum", &f) == TJ_OK) {
        int64_t n = 20000;
        float *x = int_floats(n, w->seed), out[16];
        double want = 0;
        for (int64_t i = 0; i < n; i++) want += x[i];
        void *args[] = {&x, &n, &(float *){out}};
        w->ok = 1;
        for (int rep = 0; rep < 20 && w->ok; rep++) {
            w->ok = tjh_launch(f, d3(16, 1, 1), d3(128, 1, 1), 0, args) == TJ_OK;
            double got = 0;
            for (int b = 0; b < 16; b++) got += out[b];
            w->ok = w->ok && got == want;
        }
        free(x);
    }
    tjh_module_unload(m);
    return NULL;
}

static void test_two_threads_at_once(void **state) {
    (void)state;
    pthread_t t[2];
    worker w[2] = {{7, 0}, {8, 0}};
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, launch_loop, &w[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_true(w[0].ok && w[1].ok);
}

/* ---- cost ----------------------------------------------------------------------------- */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double launch_us(const char *name, float *x, int reps) {
    tjh_function *f = kernel(name);
    void *args[] = {&x};
    double t0 = now_us();
    for (int r = 0; r < reps; r++) assert_int_equal(tjh_launch(f, d3(1, 1, 1), d3(256, 1, 1), 0, args), TJ_OK);
    return (now_us() - t0) / reps;
}

static void test_launch_cost(void **state) {
    (void)state;
    float x[256] = {0};
    launch_us("selftest_touch", x, 10); /* warm: fibers made */
    launch_us("selftest_touch_sync", x, 10);
    double plain = launch_us("selftest_touch", x, 2000), synced = launch_us("selftest_touch_sync", x, 500);
    for (int i = 0; i < 256; i++) assert_float_equal(x[i], 2520, 0);
    printf("harness: a launch of 1 x 256 threads takes %.1f us, %.1f us with one __syncthreads\n", plain, synced);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saxpy_grid_stride),
        cmocka_unit_test(test_block_sum_many_blocks),
        cmocka_unit_test(test_warp_shuffles_and_votes),
        cmocka_unit_test(test_shuffle_modes_widths),
        cmocka_unit_test(test_warp_matches_and_reductions),
        cmocka_unit_test(test_block_votes),
        cmocka_unit_test(test_dynamic_shared_memory),
        cmocka_unit_test(test_atomics_across_blocks),
        cmocka_unit_test(test_struct_argument),
        cmocka_unit_test(test_3d_grid_and_block),
        cmocka_unit_test(test_2d_transpose),
        cmocka_unit_test(test_divergent_barrier_is_an_error),
        cmocka_unit_test(test_bad_launches),
        cmocka_unit_test(test_compile_error_has_the_message),
        cmocka_unit_test(test_cache_second_load_compiles_nothing),
        cmocka_unit_test(test_two_threads_at_once),
        cmocka_unit_test(test_launch_cost),
    };
    return cmocka_run_group_tests(tests, load_selftest, unload_selftest);
}

#else

static void test_cuda_backend_not_built(void **state) {
    (void)state;
    skip();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cuda_backend_not_built)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
