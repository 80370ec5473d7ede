/* device.c — the registry of device backends, copies between devices, and the
 * public device functions (tj_to_device, tj_cuda_*). Backends register their
 * memory functions and kernel tables here; nothing in core/ knows what a
 * device other than the host is. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "storage.h"

static tjc_device_backend registered[TJ_NUM_DEVICE_TYPES];
static bool present[TJ_NUM_DEVICE_TYPES];
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void register_builtin(void) { tjc_register_builtin_backends(); }

void tjc_register_device_backend(const tjc_device_backend *b) {
    if ((unsigned)b->type >= TJ_NUM_DEVICE_TYPES) return;
    tjc_device_backend *slot = &registered[b->type];
    *slot = *b;
    for (int id = 0; id < TJ_OP__COUNT; id++) {
        const tj_op_info *op = tjc_op(id);
        if (!slot->kernels[id] && op->inplace_of >= 0)
            slot->kernels[id] = slot->kernels[op->inplace_of];
    }
    present[b->type] = true;
}

const tjc_device_backend *tjc_device_backend_of(tj_device_type type) {
    pthread_once(&registry_once, register_builtin);
    return (unsigned)type < TJ_NUM_DEVICE_TYPES && present[type] ? &registered[type] : NULL;
}

const char *tjc_fmt_device(char *buf, size_t n, tj_device d) {
    if (d.type == TJ_CPU) snprintf(buf, n, "cpu");
    else if (d.type == TJ_CUDA) snprintf(buf, n, "cuda:%d", d.index);
    else snprintf(buf, n, "device%d:%d", (int)d.type, d.index);
    return buf;
}

tj_status tjc_copy_bytes(void *dst, tj_device dst_dev, const void *src, tj_device src_dev,
                         size_t nbytes) {
    if (nbytes == 0) return TJ_OK;
    if (dst_dev.type == TJ_CPU && src_dev.type == TJ_CPU) {
        memcpy(dst, src, nbytes);
        return TJ_OK;
    }
    tj_device_type side = dst_dev.type != TJ_CPU ? dst_dev.type : src_dev.type;
    const tjc_device_backend *b = tjc_device_backend_of(side);
    if ((dst_dev.type != TJ_CPU && src_dev.type != TJ_CPU && dst_dev.type != src_dev.type) ||
        !b || !b->copy) {
        char a[TJC_DEVICE_BUF], c[TJC_DEVICE_BUF];
        return tjc_error(TJ_ERR_DEVICE, "copy from %s to %s: no backend copies between them",
                         tjc_fmt_device(a, sizeof a, src_dev), tjc_fmt_device(c, sizeof c, dst_dev));
    }
    return b->copy(dst, dst_dev, src, src_dev, nbytes);
}

/* ---- public ------------------------------------------------------------------ */

const char *tj_device_to_string(tj_device d, char *buf, size_t n) {
    if (!buf || n == 0)
        return tjc_error(TJ_ERR_ARG, "tj_device_to_string: %s", buf ? "n is 0" : "buf is NULL"),
               NULL;
    if ((unsigned)d.type >= TJ_NUM_DEVICE_TYPES || d.index < 0)
        return tjc_error(TJ_ERR_ARG, "tj_device_to_string: invalid device (type %d, index %d)",
                         (int)d.type, d.index),
               NULL;
    return tjc_fmt_device(buf, n, d);
}

tj_status tj_device_parse(const char *text, tj_device *out) {
    if (!text || !out) return tjc_error(TJ_ERR_ARG, "tj_device_parse: %s is NULL",
                                        text ? "out" : "text");
    if (!strcmp(text, "cpu")) {
        *out = (tj_device){TJ_CPU, 0};
        return TJ_OK;
    }
    if (!strncmp(text, "cuda", 4)) {
        const char *p = text + 4;
        long idx = 0;
        if (*p == ':') {
            char *end;
            idx = strtol(p + 1, &end, 10);
            if (end == p + 1 || *end || idx < 0 || idx > 65535) p = NULL;
        } else if (*p) {
            p = NULL;
        }
        if (p) {
            *out = (tj_device){TJ_CUDA, (int)idx};
            return TJ_OK;
        }
    }
    return tjc_error(TJ_ERR_ARG, "tj_device_parse: '%s' is not a device (cpu, cuda or cuda:N)",
                     text);
}

int tj_device_count(tj_device_type type) {
    if ((unsigned)type >= TJ_NUM_DEVICE_TYPES)
        return tjc_error(TJ_ERR_ARG, "tj_device_count: invalid device type %d", (int)type), -1;
    if (type == TJ_CPU) return 1;
    const tjc_device_backend *b = tjc_device_backend_of(type);
    if (!b || !b->device_count) return 0;
    /* a question, not a failure: the backend's reason for finding no device
     * (no driver, no GPU) must not become this thread's pending error */
    tj_status before = tj_last_status();
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", tj_last_error());
    int n = b->device_count();
    if (before == TJ_OK) tj_clear_error();
    else tjc_error(before, "%s", saved);
    return n;
}

bool tj_cuda_is_available(void) { return tj_device_count(TJ_CUDA) > 0; }
int tj_cuda_device_count(void) { return tj_device_count(TJ_CUDA); }

tj_status tj_cuda_synchronize(void) {
    const tjc_device_backend *b = tjc_device_backend_of(TJ_CUDA);
    int n = b ? tj_device_count(TJ_CUDA) : 0;
    if (n == 0) return tjc_error(TJ_ERR_DEVICE, "tj_cuda_synchronize: no CUDA device is available");
    for (int i = 0; i < n; i++) {
        tj_status st = b->synchronize(i);
        if (st) return st;
    }
    return TJ_OK;
}

tj_status tj_cuda_memory_stats(int device, tj_memory_stats *out) {
    if (!out) return tjc_error(TJ_ERR_ARG, "tj_cuda_memory_stats: out is NULL");
    const tjc_device_backend *b = tjc_device_backend_of(TJ_CUDA);
    int n = b ? tj_device_count(TJ_CUDA) : 0;
    if (device < 0 || device >= n)
        return tjc_error(TJ_ERR_DEVICE, "tj_cuda_memory_stats: cuda:%d is not an available device "
                         "(%d found)", device, n);
    if (!b->memory_stats)
        return tjc_error(TJ_ERR_UNSUPPORTED, "tj_cuda_memory_stats: the backend keeps no figures");
    return b->memory_stats(device, out);
}

tj_status tj_cuda_empty_cache(void) {
    const tjc_device_backend *b = tjc_device_backend_of(TJ_CUDA);
    int n = b ? tj_device_count(TJ_CUDA) : 0;
    for (int i = 0; i < n && b->empty_cache; i++) {
        tj_status st = b->empty_cache(i);
        if (st) return st;
    }
    return TJ_OK;
}

/* Process-wide switches the CUDA backend reads; plain flags, so they exist
 * (and can be set before a device appears) in every build. */
static _Atomic bool allow_tf32, cudnn_benchmark;
void tj_cuda_set_allow_tf32(bool allow) { allow_tf32 = allow; }
bool tj_cuda_allow_tf32(void) { return allow_tf32; }
void tj_cuda_set_cudnn_benchmark(bool on) { cudnn_benchmark = on; }
bool tj_cuda_cudnn_benchmark(void) { return cudnn_benchmark; }

tj_tensor *tjc_to_device(tj_tensor *t, tj_device device) {
    if (tjc_same_device(t->storage->device, device)) return tj_retain(t);
    tj_tensor *src = t;
    if (!tj_is_contiguous(t)) { /* made contiguous where it lives, then copied as bytes */
        const tj_op_info *op = tjc_op(TJ_OP_contiguous);
        if (tjc_invoke_nested(op, &t, 1, NULL, &src, 1) != 1) return NULL;
    }
    tj_tensor *out = tjc_alloc_on(device, src->sizes, src->ndim, src->dtype);
    size_t nbytes = (size_t)tjc_numel(src->sizes, src->ndim) * tj_dtype_size(src->dtype);
    if (out && tjc_copy_bytes(tjc_data_ptr(out), device, tjc_data_ptr(src), src->storage->device,
                              nbytes) != TJ_OK) {
        tj_release(out);
        out = NULL;
    }
    if (src != t) tj_release(src);
    return out;
}

tj_tensor *tj_to_device(tj_tensor *t, tj_device device) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_to_device: tensor is NULL"), NULL;
    if ((unsigned)device.type >= TJ_NUM_DEVICE_TYPES)
        return tjc_error(TJ_ERR_ARG, "tj_to_device: invalid device type %d", (int)device.type),
               NULL;
    const tj_record_hook *h = tjc_record_hook();
    if (h && h->host_read && tjc_op_depth() == 0) h->host_read(h->ctx, t, "tj_to_device");
    tj_tensor *out = tjc_to_device(t, device);
    if (out && tjc_op_depth() == 0) {
        if (!tjc_scope_reserve(1)) {
            tj_release(out);
            return NULL;
        }
        tjc_scope_track(out);
    }
    return out;
}

tj_status tj_move_to_device(tj_tensor *t, tj_device device) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_move_to_device: tensor is NULL");
    if ((unsigned)device.type >= TJ_NUM_DEVICE_TYPES)
        return tjc_error(TJ_ERR_ARG, "tj_move_to_device: invalid device type %d",
                         (int)device.type);
    if (tjc_same_device(t->storage->device, device)) return TJ_OK;
    tj_tensor *moved = tjc_to_device(t, device);
    if (!moved) return tj_last_status();
    /* t takes the copy's storage and geometry; its old storage goes with the
     * last of the other tensors that share it */
    tjc_storage *old = t->storage;
    t->storage = moved->storage;
    atomic_fetch_add_explicit(&t->storage->refcount, 1, memory_order_relaxed);
    t->offset = 0;
    memcpy(t->strides, moved->strides, sizeof t->strides);
    tj_release(moved);
    tjc_storage_release(old);
    return TJ_OK;
}
