/* selftest.cu — kernels that exercise CUDA's execution model, one part each:
 * grid-stride loops, shared-memory trees with __syncthreads, warp shuffles,
 * votes, matches and reductions, dynamic shared memory, atomics across
 * blocks, a struct passed by value, 2-D and 3-D grids, and (on purpose) the
 * errors a device leaves undefined: divergent barriers, early returns before
 * a barrier, half a warp at a full-mask shuffle, a deadlock, __trap.
 * tests/test_cuda_harness.c runs them on the host execution harness against
 * plain C; tests/test_cuda_nvrtc.c compiles them with NVRTC and ptxas. */
#include "tjcu_builtins.h"

/* y = a * x + y over n elements, any grid: a grid-stride loop */
extern "C" __global__ void selftest_saxpy(int64_t n, float a, const float *__restrict__ x,
                                          float *__restrict__ y) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}
TJCU_EXPORT(selftest_saxpy)

/* The sum of a block's grid-stride share of x, by a shared-memory tree
 * (blockDim.x a power of two, at most 256). */
__device__ float block_tree_sum(const float *x, int64_t n) {
    __shared__ float partial[256];
    unsigned t = threadIdx.x;
    float acc = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + t; i < n; i += (int64_t)blockDim.x * gridDim.x)
        acc += x[i];
    partial[t] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    float sum = partial[0];
    __syncthreads(); /* partial is reused by the block's next call */
    return sum;
}

/* out[blockIdx.x] = the block's share of sum(x) */
extern "C" __global__ void selftest_block_sum(const float *x, int64_t n, float *out) {
    float s = block_tree_sum(x, n);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
TJCU_EXPORT(selftest_block_sum)

/* Per warp (blockDim.x a multiple of 32), for x[i] at thread i of the grid:
 *   sums[w]       the warp's sum (__shfl_down_sync tree, lane 0)
 *   all_sums[i]   the warp's sum in every lane (__shfl_xor_sync butterfly)
 *   scan[i]       the inclusive prefix sum within the warp (__shfl_up_sync)
 *   bcast[i]      lane 3's value (__shfl_sync)
 *   votes[3w..]   __ballot_sync(x > 0), __all_sync(x > -100), __any_sync(x > 100) */
extern "C" __global__ void selftest_warp(const float *x, float *sums, float *all_sums, float *scan,
                                         float *bcast, unsigned *votes) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % warpSize, w = i / warpSize;
    float v = x[i];
    float s = v;
    for (int d = 16; d > 0; d /= 2) s += __shfl_down_sync(0xffffffffu, s, d);
    if (lane == 0) sums[w] = s;
    float b = v;
    for (int m = 1; m < 32; m *= 2) b += __shfl_xor_sync(0xffffffffu, b, m);
    all_sums[i] = b;
    float p = v;
    for (unsigned d = 1; d < 32; d *= 2) {
        float q = __shfl_up_sync(0xffffffffu, p, d);
        if (lane >= d) p += q;
    }
    scan[i] = p;
    bcast[i] = __shfl_sync(0xffffffffu, v, 3);
    unsigned ballot = __ballot_sync(0xffffffffu, v > 0.0f);
    int all = __all_sync(0xffffffffu, v > -100.0f), any = __any_sync(0xffffffffu, v > 100.0f);
    if (lane == 0) {
        votes[3 * w] = ballot;
        votes[3 * w + 1] = (unsigned)all;
        votes[3 * w + 2] = (unsigned)any;
    }
}
TJCU_EXPORT(selftest_warp)

/* y[i] = one shuffle of the 64-bit x[i] over the block's existing lanes:
 * mode 0 __shfl_sync, 1 up, 2 down, 3 xor, with its lane argument and width */
extern "C" __global__ void selftest_shuffle(int mode, int arg, int width, const long long *x, long long *y) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned mask = __activemask();
    long long v = x[i];
    if (mode == 0) v = __shfl_sync(mask, v, arg, width);
    else if (mode == 1) v = __shfl_up_sync(mask, v, (unsigned)arg, width);
    else if (mode == 2) v = __shfl_down_sync(mask, v, (unsigned)arg, width);
    else v = __shfl_xor_sync(mask, v, arg, width);
    y[i] = v;
}
TJCU_EXPORT(selftest_shuffle)

/* out[8i ..] for thread i: __activemask, __match_any_sync(x), __match_all_sync(x / 1000) and its
 * predicate, __reduce_add/min/max_sync(x), __reduce_or_sync, and a shuffle by half-warps with
 * disjoint masks (lanes 0-15 swap with lane ^ 1, lanes 16-31 with lane ^ 2) */
extern "C" __global__ void selftest_warp_misc(const int *x, int *out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    int v = x[i], pred = 0;
    int *o = out + 8 * i;
    o[0] = (int)__activemask();
    o[1] = (int)__match_any_sync(0xffffffffu, v);
    o[2] = (int)__match_all_sync(0xffffffffu, v / 1000, &pred);
    o[3] = pred;
    o[4] = __reduce_add_sync(0xffffffffu, v);
    o[5] = __reduce_min_sync(0xffffffffu, v) + __reduce_max_sync(0xffffffffu, v);
    o[6] = (int)__reduce_or_sync(0xffffffffu, (unsigned)v);
    if (lane < 16) o[7] = __shfl_xor_sync(0x0000ffffu, v, 1);
    else o[7] = __shfl_xor_sync(0xffff0000u, v, 2);
    __syncwarp();
}
TJCU_EXPORT(selftest_warp_misc)

/* out[3b ..] = __syncthreads_count / _and / _or of (x[i] > 0) over block b,
 * and every thread checks it saw the same results (else out gets -1) */
extern "C" __global__ void selftest_block_votes(const int *x, int *out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = x[i] > 0;
    int count = __syncthreads_count(p), all = __syncthreads_and(p), any = __syncthreads_or(p);
    __shared__ int seen[3];
    if (threadIdx.x == 0) {
        seen[0] = count;
        seen[1] = all;
        seen[2] = any;
    }
    __syncthreads();
    if (seen[0] != count || seen[1] != all || seen[2] != any) out[3 * blockIdx.x] = -1;
    __syncthreads();
    if (threadIdx.x == 0 && out[3 * blockIdx.x] != -1) {
        out[3 * blockIdx.x] = count;
        out[3 * blockIdx.x + 1] = all;
        out[3 * blockIdx.x + 2] = any;
    }
}
TJCU_EXPORT(selftest_block_votes)

/* y = x reversed within each block, through dynamic shared memory of blockDim.x doubles */
extern "C" __global__ void selftest_reverse(const double *x, double *y) {
    TJCU_DYNAMIC_SHARED(double, buf);
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    buf[t] = x[i];
    __syncthreads();
    y[i] = buf[blockDim.x - 1 - t];
}
TJCU_EXPORT(selftest_reverse)

/* Across every block: *total += sum(x) (a block tree, then one atomicAdd per block),
 * *dtotal += each x (a double atomicAdd per element), *count += n, *maxv = max(x) */
extern "C" __global__ void selftest_atomics(const float *x, int64_t n, float *total, double *dtotal,
                                            unsigned long long *count, int *maxv) {
    float s = block_tree_sum(x, n);
    if (threadIdx.x == 0) atomicAdd(total, s);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)blockDim.x * gridDim.x) {
        atomicAdd(dtotal, (double)x[i]);
        atomicAdd(count, 1ull);
        atomicMax(maxv, (int)x[i]);
    }
}
TJCU_EXPORT(selftest_atomics)

struct selftest_affine {
    float scale;
    int n;
    double shift;
    char tag;
};

/* y[i] = p.scale * x[i] + p.shift + p.tag for i < p.n: a struct by value */
extern "C" __global__ void selftest_affine_apply(selftest_affine p, const float *x, double *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * x[i] + p.shift + p.tag;
}
TJCU_EXPORT(selftest_affine_apply)

/* Each thread of a 3-D grid of 3-D blocks writes its threadIdx and blockIdx at
 * out[6g ..], g its global linear index (x fastest, blocks after blocks) */
extern "C" __global__ void selftest_coords(unsigned *out) {
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned g = block * blockDim.x * blockDim.y * blockDim.z + thread;
    unsigned *o = out + 6 * g;
    o[0] = threadIdx.x;
    o[1] = threadIdx.y;
    o[2] = threadIdx.z;
    o[3] = blockIdx.x;
    o[4] = blockIdx.y;
    o[5] = blockIdx.z;
}
TJCU_EXPORT(selftest_coords)

/* out (cols x rows) = in (rows x cols) transposed through a padded shared
 * tile: 2-D blocks of 16 x 16, a 2-D grid over the tiles */
extern "C" __global__ void selftest_transpose(const float *in, float *out, int rows, int cols) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
TJCU_EXPORT(selftest_transpose)

/* For timing a launch: one element per thread, without and with a barrier */
extern "C" __global__ void selftest_touch(float *x) { x[threadIdx.x] += 1.0f; }
TJCU_EXPORT(selftest_touch)

extern "C" __global__ void selftest_touch_sync(float *x) {
    float v = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = v + 1.0f;
}
TJCU_EXPORT(selftest_touch_sync)

/* ---- wrong on purpose: the harness must report these, never hang --------- */

/* threads below split wait at one barrier, the others at another */
extern "C" __global__ void selftest_divergent_barrier(int split, int *out) {
    if ((int)threadIdx.x < split) {
        out[threadIdx.x] = 1;
        __syncthreads();
    } else {
        __syncthreads();
        out[threadIdx.x] = 2;
    }
}
TJCU_EXPORT(selftest_divergent_barrier)

/* threads from split on return before the barrier */
extern "C" __global__ void selftest_early_exit(int split, int *out) {
    if ((int)threadIdx.x >= split) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}
TJCU_EXPORT(selftest_early_exit)

/* half of each warp calls a full-mask shuffle */
extern "C" __global__ void selftest_divergent_shuffle(int *out) {
    int v = (int)threadIdx.x;
    if (threadIdx.x % 32 < 16) v = __shfl_sync(0xffffffffu, v, 0);
    out[threadIdx.x] = v;
}
TJCU_EXPORT(selftest_divergent_shuffle)

/* thread 0 waits for lane 1 at a shuffle; lane 1 waits for thread 0 at the barrier */
extern "C" __global__ void selftest_deadlock(int *out) {
    int v = (int)threadIdx.x;
    if (threadIdx.x == 0) v = __shfl_sync(0x3u, v, 1);
    else __syncthreads();
    out[threadIdx.x] = v;
}
TJCU_EXPORT(selftest_deadlock)

/* thread 5 of block `at` traps */
extern "C" __global__ void selftest_trap(int at, int *out) {
    if ((int)blockIdx.x == at && threadIdx.x == 5) __trap();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
TJCU_EXPORT(selftest_trap)
