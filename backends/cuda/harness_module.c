/* harness_module.c — from a CUDA source to a loaded host module: the source
 * and tjcu_builtins.h (the library's embedded copy, never the source tree's)
 * written to a private build directory, compiled by the host C++ compiler
 * into a shared object, kept in the cache directory under a hash of
 * everything that decides the machine code, then loaded with dlopen and
 * bound to the runner (tjh_bind). Modules are shared by source within the
 * process and counted by references.
 *
 * The cache loads machine code, so it trusts only what is the user's own: a
 * TJIT_CACHE_DIR owned by another user or writable by group or others is not
 * used (one warning says why), and a cached file is loaded only when it is a
 * regular file of the user's, not writable by others. Without a trusted
 * TJIT_CACHE_DIR, shared objects live in a private temporary directory that
 * is removed at exit.
 *
 * One lock serialises loads (and so compiles): loads are rare, launches
 * never take it.
 */
#define _DEFAULT_SOURCE /* realpath, mkdtemp */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "backends/cuda/sources.h"
#include "fuser/disk_cache.h"
#include "core/core.h"
#include "harness_internal.h"

extern char **environ;

#define KEY_VERSION "tjh module v1"
/* -ffp-contract=off: no FMA contraction whatever the compiler's default for
 * its target, as NVRTC's --fmad=false and the CPU's kernels. -fno-builtin: a
 * library function is called at run time, never evaluated by the compiler
 * (GCC folds erff(1.0f) with its own correctly rounded arithmetic, which can
 * be an ulp from the library's, so a fused kernel that knows an operand is a
 * bool's 0 or 1 would disagree with the per-op one) */
static const char *const cxx_flags[] = {"-std=c++17", "-O2", "-fPIC", "-shared", "-fno-exceptions",
                                        "-fno-rtti", "-fno-math-errno", "-ffp-contract=off",
                                        "-fno-builtin",
                                        "-fvisibility=hidden"};
#define N_FLAGS (sizeof cxx_flags / sizeof *cxx_flags)
#define MAX_CXX_WORDS 16

struct tjh_function {
    tjh_function *next;
    tjh_module *module;
    tjcu_entry entry;
    int n_params;
    size_t param_size[TJH_MAX_PARAMS]; /* bytes of each parameter, for copying a launch's arguments */
    char kernel[];
};

struct tjh_module {
    tjh_module *next;
    int refs;
    uint64_t h1, h2;
    char *name, *source;
    void *dl;
    tjh_function *functions;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tjh_module *modules;
static atomic_long n_compiles, n_disk_hits, n_memory_hits;
static char private_dir[1024];
static pid_t private_owner;
static char cxx_seen[512], cxx_version[256]; /* the compiler last asked, and its --version */

/* ---- files and processes ---------------------------------------------------------- */

static void remove_tree(const char *path, int depth) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *ent;
        char p[2048];
        while ((ent = readdir(d))) {
            if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", path, ent->d_name);
            if (unlink(p) && depth > 0) remove_tree(p, depth - 1);
        }
        closedir(d);
    }
    rmdir(path);
}

static void remove_private_dir(void) {
    if (private_dir[0] && getpid() == private_owner) remove_tree(private_dir, 2);
}

/* This process's own directory, made on first use (caller holds the lock). */
static const char *get_private_dir(void) {
    if (private_dir[0]) return private_dir;
    const char *tmp = getenv("TMPDIR");
    char p[sizeof private_dir];
    snprintf(p, sizeof p, "%s/tjit-harness-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    char abs[PATH_MAX];
    if (!mkdtemp(p) || !realpath(p, abs) || strlen(abs) >= sizeof private_dir) return NULL;
    snprintf(private_dir, sizeof private_dir, "%s", abs);
    private_owner = getpid();
    atexit(remove_private_dir);
    return private_dir;
}

static bool write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Runs argv with stdout and stderr into log; the exit status, or -1 with
 * errno when it could not start. */
static int run(char *const argv[], const char *log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) {
        errno = err;
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) { /* how some C libraries report a failed exec */
        errno = ENOENT;
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The first lines of a file, at most n - 1 characters, without any "strip"
 * (the build directory, so messages name the source as the module does). */
static void read_head(const char *path, char *buf, size_t n, int max_lines, const char *strip) {
    char all[8192];
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t len = fread(all, 1, sizeof all - 1, f);
    fclose(f);
    all[len] = '\0';
    size_t k = strip ? strlen(strip) : 0;
    for (char *c; k && (c = strstr(all, strip));) memmove(c, c + k, strlen(c + k) + 1);
    size_t keep = strlen(all) < n - 1 ? strlen(all) : n - 1;
    memcpy(buf, all, keep);
    buf[keep] = '\0';
    int lines = 0;
    for (char *c = buf; *c; c++)
        if (*c == '\n' && ++lines == max_lines) {
            c[1] = '\0';
            break;
        }
}

/* ---- the compiler ------------------------------------------------------------------- */

/* The compiler's words (from $TJIT_HOST_CXX, $CXX or "c++") in buf; their count. */
static int compiler_words(char *buf, size_t n, char *words[MAX_CXX_WORDS]) {
    const char *c = getenv("TJIT_HOST_CXX");
    if (!c || !c[0]) c = getenv("CXX");
    if (!c || !c[0]) c = "c++";
    snprintf(buf, n, "%s", c);
    int k = 0;
    char *save = NULL;
    for (char *s = strtok_r(buf, " \t", &save); s && k < MAX_CXX_WORDS - 1; s = strtok_r(NULL, " \t", &save))
        words[k++] = s;
    return k;
}

/* The compiler's identity for the cache key: its command and --version line. */
static tj_status compiler_identity(const char *name, const char **cmd, const char **version) {
    const char *c = getenv("TJIT_HOST_CXX");
    if (!c || !c[0]) c = getenv("CXX");
    if (!c || !c[0]) c = "c++";
    *cmd = c;
    *version = cxx_version;
    if (!strcmp(c, cxx_seen)) return TJ_OK;
    char buf[512], *argv[MAX_CXX_WORDS + 1], log[1200];
    int k = compiler_words(buf, sizeof buf, argv);
    const char *dir = get_private_dir();
    if (!k || !dir) return tjc_error(TJ_ERR_IO, "tjh_module_load: module %s: no host C++ compiler", name);
    argv[k++] = "--version";
    argv[k] = NULL;
    snprintf(log, sizeof log, "%s/version.log", dir);
    if (run(argv, log) != 0)
        return tjc_error(TJ_ERR_UNSUPPORTED, "tjh_module_load: module %s: cannot run the host C++ compiler "
                         "'%s' (set TJIT_HOST_CXX or CXX)", name, c);
    read_head(log, cxx_version, sizeof cxx_version, 1, NULL);
    unlink(log);
    snprintf(cxx_seen, sizeof cxx_seen, "%s", c);
    return TJ_OK;
}

static uint64_t fnv1a(const char *s, uint64_t h) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ^ 0xff; /* parts of the key stay apart */
}

static void key_hash(const char *const parts[], int n, uint64_t *h1, uint64_t *h2) {
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    for (int i = 0; i < n; i++) {
        a = fnv1a(parts[i], a);
        b = fnv1a(parts[i], b * 31 + 7);
    }
    *h1 = a;
    *h2 = b;
}

/* ---- the cache directory --------------------------------------------------------------- */

/* NULL when path is the user's own and not writable by others, else why not. */
static const char *distrust(const char *path, bool dir) {
    struct stat st;
    if ((dir ? stat(path, &st) : lstat(path, &st)) != 0) return "it cannot be read";
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return dir ? "it is not a directory" : "it is not a regular file";
    if (st.st_uid != geteuid()) return "it belongs to another user";
    if (st.st_mode & (S_IWGRP | S_IWOTH)) return "it is writable by group or others";
    return NULL;
}

/* An absolute path: the compiler runs in its build directory. The directory
 * is the shared disk cache's (fuser/disk_cache.h: created 0700, used only when
 * it is the user's own and not writable by others, one warning otherwise);
 * without one, a private directory. */
static const char *cache_dir(void) {
    static char dir[PATH_MAX], abs[PATH_MAX];
    if (tjf_disk_cache_dir(dir, sizeof dir) && realpath(dir, abs) && strlen(abs) < 900) return abs;
    return get_private_dir();
}

/* Compiles source into the shared object at path (caller holds the lock). */
static tj_status compile(const char *name, const char *source, const char *path) {
    const char *priv = get_private_dir();
    if (!priv) return tjc_error(TJ_ERR_IO, "tjh_module_load: module %s: cannot make a private directory", name);
    char work[1100], file[1300], tmp[1300], log[1300];
    snprintf(work, sizeof work, "%s/build-XXXXXX", priv);
    if (!mkdtemp(work)) return tjc_error(TJ_ERR_IO, "tjh_module_load: module %s: cannot make %s", name, work);
    char src[96];
    size_t k = 0;
    for (const char *c = name; *c && k < 80; c++)
        src[k++] = (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", *c)) ? *c : '_';
    src[k] = '\0';
    if (k < 3 || strcmp(src + k - 3, ".cu")) snprintf(src + k, sizeof src - k, ".cu");
    snprintf(file, sizeof file, "%s/%s", work, src);
    snprintf(log, sizeof log, "%s/compile.log", work);
    static atomic_long serial;
    snprintf(tmp, sizeof tmp, "%s.%ld.%ld.tmp", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    tj_status s = TJ_OK;
    bool written = write_file(file, source);
    const char *header_names[TJCU_MAX_HEADERS], *headers[TJCU_MAX_HEADERS];
    int n_headers = tjcu_headers(header_names, headers, TJCU_MAX_HEADERS);
    for (int i = 0; written && i < n_headers && i < TJCU_MAX_HEADERS; i++) {
        char hfile[1300];
        snprintf(hfile, sizeof hfile, "%s/%s", work, header_names[i]);
        written = write_file(hfile, headers[i]);
    }
    if (!written) {
        s = tjc_error(TJ_ERR_IO, "tjh_module_load: module %s: cannot write %s", name, file);
        goto done;
    }
    char buf[512], *argv[MAX_CXX_WORDS + N_FLAGS + 8];
    int n = compiler_words(buf, sizeof buf, argv);
    for (size_t i = 0; i < N_FLAGS; i++) argv[n++] = (char *)cxx_flags[i];
    argv[n++] = "-x";
    argv[n++] = "c++";
    argv[n++] = file;
    argv[n++] = "-o";
    argv[n++] = tmp;
    argv[n] = NULL;
    int rc = run(argv, log);
    atomic_fetch_add(&n_compiles, 1);
    if (rc != 0) {
        char head[700], prefix[1110];
        snprintf(prefix, sizeof prefix, "%s/", work);
        read_head(log, head, sizeof head, 12, prefix);
        s = rc < 0 ? tjc_error(TJ_ERR_UNSUPPORTED, "tjh_module_load: module %s: cannot run the host C++ "
                               "compiler '%s': %s", name, argv[0], strerror(errno))
                   : tjc_error(TJ_ERR_UNSUPPORTED, "tjh_module_load: module %s: the host C++ compiler (%s) "
                               "failed:\n%s", name, argv[0], head);
        unlink(tmp);
        goto done;
    }
    /* the compiler's umask may leave the file group-writable, which the cache then distrusts */
    if (chmod(tmp, 0755) != 0 || rename(tmp, path) != 0) {
        s = tjc_error(TJ_ERR_IO, "tjh_module_load: module %s: cannot store %s: %s", name, path, strerror(errno));
        unlink(tmp);
    }
done:
    remove_tree(work, 0);
    return s;
}

/* ---- modules ------------------------------------------------------------------------------ */

static tj_status load_shared_object(const char *name, const char *path, void **out) {
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) return tjc_error(TJ_ERR_IO, "tjh_module_load: module %s: dlopen: %s", name, dlerror());
    tjcu_bind_fn bind;
    *(void **)&bind = dlsym(dl, "tjh_bind");
    int abi = bind ? bind(&tjh_runtime) : -1;
    if (abi != TJCU_ABI_VERSION) {
        dlclose(dl);
        return tjc_error(TJ_ERR_INTERNAL, "tjh_module_load: module %s: %s has %s (ABI %d, expected %d)", name,
                         path, bind ? "another runtime interface" : "no tjh_bind", abi, TJCU_ABI_VERSION);
    }
    *out = dl;
    return TJ_OK;
}

/* The module's key (called with the lock held: the compiler's identity is cached). */
static tj_status module_key(const char *name, const char *source, uint64_t *h1, uint64_t *h2) {
    /* the key covers every header a source may include */
    const char *header_names[TJCU_MAX_HEADERS], *headers[TJCU_MAX_HEADERS];
    int n_headers = tjcu_headers(header_names, headers, TJCU_MAX_HEADERS);
    if (n_headers == 0 || n_headers > TJCU_MAX_HEADERS)
        return tjc_error(TJ_ERR_INTERNAL, "tjh_module_load: %d kernel headers embedded (1 to %d)",
                         n_headers, TJCU_MAX_HEADERS);
    const char *cmd, *version;
    tj_status s = compiler_identity(name, &cmd, &version);
    if (s != TJ_OK) return s;
    char flags[256] = "";
    for (size_t i = 0; i < N_FLAGS; i++) snprintf(flags + strlen(flags), sizeof flags - strlen(flags), " %s", cxx_flags[i]);
    const char *parts[6 + TJCU_MAX_HEADERS] = {KEY_VERSION, cmd, version, flags, source};
    int n_parts = 5;
    for (int i = 0; i < n_headers; i++) parts[n_parts++] = headers[i];
    key_hash(parts, n_parts, h1, h2);
    return TJ_OK;
}

static void module_path(char *path, size_t n, const char *dir, uint64_t h1, uint64_t h2) {
    snprintf(path, n, "%s/tjh-%016llx%016llx.so", dir, (unsigned long long)h1, (unsigned long long)h2);
}

static tj_status load_locked(const char *name, const char *source, tjh_module **out) {
    uint64_t h1, h2;
    tj_status s = module_key(name, source, &h1, &h2);
    if (s != TJ_OK) return s;
    for (tjh_module *m = modules; m; m = m->next)
        if (m->h1 == h1 && m->h2 == h2 && !strcmp(m->source, source)) {
            m->refs++;
            atomic_fetch_add(&n_memory_hits, 1);
            *out = m;
            return TJ_OK;
        }
    const char *dir = cache_dir();
    if (!dir) return tjc_error(TJ_ERR_IO, "tjh_module_load: module %s: no directory for the compiled kernels", name);
    char path[1100];
    module_path(path, sizeof path, dir, h1, h2);
    if (distrust(path, false) == NULL) {
        atomic_fetch_add(&n_disk_hits, 1);
    } else if ((s = compile(name, source, path)) != TJ_OK) {
        return s;
    }
    tjh_module *m = tjc_calloc(1, sizeof *m);
    if (!m || !(m->name = tjc_strdup(name)) || !(m->source = tjc_strdup(source))) {
        if (m) tjc_free(m->name);
        tjc_free(m);
        return tjc_error(TJ_ERR_MEMORY, "tjh_module_load: module %s: out of memory", name);
    }
    if ((s = load_shared_object(name, path, &m->dl)) != TJ_OK) {
        tjc_free(m->name);
        tjc_free(m->source);
        tjc_free(m);
        return s;
    }
    m->refs = 1;
    m->h1 = h1;
    m->h2 = h2;
    m->next = modules;
    modules = m;
    *out = m;
    return TJ_OK;
}

typedef struct precompile_job {
    const char *const *names, *const *sources;
    char (*paths)[1100]; /* "" for a module already compiled */
} precompile_job;

static void precompile_one(void *ctx, int i) {
    precompile_job *job = ctx;
    if (job->paths[i][0] && compile(job->names[i], job->sources[i], job->paths[i]) != TJ_OK)
        tj_clear_error(); /* the load compiles it again and reports why */
}

void tjh_precompile(const char *const *names, const char *const *sources, int n) {
    char (*paths)[1100] = n > 0 ? tjc_calloc((size_t)n, sizeof *paths) : NULL;
    if (!paths) return;
    pthread_mutex_lock(&lock);
    const char *dir = get_private_dir() ? cache_dir() : NULL; /* made here, not by racing workers */
    for (int i = 0; dir && i < n; i++) {
        uint64_t h1, h2;
        if (module_key(names[i], sources[i], &h1, &h2) != TJ_OK) {
            tj_clear_error();
            continue;
        }
        module_path(paths[i], sizeof paths[i], dir, h1, h2);
        if (distrust(paths[i], false) == NULL) paths[i][0] = '\0'; /* in the cache already */
    }
    pthread_mutex_unlock(&lock);
    precompile_job job = {names, sources, paths};
    tjcu_parallel_for(n, precompile_one, &job);
    tjc_free(paths);
}

tj_status tjh_module_load(const char *name, const char *source, tjh_module **out) {
    if (!out) return tjc_error(TJ_ERR_ARG, "tjh_module_load: no place for the module");
    *out = NULL;
    if (!name || !source) return tjc_error(TJ_ERR_ARG, "tjh_module_load: no name or no source");
    pthread_mutex_lock(&lock);
    tj_status s = load_locked(name, source, out);
    pthread_mutex_unlock(&lock);
    return s;
}

void tjh_module_unload(tjh_module *m) {
    if (!m) return;
    pthread_mutex_lock(&lock);
    if (--m->refs == 0) {
        for (tjh_module **p = &modules; *p; p = &(*p)->next)
            if (*p == m) {
                *p = m->next;
                break;
            }
        for (tjh_function *f = m->functions, *next; f; f = next) {
            next = f->next;
            tjc_free(f);
        }
        dlclose(m->dl);
        tjc_free(m->name);
        tjc_free(m->source);
        tjc_free(m);
    }
    pthread_mutex_unlock(&lock);
}

tj_status tjh_get_function(tjh_module *m, const char *kernel, tjh_function **out) {
    if (!out) return tjc_error(TJ_ERR_ARG, "tjh_get_function: no place for the function");
    *out = NULL;
    if (!m || !kernel) return tjc_error(TJ_ERR_ARG, "tjh_get_function: no module or no kernel name");
    tj_status s = TJ_OK;
    pthread_mutex_lock(&lock);
    tjh_function *f = m->functions;
    while (f && strcmp(f->kernel, kernel)) f = f->next;
    if (!f) {
        char symbol[300];
        snprintf(symbol, sizeof symbol, "tjh_entry_%s", kernel);
        void *entry = strlen(kernel) < 256 ? dlsym(m->dl, symbol) : NULL;
        snprintf(symbol, sizeof symbol, "tjh_params_%s", kernel);
        int (*params)(size_t *, int) = NULL;
        if (entry) *(void **)&params = dlsym(m->dl, symbol);
        if (!entry || !params) {
            s = tjc_error(TJ_ERR_ARG, "tjh_get_function: module %s has no kernel %s (is TJCU_EXPORT(%s) "
                          "missing?)", m->name, kernel, kernel);
        } else if (!(f = tjc_calloc(1, sizeof *f + strlen(kernel) + 1))) {
            s = tjc_error(TJ_ERR_MEMORY, "tjh_get_function: out of memory");
        } else {
            strcpy(f->kernel, kernel);
            f->module = m;
            f->n_params = params(f->param_size, TJH_MAX_PARAMS);
            *(void **)&f->entry = entry;
            f->next = m->functions;
            m->functions = f;
        }
    }
    pthread_mutex_unlock(&lock);
    *out = f;
    return s;
}

const char *tjh_function_name(const tjh_function *f) { return f ? f->kernel : NULL; }
const char *tjh_function_kernel(const tjh_function *f) { return f->kernel; }
int tjh_function_params(const tjh_function *f, const size_t **sizes) {
    *sizes = f->param_size;
    return f->n_params;
}
tjcu_entry tjh_function_entry(const tjh_function *f) { return f->entry; }

tjh_stats tjh_get_stats(void) {
    return (tjh_stats){.compiles = atomic_load(&n_compiles),
                       .disk_hits = atomic_load(&n_disk_hits),
                       .memory_hits = atomic_load(&n_memory_hits),
                       .launches = tjh_launch_count()};
}
