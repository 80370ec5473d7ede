/* dnn.c — convolutions on cuDNN (linalg.h: tjcu_dnn_conv), through cuDNN 9's
 * descriptor API (cudnnConvolutionForward / BackwardData / BackwardFilter):
 * one handle per device per thread bound to the thread's stream, workspace
 * from the caching allocator, and the algorithm of each problem chosen once
 * and cached — from cuDNN's heuristics (the _v7 queries), or in benchmark mode
 * by timing every candidate on scratch buffers (the FindEx queries), as
 * PyTorch's cudnn.benchmark.
 *
 * f32 runs with CUDNN_FMA_MATH (no TF32) unless tj_cuda_set_allow_tf32(true),
 * then CUDNN_DEFAULT_MATH, which lets cuDNN use TF32 tensor cores.
 *
 * cuDNN's descriptors count in int: a call whose tensors exceed INT_MAX
 * elements runs image by image groups that fit (as ATen splits the batch),
 * and one image that does not fit is refused (the caller's own kernels run
 * it), as is a transposed convolution whose output padding reaches a stride
 * (cuDNN would compute the forward size from the padded output and reject it).
 */
#include "core/alloc.h"
#include "backends/cuda/linalg.h"

#include <cudnn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- handles ------------------------------------------------------------------------ */

enum { MAX_DEVICES = 64 };

typedef struct dnn_slot {
    cudnnHandle_t handle;
    void *stream;
} dnn_slot;

typedef struct dnn_thread {
    dnn_slot slot[MAX_DEVICES];
} dnn_thread;

static _Thread_local dnn_thread *this_thread;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void release_thread(void *p) {
    dnn_thread *t = p;
    for (int i = 0; i < MAX_DEVICES; i++)
        if (t->slot[i].handle) cudnnDestroy(t->slot[i].handle);
    tjc_free(t);
}

static void make_key(void) { pthread_key_create(&thread_key, release_thread); }

static tj_status dnn_error(const char *op, const char *call, cudnnStatus_t s) {
    return tjc_error(TJ_ERR_DEVICE, "%s: %s failed: %s", op, call, cudnnGetErrorString(s));
}

/* cuDNN's "not supported" family: the problem goes to the own kernels */
static bool refused(cudnnStatus_t s) { return s >= 3000 && s < 4000; }

static tj_status handle_for(const char *op, tj_device dev, cudnnHandle_t *out) {
    if (dev.index < 0 || dev.index >= MAX_DEVICES)
        return tjc_error(TJ_ERR_DEVICE, "%s: cuda:%d is beyond the %d devices cuDNN is set up "
                         "for", op, dev.index, MAX_DEVICES);
    tj_status st = tjcu_runtime_bind(op, dev);
    if (st) return st;
    if (!this_thread) {
        if (!(this_thread = tjc_calloc(1, sizeof *this_thread)))
            return tjc_error(TJ_ERR_MEMORY, "%s: out of memory for cuDNN handles", op);
        pthread_once(&key_once, make_key);
        pthread_setspecific(thread_key, this_thread);
    }
    dnn_slot *s = &this_thread->slot[dev.index];
    cudnnStatus_t ds;
    if (!s->handle) {
        if ((ds = cudnnCreate(&s->handle)) != CUDNN_STATUS_SUCCESS) {
            s->handle = NULL;
            return dnn_error(op, "cudnnCreate", ds);
        }
        s->stream = NULL;
    }
    void *stream = tjcu_stream(dev);
    if (!stream) return tj_last_status();
    if (stream != s->stream) {
        if ((ds = cudnnSetStream(s->handle, (cudaStream_t)stream)) != CUDNN_STATUS_SUCCESS)
            return dnn_error(op, "cudnnSetStream", ds);
        s->stream = stream;
    }
    *out = s->handle;
    return TJ_OK;
}

/* ---- the algorithm cache ------------------------------------------------------------- */

enum { MAX_CANDIDATES = 8, BUCKETS = 256 };

/* A problem: everything the descriptors and the choice depend on. */
typedef struct problem {
    int32_t kind, dtype, device, math_tf32, benchmark, pad_;
    int64_t n, c_in, h, w, c_out, kh, kw, ho, wo, sh, sw, ph, pw, dh, dw, groups;
} problem;

typedef struct candidate {
    int algo;
    cudnnMathType_t math;
    size_t workspace;
} candidate;

typedef struct choice {
    problem key;
    int n;
    candidate cand[MAX_CANDIDATES]; /* best first */
    struct choice *next;
} choice;

static choice *cache[BUCKETS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned hash_of(const problem *p) {
    const unsigned char *b = (const unsigned char *)p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < sizeof *p; i++) h = (h ^ b[i]) * 16777619u;
    return h % BUCKETS;
}

static bool cached(const problem *p, choice *out) {
    pthread_mutex_lock(&cache_lock);
    choice *c = cache[hash_of(p)];
    while (c && memcmp(&c->key, p, sizeof *p)) c = c->next;
    if (c) *out = *c;
    pthread_mutex_unlock(&cache_lock);
    return c != NULL;
}

/* Kept for the life of the process, as PyTorch's algorithm cache. */
static void remember(const choice *ch) {
    choice *c = tjc_malloc(sizeof *c);
    if (!c) return; /* chosen again next time */
    *c = *ch;
    unsigned b = hash_of(&c->key);
    pthread_mutex_lock(&cache_lock);
    c->next = cache[b];
    cache[b] = c;
    pthread_mutex_unlock(&cache_lock);
}

/* ---- descriptors ----------------------------------------------------------------------- */

typedef struct descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} descs;

static void destroy_descs(descs *d) {
    if (d->x) cudnnDestroyTensorDescriptor(d->x);
    if (d->y) cudnnDestroyTensorDescriptor(d->y);
    if (d->w) cudnnDestroyFilterDescriptor(d->w);
    if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
}

/* Sets *ds and names the failing call in *call. */
static cudnnStatus_t make_descs(const problem *p, descs *d, const char **call) {
    memset(d, 0, sizeof *d);
    cudnnDataType_t dt = p->dtype == TJ_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    cudnnStatus_t s;
#define TRY(f, ...)                                                                            \
    if ((s = f(__VA_ARGS__)) != CUDNN_STATUS_SUCCESS) return *call = #f, s
    TRY(cudnnCreateTensorDescriptor, &d->x);
    TRY(cudnnCreateTensorDescriptor, &d->y);
    TRY(cudnnCreateFilterDescriptor, &d->w);
    TRY(cudnnCreateConvolutionDescriptor, &d->conv);
    TRY(cudnnSetTensor4dDescriptor, d->x, CUDNN_TENSOR_NCHW, dt, (int)p->n, (int)p->c_in,
        (int)p->h, (int)p->w);
    TRY(cudnnSetTensor4dDescriptor, d->y, CUDNN_TENSOR_NCHW, dt, (int)p->n, (int)p->c_out,
        (int)p->ho, (int)p->wo);
    TRY(cudnnSetFilter4dDescriptor, d->w, dt, CUDNN_TENSOR_NCHW, (int)p->c_out,
        (int)(p->c_in / p->groups), (int)p->kh, (int)p->kw);
    TRY(cudnnSetConvolution2dDescriptor, d->conv, (int)p->ph, (int)p->pw, (int)p->sh, (int)p->sw,
        (int)p->dh, (int)p->dw, CUDNN_CROSS_CORRELATION, dt);
    TRY(cudnnSetConvolutionGroupCount, d->conv, (int)p->groups);
    TRY(cudnnSetConvolutionMathType, d->conv,
        p->dtype == TJ_F32 && !p->math_tf32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH);
#undef TRY
    return CUDNN_STATUS_SUCCESS;
}

/* ---- choosing an algorithm --------------------------------------------------------------- */

/* The buffers of one call: x, w, y as the kind reads and writes them. */
typedef struct buffers {
    void *x, *w, *y;
} buffers;

/* Keeps the usable results (cuDNN sorts them best first): successful ones,
 * and with TF32 off no tensor-op math for f32. */
#define KEEP_RESULTS(perf, n, p, ch)                                                           \
    for (int i_ = 0; i_ < (n) && (ch)->n < MAX_CANDIDATES; i_++) {                             \
        if ((perf)[i_].status != CUDNN_STATUS_SUCCESS) continue;                               \
        if ((p)->dtype == TJ_F32 && !(p)->math_tf32 &&                                         \
            ((perf)[i_].mathType == CUDNN_TENSOR_OP_MATH ||                                     \
             (perf)[i_].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))                     \
            continue;                                                                          \
        (ch)->cand[(ch)->n++] = (candidate){(int)(perf)[i_].algo, (perf)[i_].mathType,         \
                                            (perf)[i_].memory};                                \
    }

static cudnnStatus_t heuristics(cudnnHandle_t h, const problem *p, const descs *d, choice *ch,
                                const char **call) {
    int n = 0;
    cudnnStatus_t s;
    if (p->kind == TJCU_CONV_FORWARD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        *call = "cudnnGetConvolutionForwardAlgorithm_v7";
        s = cudnnGetConvolutionForwardAlgorithm_v7(h, d->x, d->w, d->conv, d->y,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
        if (s == CUDNN_STATUS_SUCCESS) KEEP_RESULTS(perf, n, p, ch);
    } else if (p->kind == TJCU_CONV_BACKWARD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        *call = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
        s = cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, d->w, d->y, d->conv, d->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf);
        if (s == CUDNN_STATUS_SUCCESS) KEEP_RESULTS(perf, n, p, ch);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        *call = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
        s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, d->x, d->y, d->conv, d->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf);
        if (s == CUDNN_STATUS_SUCCESS) KEEP_RESULTS(perf, n, p, ch);
    }
    return s;
}

/* The largest workspace any algorithm of the kind asks for (those that
 * refuse the problem ask nothing), capped: benchmark mode offers this much. */
static size_t max_workspace(cudnnHandle_t h, const problem *p, const descs *d) {
    size_t best = 0, sz;
    int count = p->kind == TJCU_CONV_FORWARD       ? CUDNN_CONVOLUTION_FWD_ALGO_COUNT
                : p->kind == TJCU_CONV_BACKWARD_DATA ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
                                                     : CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    for (int a = 0; a < count; a++) {
        cudnnStatus_t s;
        sz = 0;
        if (p->kind == TJCU_CONV_FORWARD)
            s = cudnnGetConvolutionForwardWorkspaceSize(h, d->x, d->w, d->conv, d->y,
                                                        (cudnnConvolutionFwdAlgo_t)a, &sz);
        else if (p->kind == TJCU_CONV_BACKWARD_DATA)
            s = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d->w, d->y, d->conv, d->x,
                                                             (cudnnConvolutionBwdDataAlgo_t)a, &sz);
        else
            s = cudnnGetConvolutionBackwardFilterWorkspaceSize(
                h, d->x, d->y, d->conv, d->w, (cudnnConvolutionBwdFilterAlgo_t)a, &sz);
        if (s == CUDNN_STATUS_SUCCESS && sz > best) best = sz;
    }
    const size_t cap = (size_t)1 << 30;
    return best < cap ? best : cap;
}

/* Times every algorithm on scratch output (the real output may hold a bias
 * the product adds to) with the largest workspace that can be had. */
static tj_status benchmark(tj_device dev, cudnnHandle_t h, const problem *p,
                           const descs *d, const buffers *b, size_t out_bytes, choice *ch,
                           cudnnStatus_t *ds, const char **call) {
    size_t ws_bytes = max_workspace(h, p, d);
    void *ws = ws_bytes ? tjcu_malloc(dev, ws_bytes) : NULL;
    if (ws_bytes && !ws) { /* fewer algorithms are timed, not an error */
        tj_clear_error();
        ws_bytes = 0;
    }
    void *out = tjcu_malloc(dev, out_bytes);
    if (!out) {
        if (ws) tjcu_free(dev, ws);
        return tj_last_status();
    }
    int n = 0;
    if (p->kind == TJCU_CONV_FORWARD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        *call = "cudnnFindConvolutionForwardAlgorithmEx";
        *ds = cudnnFindConvolutionForwardAlgorithmEx(h, d->x, b->x, d->w, b->w, d->conv, d->y, out,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf,
                                                     ws, ws_bytes);
        if (*ds == CUDNN_STATUS_SUCCESS) KEEP_RESULTS(perf, n, p, ch);
    } else if (p->kind == TJCU_CONV_BACKWARD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        *call = "cudnnFindConvolutionBackwardDataAlgorithmEx";
        *ds = cudnnFindConvolutionBackwardDataAlgorithmEx(
            h, d->w, b->w, d->y, b->y, d->conv, d->x, out, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
            &n, perf, ws, ws_bytes);
        if (*ds == CUDNN_STATUS_SUCCESS) KEEP_RESULTS(perf, n, p, ch);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        *call = "cudnnFindConvolutionBackwardFilterAlgorithmEx";
        *ds = cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h, d->x, b->x, d->y, b->y, d->conv, d->w, out, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
            &n, perf, ws, ws_bytes);
        if (*ds == CUDNN_STATUS_SUCCESS) KEEP_RESULTS(perf, n, p, ch);
    }
    if (ws) tjcu_free(dev, ws);
    tjcu_free(dev, out);
    return TJ_OK;
}

/* ---- running ------------------------------------------------------------------------------- */

static cudnnStatus_t run_algo(cudnnHandle_t h, const problem *p, const descs *d,
                              const candidate *c, const buffers *b, void *ws, double beta,
                              const char **call) {
    float af = 1.0f, bf = (float)beta;
    double ad = 1.0, bd = beta;
    const void *alpha = p->dtype == TJ_F64 ? (const void *)&ad : (const void *)&af;
    const void *betap = p->dtype == TJ_F64 ? (const void *)&bd : (const void *)&bf;
    cudnnStatus_t s = cudnnSetConvolutionMathType(d->conv, c->math);
    if (s != CUDNN_STATUS_SUCCESS) return *call = "cudnnSetConvolutionMathType", s;
    if (p->kind == TJCU_CONV_FORWARD) {
        *call = "cudnnConvolutionForward";
        return cudnnConvolutionForward(h, alpha, d->x, b->x, d->w, b->w, d->conv,
                                       (cudnnConvolutionFwdAlgo_t)c->algo, ws, c->workspace, betap,
                                       d->y, b->y);
    }
    if (p->kind == TJCU_CONV_BACKWARD_DATA) {
        *call = "cudnnConvolutionBackwardData";
        return cudnnConvolutionBackwardData(h, alpha, d->w, b->w, d->y, b->y, d->conv,
                                            (cudnnConvolutionBwdDataAlgo_t)c->algo, ws,
                                            c->workspace, betap, d->x, b->x);
    }
    *call = "cudnnConvolutionBackwardFilter";
    return cudnnConvolutionBackwardFilter(h, alpha, d->x, b->x, d->y, b->y, d->conv,
                                          (cudnnConvolutionBwdFilterAlgo_t)c->algo, ws,
                                          c->workspace, betap, d->w, b->w);
}

/* One cuDNN call over the images of p. */
static tj_status conv_once(const char *op, tj_device dev, cudnnHandle_t h, const problem *p,
                           const buffers *b, double beta, bool *used) {
    const char *call = "";
    descs d;
    cudnnStatus_t ds = make_descs(p, &d, &call);
    tj_status st = TJ_OK;
    choice ch;
    if (ds == CUDNN_STATUS_SUCCESS && !cached(p, &ch)) {
        memset(&ch, 0, sizeof ch);
        ch.key = *p;
        size_t es = tj_dtype_size((tj_dtype)p->dtype);
        size_t out_bytes = (size_t)(p->kind == TJCU_CONV_FORWARD
                                        ? p->n * p->c_out * p->ho * p->wo
                                        : p->kind == TJCU_CONV_BACKWARD_DATA
                                              ? p->n * p->c_in * p->h * p->w
                                              : p->c_out * (p->c_in / p->groups) * p->kh * p->kw) *
                           es;
        if (p->benchmark) st = benchmark(dev, h, p, &d, b, out_bytes, &ch, &ds, &call);
        else ds = heuristics(h, p, &d, &ch, &call);
        if (!st && ds == CUDNN_STATUS_SUCCESS && ch.n == 0) ds = CUDNN_STATUS_NOT_SUPPORTED;
        if (!st && ds == CUDNN_STATUS_SUCCESS) remember(&ch);
    }
    /* the first candidate whose workspace can be had */
    for (int i = 0; !st && ds == CUDNN_STATUS_SUCCESS && i < ch.n; i++) {
        void *ws = ch.cand[i].workspace ? tjcu_malloc(dev, ch.cand[i].workspace) : NULL;
        if (ch.cand[i].workspace && !ws) {
            if (i + 1 < ch.n) {
                tj_clear_error();
                continue;
            }
            st = tj_last_status();
            break;
        }
        ds = run_algo(h, p, &d, &ch.cand[i], b, ws, beta, &call);
        if (ws) tjcu_free(dev, ws);
        break;
    }
    destroy_descs(&d);
    if (st) return st;
    if (ds == CUDNN_STATUS_SUCCESS) {
        *used = true;
        return TJ_OK;
    }
    if (refused(ds) && !*used) return TJ_OK; /* nothing was written: the own kernels run it */
    return dnn_error(op, call, ds);
}

tj_status tjcu_dnn_conv(const char *op, tj_device dev, tjcu_conv_kind kind,
                        const tjc_conv_geom *g, tj_dtype dtype, void *x, void *w, void *y,
                        double beta, bool *used) {
    *used = false;
    if (dtype != TJ_F32 && dtype != TJ_F64) return TJ_OK;
    /* the forward size of the padded output must be the given one */
    int64_t fho = (g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1;
    int64_t fwo = (g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1;
    if (fho != g->ho || fwo != g->wo) return TJ_OK;
    int64_t per_in = g->c_in * g->h * g->w, per_out = g->c_out * g->ho * g->wo;
    int64_t per_img = per_in > per_out ? per_in : per_out;
    int64_t wsize = g->c_out * (g->c_in / g->groups) * g->kh * g->kw;
    const int64_t params[] = {g->c_in, g->h, g->w, g->c_out, g->kh, g->kw, g->sh, g->sw,
                              g->ph, g->pw, g->dh, g->dw, g->groups};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (params[i] > INT_MAX) return TJ_OK;
    if (per_img > INT_MAX || wsize > INT_MAX || g->n <= 0) return TJ_OK;
    int64_t chunk = INT_MAX / per_img;
    if (chunk > g->n) chunk = g->n;

    cudnnHandle_t h = NULL;
    tj_status st = handle_for(op, dev, &h);
    if (st) return st;
    problem p = {.kind = kind, .dtype = dtype, .device = dev.index,
                 .math_tf32 = dtype == TJ_F32 && tj_cuda_allow_tf32(),
                 .benchmark = tj_cuda_cudnn_benchmark(),
                 .c_in = g->c_in, .h = g->h, .w = g->w, .c_out = g->c_out, .kh = g->kh,
                 .kw = g->kw, .ho = g->ho, .wo = g->wo, .sh = g->sh, .sw = g->sw, .ph = g->ph,
                 .pw = g->pw, .dh = g->dh, .dw = g->dw, .groups = g->groups};
    size_t es = tj_dtype_size(dtype);
    for (int64_t n0 = 0; n0 < g->n && !st; n0 += chunk) {
        p.n = n0 + chunk <= g->n ? chunk : g->n - n0;
        buffers b = {(char *)x + (size_t)(n0 * per_in) * es, w,
                     (char *)y + (size_t)(n0 * g->c_out * g->ho * g->wo) * es};
        /* the weight's gradient sums over every group of images */
        double bt = kind == TJCU_CONV_BACKWARD_FILTER && n0 > 0 ? 1.0 : beta;
        st = conv_once(op, dev, h, &p, &b, bt, used);
        if (!st && !*used) return TJ_OK; /* refused before anything ran */
    }
    return st;
}
