/* test_disk_cache.c — the on-disk kernel cache (fuser/disk_cache.c): where it
 * is and how it is created, round trips, and the trust rules: nothing is read
 * from a directory or an entry that another user owns or that group or others
 * may write, nor through a symbolic link, and one warning says why. The
 * process warns once, so every case that should warn runs in a child process
 * of its own, with its stderr captured; the parent never warns. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuser/disk_cache.h"
#include "tests/support/runtime_testing.h"

#define ENTRY "tjl_0123456789abcdef0123456789abcdef.o"
#define KEY "; tjit llvm kernel v1\n; x86_64 znver4\ndefine void @k() { ret void }\n"
#define WARNING "tjit: warning: not using the kernel cache"
#define NOBODY 65534

static const char DATA[] = "object code\0with a NUL inside";

static void remove_all(const char *path) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static mode_t mode_of(const char *path) {
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & 07777;
}

static int entries_in(const char *dir) { /* every name but . and .. */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

/* A fresh cache directory (mode 0700) that TJIT_CACHE_DIR names. */
static char *use_new_cache(void) {
    char *dir = tt_mkdtemp();
    setenv("TJIT_CACHE_DIR", dir, 1);
    return dir;
}

static bool reads_back(const char *name, const char *key) {
    void *data = NULL;
    size_t size = 0;
    bool hit = tjf_disk_cache_read(name, key, &data, &size);
    bool same = hit && size == sizeof DATA && !memcmp(data, DATA, sizeof DATA);
    free(data);
    return same;
}

static void store(const char *name) { assert_true(tjf_disk_cache_write(name, KEY, DATA, sizeof DATA)); }

/* ---- child processes ------------------------------------------------------------ */

typedef int (*child_fn)(void);

/* Runs fn in a child process with its stderr in *err (malloc'd); its exit
 * status (200 when it did not exit). */
static int in_child(child_fn fn, char **err) {
    char *tmp = tt_mkdtemp(), *log = tt_path(tmp, "stderr");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0) _exit(100);
        int rc = fn();
        fflush(stderr);
        _exit(rc);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    *err = tt_read_file(log);
    assert_non_null(*err);
    free(log);
    tt_rmtree(tmp);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

static int count_warnings(const char *text) {
    int n = 0;
    for (const char *s = text; (s = strstr(s, WARNING)); s++) n++;
    return n;
}

/* Runs fn in a child that must exit 0 and warn exactly once, with every
 * needle in its warning. */
static void expect_one_warning(child_fn fn, const char *needle1, const char *needle2) {
    char *err = NULL;
    int rc = in_child(fn, &err);
    if (rc != 0 || count_warnings(err) != 1 || !strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
        fail_msg("child exited with %d, stderr:\n%s(expected one warning with '%s' and '%s')", rc, err, needle1,
                 needle2 ? needle2 : "");
    free(err);
}

/* In a child: the directory is passed over: nothing read, nothing written. */
static int child_finds_no_cache(void) {
    char dir[4096];
    if (tjf_disk_cache_dir(dir, sizeof dir)) return 1;
    if (reads_back(ENTRY, KEY) || reads_back(ENTRY, KEY)) return 2;
    if (tjf_disk_cache_write("new.o", KEY, DATA, sizeof DATA)) return 3;
    return 0;
}

/* In a child: the directory is fine but the entry is passed over. */
static int child_misses_the_entry(void) {
    char dir[4096];
    if (!tjf_disk_cache_dir(dir, sizeof dir)) return 1;
    if (reads_back(ENTRY, KEY) || reads_back(ENTRY, KEY)) return 2;
    return 0;
}

static int child_stores(void) { return tjf_disk_cache_write(ENTRY, KEY, DATA, sizeof DATA) ? 0 : 1; }
static int child_reads(void) { return reads_back(ENTRY, KEY) ? 0 : 1; }

/* ---- where the cache is ------------------------------------------------------------ */

static void a_missing_directory_is_created_0700(void **state) {
    (void)state;
    char *base = tt_mkdtemp();
    assert_int_equal(chmod(base, 0755), 0);
    char *dir = tt_path(base, "a/b/cache"), *a = tt_path(base, "a"), *ab = tt_path(base, "a/b");
    setenv("TJIT_CACHE_DIR", dir, 1);
    char got[4096];
    assert_true(tjf_disk_cache_dir(got, sizeof got));
    assert_string_equal(got, dir);
    assert_int_equal(mode_of(dir), 0700);
    assert_int_equal(mode_of(a), 0700);
    assert_int_equal(mode_of(ab), 0700);
    assert_int_equal(mode_of(base), 0755); /* an existing parent keeps its mode */
    store(ENTRY);
    char *entry = tt_path(dir, ENTRY);
    assert_int_equal(mode_of(entry), 0600);
    /* the default place, with TJIT_LLVM_CACHE=1 */
    unsetenv("TJIT_CACHE_DIR");
    assert_false(tjf_disk_cache_dir(got, sizeof got));
    assert_false(tjf_disk_cache_write(ENTRY, KEY, DATA, sizeof DATA));
    setenv("TJIT_LLVM_CACHE", "1", 1);
    setenv("XDG_CACHE_HOME", ab, 1);
    assert_true(tjf_disk_cache_dir(got, sizeof got));
    char *xdg = tt_path(ab, "tjit");
    assert_string_equal(got, xdg);
    assert_int_equal(mode_of(xdg), 0700);
    unsetenv("TJIT_LLVM_CACHE");
    unsetenv("XDG_CACHE_HOME");
    free(xdg);
    free(entry);
    free(a);
    free(ab);
    free(dir);
    remove_all(base);
    free(base);
}

static void entries_round_trip(void **state) {
    (void)state;
    char *dir = use_new_cache();
    assert_false(reads_back(ENTRY, KEY)); /* missing */
    store(ENTRY);
    assert_true(reads_back(ENTRY, KEY));
    assert_false(reads_back(ENTRY, "another key of the same hash"));
    assert_false(reads_back("tjl_other.o", KEY));
    assert_int_equal(entries_in(dir), 1); /* no temporary file left */
    /* an entry is replaced whole */
    const char other[] = "other code";
    assert_true(tjf_disk_cache_write(ENTRY, KEY, other, sizeof other));
    void *data = NULL;
    size_t size = 0;
    assert_true(tjf_disk_cache_read(ENTRY, KEY, &data, &size));
    assert_int_equal(size, sizeof other);
    assert_memory_equal(data, other, sizeof other);
    free(data);
    /* names that are not plain file names */
    const char *bad[] = {"../" ENTRY, ".hidden", "a/b", "", "tab\tname"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(tjf_disk_cache_write(bad[i], KEY, DATA, sizeof DATA));
        assert_false(reads_back(bad[i], KEY));
    }
    assert_int_equal(entries_in(dir), 1);
    /* a file that is not a whole entry is a miss */
    char *path = tt_path(dir, ENTRY);
    tt_write_file(path, "TJITOBJ1garbage", 15);
    assert_false(reads_back(ENTRY, KEY));
    store(ENTRY);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 3), 0);
    assert_false(reads_back(ENTRY, KEY));
    free(path);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

/* ---- what is not trusted ---------------------------------------------------------- */

static void a_world_writable_directory_is_not_read(void **state) {
    (void)state;
    char *dir = use_new_cache();
    store(ENTRY); /* exactly the file a lookup reads */
    assert_true(reads_back(ENTRY, KEY));
    assert_int_equal(chmod(dir, 0777), 0);
    expect_one_warning(child_finds_no_cache, dir, "is writable by group and others (mode 0777)");
    assert_int_equal(chmod(dir, 0720), 0);
    expect_one_warning(child_finds_no_cache, dir, "is writable by group (mode 0720)");
    assert_int_equal(chmod(dir, 01777), 0); /* sticky, like /tmp */
    expect_one_warning(child_finds_no_cache, dir, "(mode 1777)");
    assert_int_equal(entries_in(dir), 1); /* nothing was written */
    assert_int_equal(chmod(dir, 0700), 0);
    assert_true(reads_back(ENTRY, KEY)); /* the same file, trusted again */
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

static void a_directory_of_another_user_is_not_read(void **state) {
    (void)state;
    if (geteuid() != 0) skip(); /* only root can give a directory away */
    char *dir = use_new_cache();
    store(ENTRY);
    assert_int_equal(chown(dir, NOBODY, NOBODY), 0);
    assert_int_equal(mode_of(dir), 0700);
    expect_one_warning(child_finds_no_cache, dir, "is owned by uid 65534, not by this user (uid 0)");
    assert_int_equal(chown(dir, 0, 0), 0);
    assert_true(reads_back(ENTRY, KEY));
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

static void an_entry_others_may_write_is_not_read(void **state) {
    (void)state;
    char *dir = use_new_cache(), *path = tt_path(dir, ENTRY);
    store(ENTRY);
    assert_int_equal(chmod(path, 0620), 0);
    expect_one_warning(child_misses_the_entry, path, "is writable by group (mode 0620)");
    assert_int_equal(chmod(path, 0602), 0);
    expect_one_warning(child_misses_the_entry, path, "is writable by others (mode 0602)");
    assert_int_equal(chmod(path, 0600), 0);
    assert_true(reads_back(ENTRY, KEY));
    if (geteuid() == 0) {
        assert_int_equal(chown(path, NOBODY, NOBODY), 0);
        expect_one_warning(child_misses_the_entry, path, "is owned by uid 65534");
    }
    free(path);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

static void a_symbolic_link_is_not_followed(void **state) {
    (void)state;
    char *elsewhere = use_new_cache();
    store(ENTRY);
    assert_true(reads_back(ENTRY, KEY)); /* a valid entry, trusted where it is */
    char *target = tt_path(elsewhere, ENTRY);
    char *dir = use_new_cache(), *link = tt_path(dir, ENTRY);
    assert_int_equal(symlink(target, link), 0);
    expect_one_warning(child_misses_the_entry, link, "is a symbolic link");
    /* writing replaces the link, not its target */
    const char other[] = "new code";
    assert_true(tjf_disk_cache_write(ENTRY, KEY, other, sizeof other));
    assert_int_equal(mode_of(link) & 0777, 0600);
    setenv("TJIT_CACHE_DIR", elsewhere, 1);
    assert_true(reads_back(ENTRY, KEY));
    free(link);
    free(target);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
    tt_rmtree(elsewhere);
}

static void a_fifo_is_not_opened_for_reading(void **state) {
    (void)state;
    char *dir = use_new_cache(), *path = tt_path(dir, ENTRY);
    assert_int_equal(mkfifo(path, 0600), 0);
    expect_one_warning(child_misses_the_entry, path, "is not a regular file");
    free(path);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

/* ---- between processes -------------------------------------------------------------- */

static void a_second_process_reads_what_the_first_wrote(void **state) {
    (void)state;
    char *dir = use_new_cache(), *err = NULL;
    assert_int_equal(in_child(child_stores, &err), 0);
    assert_int_equal(count_warnings(err), 0);
    free(err);
    assert_true(reads_back(ENTRY, KEY));
    char *path = tt_path(dir, ENTRY);
    assert_int_equal(unlink(path), 0);
    free(path);
    store(ENTRY); /* and the other way round */
    assert_int_equal(in_child(child_reads, &err), 0);
    free(err);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

/* Readers meanwhile see one payload or the other, whole. */
static void readers_never_see_a_partial_entry(void **state) {
    (void)state;
    char *dir = use_new_cache();
    enum { N = 256 * 1024, WRITES = 200 };
    char *payload[2] = {malloc(N), malloc(N)};
    assert_non_null(payload[0]);
    assert_non_null(payload[1]);
    memset(payload[0], 'A', N);
    memset(payload[1], 'B', N);
    assert_true(tjf_disk_cache_write(ENTRY, KEY, payload[0], N));
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < WRITES; i++)
            if (!tjf_disk_cache_write(ENTRY, KEY, payload[i % 2], N)) _exit(1);
        _exit(0);
    }
    int reads = 0, status = 0;
    bool torn = false;
    while (waitpid(pid, &status, WNOHANG) == 0 || reads == 0) {
        void *data = NULL;
        size_t size = 0;
        assert_true(tjf_disk_cache_read(ENTRY, KEY, &data, &size));
        torn |= size != N || (memcmp(data, payload[0], N) && memcmp(data, payload[1], N));
        free(data);
        reads++;
    }
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_false(torn);
    assert_int_equal(entries_in(dir), 1);
    print_message("%d whole reads during %d writes\n", reads, WRITES);
    free(payload[0]);
    free(payload[1]);
    unsetenv("TJIT_CACHE_DIR");
    tt_rmtree(dir);
}

int main(void) {
    umask(022);
    unsetenv("TJIT_LLVM_CACHE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_missing_directory_is_created_0700),
        cmocka_unit_test(entries_round_trip),
        cmocka_unit_test(a_world_writable_directory_is_not_read),
        cmocka_unit_test(a_directory_of_another_user_is_not_read),
        cmocka_unit_test(an_entry_others_may_write_is_not_read),
        cmocka_unit_test(a_symbolic_link_is_not_followed),
        cmocka_unit_test(a_fifo_is_not_opened_for_reading),
        cmocka_unit_test(a_second_process_reads_what_the_first_wrote),
        cmocka_unit_test(readers_never_see_a_partial_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
