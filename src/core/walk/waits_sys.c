/* waits_sys.c: what a thread asleep in a system call other than a futex waits on: a sleep
 * (how long it asked for, or how much of an absolute one is left), a descriptor (what it is:
 * a file, a socket with its addresses, a pipe), the descriptors of a poll, select or epoll set
 * (the first WAIT_FDS), or a child. Arguments come from /proc/PID/task/TID/syscall; what they
 * point to is read from the target, bounded. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/model/snapshot.h"
#include "core/target/proc.h"
#include "core/target/proc_wait.h"
#include "core/util/error.h"
#include "core/walk/waits_int.h"


static void describe_fd(struct waits *w, struct proc *p, int fd, char *out, size_t cap)
{
    struct pt_error e = {0};
    if (proc_fd_describe(p, w->net, fd, out, cap, &e) < 0) {
        snprintf(out, cap, "fd %d (%s)", fd, e.msg[0] != '\0' ? e.msg : "unreadable");
    }
}

/* Appends "fd N WHAT" for each of the N descriptors FDS to BUF. */
static void describe_fds(struct waits *w, struct proc *p, const int *fds, size_t n, bool more,
                         char *buf, size_t cap)
{
    size_t len = strlen(buf);
    for (size_t i = 0; i < n && len + 1 < cap; i++) {
        char one[WAIT_TEXT];
        describe_fd(w, p, fds[i], one, sizeof one);
        int k = snprintf(buf + len, cap - len, "%sfd %d %s", i > 0 ? ", " : "", fds[i], one);
        len = k < 0 ? len : len + (size_t)k < cap ? len + (size_t)k : cap - 1;
    }
    if (more && len + 1 < cap) {
        snprintf(buf + len, cap - len, ", ...");
    }
}

static void poll_fds(struct waits *w, struct proc *p, const struct proc_syscall *sc, char *buf,
                     size_t cap, size_t *n_out)
{
    uint64_t nfds = sc->args[1];
    struct {
        int32_t fd;
        int16_t events, revents;
    } pfd[WAIT_FDS];
    size_t n = nfds < WAIT_FDS ? (size_t)nfds : WAIT_FDS;
    struct pt_error e = {0};
    *n_out = (size_t)nfds;
    if (n == 0 || proc_read_bytes(p, sc->args[0], pfd, n * sizeof pfd[0], &e) < 0) {
        return;
    }
    int fds[WAIT_FDS];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (pfd[i].fd >= 0) {
            fds[k++] = pfd[i].fd;
        }
    }
    describe_fds(w, p, fds, k, nfds > n, buf, cap);
}

static void select_fds(struct waits *w, struct proc *p, const struct proc_syscall *sc,
                       char *buf, size_t cap, size_t *n_out)
{
    uint64_t nfds = sc->args[0] < 1024 ? sc->args[0] : 1024;
    int fds[WAIT_FDS];
    size_t k = 0;
    bool more = false;
    *n_out = 0;
    for (int set = 1; set <= 3; set++) {
        uint8_t bits[128];
        struct pt_error e = {0};
        size_t len = (size_t)(nfds + 7) / 8;
        if (sc->args[set] == 0 || len == 0 ||
            proc_read_bytes(p, sc->args[set], bits, len, &e) < 0) {
            continue;
        }
        for (uint64_t fd = 0; fd < nfds; fd++) {
            if (!(bits[fd / 8] & (1u << (fd % 8)))) {
                continue;
            }
            (*n_out)++;
            bool dup = false;
            for (size_t i = 0; i < k; i++) {
                dup |= fds[i] == (int)fd;
            }
            if (dup) {
                continue;
            }
            if (k < WAIT_FDS) {
                fds[k++] = (int)fd;
            } else {
                more = true;
            }
        }
    }
    describe_fds(w, p, fds, k, more, buf, cap);
}

static double timespec_at(struct proc *p, uint64_t addr, bool timeval)
{
    int64_t ts[2];
    struct pt_error e = {0};
    if (addr == 0 || proc_read_bytes(p, addr, ts, sizeof ts, &e) < 0 || ts[0] < 0 || ts[1] < 0 ||
        ts[1] >= (timeval ? 1000000 : 1000000000)) {
        return -1;
    }
    return (double)ts[0] + (double)ts[1] / (timeval ? 1e6 : 1e9);
}

/* A sleep; its deadline (an absolute one is a new sleep when it moves) goes into *KEY. */
static void set_sleep(struct proc *p, const struct proc_syscall *sc, long nr,
                      struct snap_wait *out, uint64_t *key)
{
    out->kind = SNAP_WAIT_SLEEP;
    const char *name = proc_syscall_name(nr);
    if (name != NULL && strcmp(name, "clock_nanosleep") == 0) {
        double at = timespec_at(p, sc->args[2], false);
        if (at >= 0 && (sc->args[1] & 1)) { /* TIMER_ABSTIME */
            *key = waits_mix(*key, at < 1e12 ? (uint64_t)(at * 1e6) : UINT64_MAX);
            struct timespec now;
            clockid_t clock = (clockid_t)sc->args[0];
            if ((clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME ||
                 clock == CLOCK_BOOTTIME) && clock_gettime(clock, &now) == 0) {
                double left = at - ((double)now.tv_sec + (double)now.tv_nsec / 1e9);
                out->left = left > 0 ? left : 0;
            }
        } else {
            out->requested = at;
        }
    } else if (name != NULL && strcmp(name, "nanosleep") == 0) {
        out->requested = timespec_at(p, sc->args[0], false);
    } else if (name != NULL && strcmp(name, "select") == 0) {
        out->requested = timespec_at(p, sc->args[4], true);
    } else if (name != NULL && strcmp(name, "pselect6") == 0) {
        out->requested = timespec_at(p, sc->args[4], false);
    } else if (name != NULL && (strcmp(name, "poll") == 0 || strcmp(name, "ppoll") == 0)) {
        out->requested = strcmp(name, "poll") == 0
                             ? ((int)sc->args[2] >= 0 ? (int)sc->args[2] / 1e3 : -1)
                             : timespec_at(p, sc->args[2], false);
    }
}

/* What the system call SC waits on, when it is no futex. */
void waits_read_syscall(struct waits *w, struct proc *p, struct snapshot *s,
                        const struct proc_syscall *sc, struct snap_wait *out, uint64_t *key)
{
    char buf[WAIT_TEXT];
    buf[0] = '\0';
    struct pt_error e = {0};
    size_t n_fds = 0;
    enum proc_sys_class class = proc_syscall_class(sc->nr);
    switch (class) {
    case PROC_SYS_SLEEP:
    case PROC_SYS_PAUSE:
        set_sleep(p, sc, sc->nr, out, key);
        return;
    case PROC_SYS_FD:
        out->kind = SNAP_WAIT_IO;
        out->fd = (int)sc->args[0];
        *key = waits_mix(*key, sc->args[0]);
        describe_fd(w, p, out->fd, buf, sizeof buf);
        break;
    case PROC_SYS_POLL:
    case PROC_SYS_SELECT:
        if (class == PROC_SYS_POLL) {
            poll_fds(w, p, sc, buf, sizeof buf, &n_fds);
        } else {
            select_fds(w, p, sc, buf, sizeof buf, &n_fds);
        }
        /* With no descriptor to watch, poll and select are sleeps. */
        if (n_fds == 0) {
            set_sleep(p, sc, sc->nr, out, key);
            return;
        }
        out->kind = SNAP_WAIT_IO;
        break;
    case PROC_SYS_EPOLL: {
        int fds[WAIT_FDS];
        size_t n = 0;
        out->kind = SNAP_WAIT_IO;
        out->fd = (int)sc->args[0];
        int rc = proc_epoll_fds(p, out->fd, fds, WAIT_FDS, &n, &e);
        if (rc == 0 || e.code == PT_E_LIMIT) {
            describe_fds(w, p, fds, n, rc < 0, buf, sizeof buf);
        }
        break;
    }
    case PROC_SYS_CHILD:
        out->kind = SNAP_WAIT_IO;
        if ((int64_t)sc->args[0] > 0) {
            snprintf(buf, sizeof buf, "child %lld", (long long)sc->args[0]);
        } else {
            snprintf(buf, sizeof buf, "a child");
        }
        break;
    default:
        out->kind = SNAP_WAIT_UNKNOWN;
        out->reason = waits_text(s, "a system call pytop does not interpret");
        return;
    }
    if (buf[0] != '\0') {
        out->object = waits_text(s, buf);
        *key = waits_mix_str(*key, out->object);
    }
}
