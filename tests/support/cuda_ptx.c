/* cuda_ptx.c — NVRTC and ptxas on a source, and strided device copies
 * (cuda_ptx.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/nvrtc.h"
#include "tests/support/cuda_ptx.h"
#include "tests/support/runtime_testing.h"
#include "tests/support/testing.h"

bool tt_cuda_nvrtc_ptxas(const char *key, const char *source, const char *const *archs, int n_archs, char *why,
                         size_t cap) {
#ifdef TJCU_PTXAS
    char *ptx = NULL;
    size_t size = 0;
    if (tjcu_nvrtc_compile(key, source, archs[0], false, &ptx, &size) != TJ_OK) {
        snprintf(why, cap, "NVRTC %s on %s: %s", archs[0], key, tj_last_error());
        return false;
    }
    char *dir = tt_mkdtemp(), *path = tt_path(dir, "kernel.ptx");
    tt_write_file(path, ptx, size);
    free(ptx);
    bool ok = true;
    for (int a = 0; a < n_archs && ok; a++) {
        char cmd[1200], out[600] = "";
        snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o /dev/null 2>&1", TJCU_PTXAS, archs[a], path);
        FILE *p = popen(cmd, "r");
        size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[got] = '\0';
        int status = p ? pclose(p) : -1;
        ok = status == 0 && !got;
        if (!ok) snprintf(why, cap, "ptxas -arch=%s on %s (PTX for %s, status %d): %s", archs[a], key, archs[0], status, out);
    }
    free(path);
    tt_rmtree(dir);
    return ok;
#else
    (void)key, (void)source, (void)archs, (void)n_archs;
    snprintf(why, cap, "this build has no ptxas (TJCU_PTXAS)");
    return false;
#endif
}

void tt_cuda_sources_add(tt_cuda_sources *l, const char *key, const char *text) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->s = realloc(l->s, sizeof *l->s * (size_t)l->cap);
        assert_non_null(l->s);
    }
    l->s[l->n++] = (tt_cuda_source){key, text, ""};
}

typedef struct compile_job {
    tt_cuda_sources *l;
    const char *const *archs;
    int n_archs;
    atomic_int next;
} compile_job;

static void *compile_worker(void *arg) {
    compile_job *j = arg;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->l->n;) {
        tt_cuda_source *s = &j->l->s[i];
        tt_cuda_nvrtc_ptxas(s->key, s->text, j->archs, j->n_archs, s->failure, sizeof s->failure);
    }
    return NULL;
}

int tt_cuda_nvrtc_ptxas_all(tt_cuda_sources *l, const char *const *archs, int n_archs) {
    compile_job j = {.l = l, .archs = archs, .n_archs = n_archs};
    pthread_t t;
    bool started = pthread_create(&t, NULL, compile_worker, &j) == 0;
    compile_worker(&j);
    if (started) pthread_join(t, NULL);
    for (int i = 0; i < l->n; i++)
        if (l->s[i].failure[0]) fail_msg("%s", l->s[i].failure);
    int n = l->n;
    free(l->s);
    *l = (tt_cuda_sources){0};
    return n;
}

tj_tensor *tt_cuda_strided_copy(tj_tensor *t) {
    int nd = tj_ndim(t);
    int64_t sizes[TJ_MAX_DIMS + 1];
    memcpy(sizes, tj_sizes(t), sizeof(int64_t) * (size_t)nd);
    sizes[nd] = 2;
    tj_tensor *base = tj_empty_on(sizes, nd + 1, tj_tensor_dtype(t), tj_tensor_device(t));
    assert_non_null(base);
    tj_tensor *view = tj_select(base, nd, 1);
    tj_release(base);
    tj_tensor *same = tj_copy_(view, t);
    assert_non_null(same);
    tj_release(same);
    return view;
}
