/* disk_cache.c — the on-disk kernel cache and its trust rules (see
 * disk_cache.h). Every check is made on an open descriptor (fstat), and
 * entries are opened relative to the checked directory's descriptor, so what
 * was checked is what is read. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "disk_cache.h"

#define MAGIC_LEN 8
#define HEADER_LEN 16 /* magic and the key's length */
#define MAX_NAME 200

static atomic_flag warned = ATOMIC_FLAG_INIT;

/* The process's one warning: the first reason the cache was passed over. */
static void distrust(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void distrust(const char *fmt, ...) {
    if (atomic_flag_test_and_set(&warned)) return;
    char why[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tjit: warning: not using the kernel cache: %s; kernels are compiled without it\n", why);
}

static bool configured_dir(char *buf, size_t n) {
    const char *d = getenv("TJIT_CACHE_DIR");
    int len;
    if (d && d[0]) {
        len = snprintf(buf, n, "%s", d);
    } else {
        const char *on = getenv("TJIT_LLVM_CACHE");
        if (!on || strcmp(on, "1")) return false;
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0]) len = snprintf(buf, n, "%s/tjit", xdg);
        else if (home && home[0]) len = snprintf(buf, n, "%s/.cache/tjit", home);
        else return false;
    }
    return len > 0 && (size_t)len < n;
}

/* Creates dir and its missing parents with mode 0700 (the umask may only
 * narrow it); existing directories keep their modes. */
static void make_dirs(const char *dir) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return;
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0700);
            *s = '/';
        }
    mkdir(p, 0700);
}

/* True when st (of path) is the user's own and only the user may write it;
 * else warns why. */
static bool trusted(const char *path, const struct stat *st, bool is_dir) {
    if (is_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
        distrust("%s is not a %s", path, is_dir ? "directory" : "regular file");
        return false;
    }
    if (st->st_uid != geteuid()) {
        distrust("%s is owned by uid %u, not by this user (uid %u)", path, (unsigned)st->st_uid,
                 (unsigned)geteuid());
        return false;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        const char *who = (st->st_mode & S_IWGRP) && (st->st_mode & S_IWOTH) ? "group and others"
                          : (st->st_mode & S_IWGRP)                           ? "group"
                                                                              : "others";
        distrust("%s is writable by %s (mode %04o)", path, who, (unsigned)(st->st_mode & 07777));
        return false;
    }
    return true;
}

/* The trusted cache directory, open, and its path in dir; -1 when none. */
static int open_dir(char *dir, size_t n) {
    if (!configured_dir(dir, n)) return -1;
    /* a symbolic link to the directory is followed: the directory it names
     * is the one checked and used */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        make_dirs(dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0) {
        distrust("%s cannot be created or opened (%s)", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !trusted(dir, &st, true)) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool valid_name(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > MAX_NAME || name[0] == '.') return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

bool tjf_disk_cache_dir(char *buf, size_t n) {
    int fd = open_dir(buf, n);
    if (fd < 0) return false;
    close(fd);
    return true;
}

static bool read_full(int fd, void *buf, size_t n) {
    for (char *p = buf; n > 0;) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static bool write_full(int fd, const void *buf, size_t n) {
    for (const char *p = buf; n > 0;) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

/* The entry's data after checking its header and key; NULL on a mismatch. */
static void *read_entry(int fd, off_t file_size, const char *key, size_t *size) {
    size_t key_len = strlen(key);
    char header[HEADER_LEN];
    uint64_t stored_len;
    if (file_size < (off_t)(HEADER_LEN + key_len) || !read_full(fd, header, HEADER_LEN) ||
        memcmp(header, TJF_DISK_CACHE_MAGIC, MAGIC_LEN))
        return NULL;
    memcpy(&stored_len, header + MAGIC_LEN, sizeof stored_len);
    if (stored_len != key_len) return NULL;
    size_t n = (size_t)file_size - HEADER_LEN - key_len;
    char *stored_key = tjc_malloc(key_len + 1), *data = tjc_malloc(n ? n : 1);
    bool ok = stored_key && data && read_full(fd, stored_key, key_len) && !memcmp(stored_key, key, key_len) &&
              read_full(fd, data, n);
    tjc_free(stored_key);
    if (!ok) {
        tjc_free(data);
        return NULL;
    }
    *size = n;
    return data;
}

bool tjf_disk_cache_read(const char *name, const char *key, void **data, size_t *size) {
    *data = NULL;
    *size = 0;
    char dir[4096], path[4400];
    if (!valid_name(name) || !key) return false;
    int dfd = open_dir(dir, sizeof dir);
    if (dfd < 0) return false;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    /* O_NONBLOCK: a FIFO in the directory must not hang the open */
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    close(dfd);
    if (fd < 0) {
        if (errno == ELOOP) distrust("%s is a symbolic link", path);
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && trusted(path, &st, false)) *data = read_entry(fd, st.st_size, key, size);
    close(fd);
    return *data != NULL;
}

bool tjf_disk_cache_write(const char *name, const char *key, const void *data, size_t size) {
    static atomic_uint counter;
    char dir[4096], tmp[MAX_NAME + 64];
    if (!valid_name(name) || !key || (!data && size)) return false;
    int dfd = open_dir(dir, sizeof dir);
    if (dfd < 0) return false;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
        snprintf(tmp, sizeof tmp, ".%s.%ld.%u.tmp", name, (long)getpid(), atomic_fetch_add(&counter, 1));
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        close(dfd);
        return false;
    }
    char header[HEADER_LEN];
    uint64_t key_len = strlen(key);
    memcpy(header, TJF_DISK_CACHE_MAGIC, MAGIC_LEN);
    memcpy(header + MAGIC_LEN, &key_len, sizeof key_len);
    bool ok = write_full(fd, header, HEADER_LEN) && write_full(fd, key, key_len) && write_full(fd, data, size);
    ok &= close(fd) == 0;
    ok = ok && renameat(dfd, tmp, dfd, name) == 0;
    if (!ok) unlinkat(dfd, tmp, 0);
    close(dfd);
    return ok;
}
