/* npy.c — reading and writing NumPy .npy files (format versions 1 to 3):
 * the one interchange format every ML tool writes. Malformed files give an
 * error naming the file and what is wrong; nothing here trusts the header. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core.h"
#include "tjit/runtime.h"

static const struct {
    const char *descr;
    tj_dtype dtype;
    size_t size;
} formats[] = {
    {"<f4", TJ_F32, 4}, {"<f8", TJ_F64, 8}, {"<i8", TJ_I64, 8}, {"|b1", TJ_BOOL, 1},
    {"<i4", TJ_I64, 4}, /* widened to i64 */
};

static const char *find_key(const char *hdr, const char *key) {
    const char *p = strstr(hdr, key);
    if (!p) return NULL;
    p += strlen(key);
    while (*p == ' ' || *p == ':') p++;
    return p;
}

static tj_status parse_header(const char *path, const char *hdr, int *fmt, bool *fortran,
                              int64_t *sizes, int *ndim) {
    const char *d = find_key(hdr, "'descr'");
    if (!d || (*d != '\'' && *d != '"'))
        return tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: the header has no 'descr'", path);
    char descr[16] = {0};
    size_t k = 0;
    for (d++; *d && *d != '\'' && *d != '"' && k < sizeof descr - 1; d++) descr[k++] = *d;
    *fmt = -1;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(descr, formats[i].descr) ||
            (descr[0] == '=' && !strcmp(descr + 1, formats[i].descr + 1)))
            *fmt = (int)i;
    if (*fmt < 0)
        return tjc_error(TJ_ERR_DTYPE, "tj_load_npy: %s: dtype '%s' is not supported (tjit reads "
                         "<f4, <f8, <i8, <i4 and |b1)", path, descr);
    const char *f = find_key(hdr, "'fortran_order'");
    if (!f || (strncmp(f, "True", 4) && strncmp(f, "False", 5)))
        return tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: the header has no 'fortran_order'", path);
    *fortran = !strncmp(f, "True", 4);
    const char *s = find_key(hdr, "'shape'");
    if (!s || *s != '(')
        return tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: the header has no 'shape' tuple", path);
    *ndim = 0;
    for (s++;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        if (!isdigit((unsigned char)*s))
            return tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: malformed 'shape'", path);
        if (*ndim == TJ_MAX_DIMS)
            return tjc_error(TJ_ERR_SHAPE, "tj_load_npy: %s: more than %d dims", path, TJ_MAX_DIMS);
        errno = 0;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (errno || v < 0 || v > (1ll << 40))
            return tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: size out of range in 'shape'", path);
        sizes[(*ndim)++] = v;
        s = end;
    }
    return TJ_OK;
}

tj_tensor *tj_load_npy(const char *path) {
    if (!path) return tjc_error(TJ_ERR_ARG, "tj_load_npy: path is NULL"), NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return tjc_error(TJ_ERR_IO, "tj_load_npy: cannot open %s: %s", path, strerror(errno)), NULL;
    tj_tensor *t = NULL, *raw = NULL;
    char *hdr = NULL;
    unsigned char pre[12];
    if (fread(pre, 1, 8, fp) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s is not a .npy file (bad magic)", path);
        goto done;
    }
    int major = pre[6];
    size_t hlen;
    if (major == 1) {
        if (fread(pre + 8, 1, 2, fp) != 2) goto truncated;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (major == 2 || major == 3) {
        if (fread(pre + 8, 1, 4, fp) != 4) goto truncated;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        if (hlen > (1u << 20)) {
            tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: header of %zu bytes is too long", path, hlen);
            goto done;
        }
    } else {
        tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: format version %d is not supported", path, major);
        goto done;
    }
    hdr = tjc_malloc(hlen + 1);
    if (!hdr) {
        tjc_error(TJ_ERR_MEMORY, "tj_load_npy: out of memory");
        goto done;
    }
    if (fread(hdr, 1, hlen, fp) != hlen) goto truncated;
    hdr[hlen] = '\0';
    int fmt = 0, ndim = 0;
    bool fortran = false;
    int64_t sizes[TJ_MAX_DIMS];
    if (parse_header(path, hdr, &fmt, &fortran, sizes, &ndim)) goto done;
    int64_t n = 1;
    bool overflow = false;
    for (int d = 0; d < ndim; d++) overflow = overflow || __builtin_mul_overflow(n, sizes[d], &n);
    uint64_t need = 0;
    if (overflow || __builtin_mul_overflow((uint64_t)n, (uint64_t)formats[fmt].size, &need)) {
        tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s: 'shape' holds more elements than can be addressed",
                  path);
        goto done;
    }
    /* a corrupt header must not make us allocate what the file cannot hold */
    long here = ftell(fp), end = here >= 0 && fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    if (end >= 0 && fseek(fp, here, SEEK_SET) != 0) end = -1;
    if (end >= 0 && need > (uint64_t)(end - here)) {
        tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s is truncated: 'shape' needs %llu bytes of data, "
                  "the file holds %ld", path, (unsigned long long)need, end - here);
        goto done;
    }
    /* Fortran order is C order of the reversed sizes, transposed back */
    int64_t file_sizes[TJ_MAX_DIMS];
    for (int d = 0; d < ndim; d++) file_sizes[d] = fortran ? sizes[ndim - 1 - d] : sizes[d];
    raw = tjc_alloc(file_sizes, ndim, formats[fmt].dtype);
    if (!raw) goto done;
    size_t nbytes = (size_t)n * formats[fmt].size;
    char *data = tjc_data_ptr(raw);
    if (fread(data, 1, nbytes, fp) != nbytes) goto truncated;
    if (formats[fmt].size == 4 && formats[fmt].dtype == TJ_I64) /* widen <i4 in place, from the end */
        for (int64_t i = n - 1; i >= 0; i--) {
            int32_t v;
            memcpy(&v, data + 4 * i, 4);
            ((int64_t *)(void *)data)[i] = v;
        }
    if (formats[fmt].dtype == TJ_BOOL)
        for (size_t i = 0; i < nbytes; i++) data[i] = data[i] != 0;
    if (fortran && ndim > 1) {
        int64_t strides[TJ_MAX_DIMS];
        for (int d = 0; d < ndim; d++) strides[d] = raw->strides[ndim - 1 - d];
        tj_tensor *view = tjc_make_view(raw, sizes, strides, ndim, 0);
        tj_tensor *out[1];
        if (view && tjc_invoke_nested(tjc_op(TJ_OP_clone), &view, 1, NULL, out, 1) == 1) t = out[0];
        tj_release(view);
    } else {
        t = raw;
        raw = NULL;
    }
    goto done;
truncated:
    tjc_error(TJ_ERR_PARSE, "tj_load_npy: %s is truncated", path);
done:
    tj_release(raw);
    tjc_free(hdr);
    fclose(fp);
    if (t && !tjc_track_created(t)) {
        tj_release(t);
        return NULL;
    }
    return t;
}

tj_status tj_save_npy(const char *path, const tj_tensor *t) {
    if (!path) return tjc_error(TJ_ERR_ARG, "tj_save_npy: path is NULL");
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_save_npy: tensor is NULL");
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].dtype == t->dtype && formats[i].size == tj_dtype_size(t->dtype))
            descr = formats[i].descr;
    char hdr[512];
    int k = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int d = 0; d < t->ndim; d++)
        k += snprintf(hdr + k, sizeof hdr - (size_t)k, t->ndim == 1 ? "%lld," : d ? ", %lld" : "%lld",
                      (long long)t->sizes[d]);
    k += snprintf(hdr + k, sizeof hdr - (size_t)k, "), }");
    int total = ((10 + k + 1 + 63) / 64) * 64; /* magic, version, length, header, '\n' */
    while (10 + k + 1 < total) hdr[k++] = ' ';
    hdr[k++] = '\n';
    tj_tensor *c = NULL;
    tj_tensor *src = (tj_tensor *)t;
    if (t->storage->device.type != TJ_CPU) { /* saved from a contiguous host copy */
        if (!(c = src = tjc_to_device(src, (tj_device){TJ_CPU, 0}))) return tj_last_status();
    } else if (!tj_is_contiguous(t)) {
        tj_tensor *out[1];
        if (tjc_invoke_nested(tjc_op(TJ_OP_clone), &src, 1, NULL, out, 1) != 1) return tj_last_status();
        c = src = out[0];
    }
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        tj_release(c);
        return tjc_error(TJ_ERR_IO, "tj_save_npy: cannot create %s: %s", path, strerror(errno));
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(k & 0xff),
                             (unsigned char)(k >> 8)};
    size_t nbytes = (size_t)tjc_numel(t->sizes, t->ndim) * tj_dtype_size(t->dtype);
    bool ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(hdr, 1, (size_t)k, fp) == (size_t)k &&
              fwrite(tjc_data_ptr(src), 1, nbytes, fp) == nbytes;
    ok = (fclose(fp) == 0) && ok;
    tj_release(c);
    return ok ? TJ_OK : tjc_error(TJ_ERR_IO, "tj_save_npy: writing %s failed", path);
}
