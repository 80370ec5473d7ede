/* rendezvous.c — the TCP rendezvous of rendezvous.h and the launch
 * variables it reads.
 *
 * The exchange: a rank connects to rank 0 and sends a hello (a magic word,
 * its rank and the world size, as big-endian 32-bit numbers); rank 0 answers
 * with one status byte, then the bytes (status 0) or a message saying why it
 * refused the rank (status 1: a rank out of range or twice, another world
 * size). Rank 0 answers each rank as it comes, and returns when all have
 * theirs. Sockets are non-blocking and every wait is a poll bounded by the
 * deadline, so nothing here can hang past the timeout.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "distributed/rendezvous.h"

#define WHO "tj_dist_init(\"nccl\")"
enum { HELLO_BYTES = 16, MAX_BYTES = 4096, REFUSAL_BYTES = 200 };
static const char hello_magic[8] = {'t', 'j', 'i', 't', 'r', 'd', 'v', '1'};

/* ---- the launch variables ------------------------------------------------------ */

/* An integer variable in [lo, hi]; *set false when it is unset or empty. */
static tj_status int_var(const char *name, long lo, long hi, int *out, bool *set) {
    const char *s = getenv(name);
    *set = s && s[0];
    if (!*set) return TJ_OK;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return tjc_error(TJ_ERR_ARG, WHO ": %s=\"%s\" is not an integer from %ld to %ld", name, s, lo,
                         hi);
    *out = (int)v;
    return TJ_OK;
}

tj_status tjd_launch_env_read(tjd_launch_env *env, bool *found) {
    memset(env, 0, sizeof *env);
    env->local_rank = -1;
    bool has_rank, has_world, has_local, has_port;
    tj_status st = int_var("RANK", 0, 1 << 20, &env->rank, &has_rank);
    if (!st) st = int_var("WORLD_SIZE", 1, 1 << 20, &env->world_size, &has_world);
    if (!st) st = int_var("LOCAL_RANK", 0, 1 << 20, &env->local_rank, &has_local);
    if (!st) st = int_var("MASTER_PORT", 1, 65535, &env->port, &has_port);
    *found = !st && (has_rank || has_world);
    if (st || !*found) return st;
    if (!has_rank || !has_world)
        return tjc_error(TJ_ERR_ARG, WHO ": %s is set but %s is not (torchrun sets RANK, "
                         "WORLD_SIZE, MASTER_ADDR and MASTER_PORT)", has_rank ? "RANK" : "WORLD_SIZE",
                         has_rank ? "WORLD_SIZE" : "RANK");
    if (env->rank >= env->world_size)
        return tjc_error(TJ_ERR_ARG, WHO ": RANK=%d is not below WORLD_SIZE=%d", env->rank,
                         env->world_size);
    if (env->world_size == 1) return TJ_OK; /* alone: nobody to meet */
    const char *addr = getenv("MASTER_ADDR");
    if (!addr || !addr[0] || !has_port)
        return tjc_error(TJ_ERR_ARG, WHO ": WORLD_SIZE=%d needs MASTER_ADDR and MASTER_PORT (where "
                         "rank 0 listens)%s", env->world_size,
                         !addr || !addr[0] ? "; MASTER_ADDR is unset" : "; MASTER_PORT is unset");
    if (strlen(addr) >= sizeof env->addr)
        return tjc_error(TJ_ERR_ARG, WHO ": MASTER_ADDR is longer than %zu characters",
                         sizeof env->addr - 1);
    strcpy(env->addr, addr);
    return TJ_OK;
}

/* ---- sockets with deadlines -------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int ms_until(double deadline) {
    double left = deadline - now_s();
    return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}
static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Moves n bytes through fd before the deadline: 0 done, else -1 (errno set;
 * ETIMEDOUT at the deadline, ECONNRESET when the peer closed). */
static int transfer(int fd, void *buf, size_t n, bool sending, double deadline) {
    char *p = buf;
    while (n > 0) {
        struct pollfd pfd = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
        int r = poll(&pfd, 1, ms_until(deadline));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return errno = ETIMEDOUT, -1;
        ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
        if (k < 0) return -1;
        if (k == 0) return errno = ECONNRESET, -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int nonblocking_socket(int family) {
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static tj_status resolve(const char *addr, int port, struct addrinfo **out) {
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(addr, service, &hints, out);
    if (rc)
        return tjc_error(TJ_ERR_ARG, WHO ": MASTER_ADDR \"%s\" is not an address this machine can "
                         "reach: %s", addr, gai_strerror(rc));
    return TJ_OK;
}

/* ---- rank 0 ------------------------------------------------------------------------- */

static int listen_on(const struct addrinfo *ai, int port, char *why, size_t n) {
    int fd = nonblocking_socket(ai->ai_family);
    if (fd < 0) {
        snprintf(why, n, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    /* every interface of the address's family: the others reach rank 0 by
     * whichever of its addresses MASTER_ADDR names */
    struct sockaddr_storage any = {0};
    socklen_t len;
    if (ai->ai_family == AF_INET6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&any;
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_any;
        a6->sin6_port = htons((uint16_t)port);
        len = sizeof *a6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&any;
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
        a4->sin_port = htons((uint16_t)port);
        len = sizeof *a4;
    }
    if (bind(fd, (struct sockaddr *)&any, len) || listen(fd, 128)) {
        snprintf(why, n, "%s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Answers one connected rank; returns the rank served, or -1 (a connection
 * that said nothing usable is dropped; a rank refused is told why and, being
 * a misconfiguration, fails rank 0 too: *fatal). */
static int serve(int fd, int world_size, const bool *served, const void *bytes, size_t n,
                 double deadline, char *fatal, size_t fatal_len) {
    unsigned char hello[HELLO_BYTES];
    /* a connection that never says hello (not a rank) costs at most a second */
    double hello_deadline = deadline < now_s() + 1.0 ? deadline : now_s() + 1.0;
    if (transfer(fd, hello, sizeof hello, false, hello_deadline) ||
        memcmp(hello, hello_magic, sizeof hello_magic))
        return -1;
    uint32_t rank = get_u32(hello + 8), world = get_u32(hello + 12);
    char refusal[REFUSAL_BYTES] = "";
    if (world != (uint32_t)world_size)
        snprintf(refusal, sizeof refusal, "rank %u has WORLD_SIZE=%u, rank 0 has %d", rank, world,
                 world_size);
    else if (rank == 0 || rank >= (uint32_t)world_size)
        snprintf(refusal, sizeof refusal, "a process with RANK=%u connected to rank 0 (ranks 1 to %d "
                 "connect)", rank, world_size - 1);
    else if (served[rank])
        snprintf(refusal, sizeof refusal, "two processes have RANK=%u", rank);
    unsigned char status = refusal[0] ? 1 : 0;
    if (transfer(fd, &status, 1, true, deadline) == 0)
        transfer(fd, status ? (void *)refusal : (void *)bytes, status ? sizeof refusal : n, true, deadline);
    if (status) {
        snprintf(fatal, fatal_len, "%s", refusal);
        return -1;
    }
    return (int)rank;
}

static tj_status share_as_rank0(const struct addrinfo *ai, const char *addr, int port, int world_size,
                                const void *bytes, size_t n, double timeout_s) {
    char why[256];
    int lfd = listen_on(ai, port, why, sizeof why);
    if (lfd < 0)
        return tjc_error(TJ_ERR_COMM, WHO ": rank 0 cannot listen on port %d (MASTER_PORT): %s",
                         port, why);
    bool *served = calloc((size_t)world_size, 1);
    if (!served) {
        close(lfd);
        return tjc_error(TJ_ERR_MEMORY, WHO ": out of memory");
    }
    double deadline = now_s() + timeout_s;
    int left = world_size - 1;
    char fatal[REFUSAL_BYTES + 64] = "";
    while (left > 0 && !fatal[0]) {
        struct pollfd pfd = {.fd = lfd, .events = POLLIN};
        int r = poll(&pfd, 1, ms_until(deadline));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) continue;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        int rank = serve(fd, world_size, served, bytes, n, deadline, fatal, sizeof fatal);
        close(fd);
        if (rank > 0) {
            served[rank] = true;
            left--;
        }
    }
    close(lfd);
    tj_status st = TJ_OK;
    if (fatal[0]) {
        st = tjc_error(TJ_ERR_COMM, WHO ": rank 0 at %s:%d refused a rank: %s", addr, port, fatal);
    } else if (left > 0) {
        char missing[256] = "";
        size_t used = 0;
        for (int r = 1; r < world_size && used + 16 < sizeof missing; r++)
            if (!served[r]) used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                                     used ? ", " : "", r);
        st = tjc_error(TJ_ERR_COMM, WHO ": rank 0 at %s:%d: %d of the %d other ranks did not connect "
                       "within %g s (the timeout; missing: %s)", addr, port, left, world_size - 1,
                       timeout_s, missing);
    }
    free(served);
    return st;
}

/* ---- the other ranks ------------------------------------------------------------------ */

/* Connects before the deadline, retrying while nothing listens (rank 0 may
 * start later); -1 with the last error in why. */
static int connect_to(const struct addrinfo *list, double deadline, char *why, size_t n) {
    snprintf(why, n, "no address to try");
    for (;;) {
        for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
            int fd = nonblocking_socket(ai->ai_family);
            if (fd < 0) {
                snprintf(why, n, "socket: %s", strerror(errno));
                continue;
            }
            int r = connect(fd, ai->ai_addr, ai->ai_addrlen), err = r ? errno : 0;
            if (r && err == EINPROGRESS) {
                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                double attempt = now_s() + 1.0 < deadline ? now_s() + 1.0 : deadline;
                r = poll(&pfd, 1, ms_until(attempt));
                socklen_t len = sizeof err;
                if (r > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                else err = ETIMEDOUT;
            }
            if (!err) return fd;
            snprintf(why, n, "%s", strerror(err));
            close(fd);
        }
        if (now_s() >= deadline) return -1;
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    }
}

static tj_status share_as_peer(const struct addrinfo *list, const char *addr, int port, int rank,
                               int world_size, void *bytes, size_t n, double timeout_s) {
    double deadline = now_s() + timeout_s;
    char why[256];
    int fd = connect_to(list, deadline, why, sizeof why);
    if (fd < 0)
        return tjc_error(TJ_ERR_COMM, WHO ": rank %d: nothing accepted a connection at %s:%d "
                         "(MASTER_ADDR:MASTER_PORT) within %g s (the timeout; last error: %s): rank 0 "
                         "has not started, or listens elsewhere", rank, addr, port, timeout_s, why);
    unsigned char hello[HELLO_BYTES], status = 0;
    memcpy(hello, hello_magic, sizeof hello_magic);
    put_u32(hello + 8, (uint32_t)rank);
    put_u32(hello + 12, (uint32_t)world_size);
    tj_status st = TJ_OK;
    if (transfer(fd, hello, sizeof hello, true, deadline) ||
        transfer(fd, &status, 1, false, deadline)) {
        st = tjc_error(TJ_ERR_COMM, WHO ": rank %d: %s at %s:%d within %g s (the timeout)", rank,
                       errno == ETIMEDOUT ? "no answer from rank 0" : "rank 0 closed the connection",
                       addr, port, timeout_s);
    } else if (status == 1) {
        char refusal[REFUSAL_BYTES];
        if (transfer(fd, refusal, sizeof refusal, false, deadline)) snprintf(refusal, sizeof refusal, "?");
        refusal[sizeof refusal - 1] = '\0';
        st = tjc_error(TJ_ERR_COMM, WHO ": rank %d: rank 0 at %s:%d refused this rank: %s", rank, addr,
                       port, refusal);
    } else if (status != 0) {
        st = tjc_error(TJ_ERR_COMM, WHO ": rank %d: what listens at %s:%d is not a tjit rank 0 (it "
                       "answered byte %u)", rank, addr, port, status);
    } else if (transfer(fd, bytes, n, false, deadline)) {
        st = tjc_error(TJ_ERR_COMM, WHO ": rank %d: rank 0 at %s:%d stopped sending the NCCL id "
                       "(%s)", rank, addr, port, errno == ETIMEDOUT ? "the timeout passed" : "closed");
    }
    close(fd);
    return st;
}

tj_status tjd_rendezvous_share(const char *addr, int port, int rank, int world_size, void *bytes,
                               size_t n, double timeout_s) {
    if (world_size < 1 || rank < 0 || rank >= world_size || n > MAX_BYTES || port < 1 || port > 65535)
        return tjc_error(TJ_ERR_ARG, WHO ": rendezvous of rank %d of %d on port %d with %zu bytes "
                         "is not possible", rank, world_size, port, n);
    if (world_size == 1) return TJ_OK;
    struct addrinfo *list = NULL;
    tj_status st = resolve(addr, port, &list);
    if (st) return st;
    st = rank == 0 ? share_as_rank0(list, addr, port, world_size, bytes, n, timeout_s)
                   : share_as_peer(list, addr, port, rank, world_size, bytes, n, timeout_s);
    freeaddrinfo(list);
    return st;
}
