/* proc_linux: the proc module on Linux: memory through process_vm_readv (or /proc/PID/mem),
 * threads, maps and files through /proc; proc_pause.c stops and resumes the threads. */
#include "config.h" /* defines _GNU_SOURCE, which process_vm_readv() needs */

#include "core/target/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/target/proc_batch.h"
#include "core/target/proc_linux.h"

/* Where proc_exec_check() reads: address 0xfffffffffffff000 (open_image()). */
static const off_t IMAGE_PROBE_OFFSET = -4096;

enum {
    STAT_BYTES = 2048, /* one stat line: 52 numbers and a comm of at most 64 bytes */
    MAPS_FIRST_BYTES = 1 << 16,
    STAT_FD_STALE = 4, /* times the cache size: calls after which an unread stat fd may go */
};

/* Where a batch read has got to: region I, of which DONE bytes are copied. */
struct batch_pos {
    size_t i;
    size_t done;
};

/* Reads until EOF or SIZE bytes; retries EINTR. Returns the length, or -1 with errno set. */
static ssize_t read_all(int fd, char *buf, size_t size)
{
    size_t len = 0;
    while (len < size) {
        ssize_t got = read(fd, buf + len, size - len);
        if (got == 0 || (got < 0 && errno != EINTR)) {
            return got < 0 ? -1 : (ssize_t)len;
        }
        len += got > 0 ? (size_t)got : 0;
    }
    return (ssize_t)len;
}

static void fd_cache_close(struct fd_cache *c);

static int open_task_file(pid_t pid, pid_t tid, const char *file)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Reads an open per-thread file from its start, in one pread(): the kernel makes the whole
 * text at once. Returns its length, or -1 with errno set (ESRCH once the thread is gone). */
static ssize_t read_task_fd(int fd, char *buf, size_t size)
{
    ssize_t len;
    do {
        len = pread(fd, buf, size, 0);
    } while (len < 0 && errno == EINTR);
    if (len <= 0) {
        errno = len == 0 ? ESRCH : errno;
        return -1;
    }
    return len;
}

/* Reads /proc/PID/task/TID/FILE once. Returns its length, or -1 with errno set (ENOENT or
 * ESRCH when the thread is gone). */
static ssize_t read_task_file(pid_t pid, pid_t tid, const char *file, char *buf, size_t size)
{
    int fd = open_task_file(pid, tid, file);
    if (fd < 0) {
        return -1;
    }
    ssize_t len = read_task_fd(fd, buf, size);
    int saved = errno;
    close(fd);
    errno = saved;
    return len;
}

static int parse_stat(const char *buf, ssize_t len, struct proc_task_stat *st)
{
    if (len < 0) {
        return -1;
    }
    if (proc_stat_parse(buf, (size_t)len, st, NULL) < 0) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int proc_linux_read_stat(pid_t pid, pid_t tid, struct proc_task_stat *st)
{
    char buf[STAT_BYTES];
    return parse_stat(buf, read_task_file(pid, tid, "stat", buf, sizeof buf), st);
}

/* True when PID no longer runs: no such process, or only its zombie is left. A zombie keeps
 * /proc/PID, but its memory is gone. */
static bool process_is_gone(pid_t pid)
{
    if (kill(pid, 0) < 0 && errno == ESRCH) {
        return true;
    }
    struct proc_task_stat st;
    if (proc_linux_read_stat(pid, pid, &st) < 0) {
        return errno == ENOENT || errno == ESRCH;
    }
    return st.state == 'Z' || st.state == 'X';
}

/* Names what went wrong opening or reading WHAT (a /proc file of P). Returns -1. */
static int proc_file_failed(const struct proc *p, int e, const char *what, struct pt_error *err)
{
    if (e == ESRCH || (e == ENOENT && process_is_gone(p->pid))) {
        return pt_error_set(err, PT_E_GONE, e, "process %d exited", (int)p->pid);
    }
    if (e == EPERM || e == EACCES) {
        return pt_error_set(err, PT_E_PERM, e, "not allowed to read the %s of process %d", what,
                            (int)p->pid);
    }
    return pt_error_set(err, PT_E_IO, e, "cannot read the %s of process %d: %s", what, (int)p->pid,
                        strerror(e));
}

/* Opens /proc/PID/NAME. Returns the fd, or -1 naming the problem. */
static int open_proc_file(const struct proc *p, const char *name, struct pt_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)p->pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return proc_file_failed(p, errno, name, err);
    }
    return fd;
}

/* /proc/PID/mem holds on to the memory of the image it was opened in, not to the process:
 * once the process exec()s, that memory is freed and a read returns 0 bytes (fs/proc/base.c,
 * mem_rw(): mmget_not_zero() fails before any address is looked at), whereas a live image
 * answers EIO for an address no mapping holds. The file is left at the top page of the
 * address space, the kernel's half, where no target can map anything (nor make the read wait
 * on a page fault); pread() would refuse that offset as negative, read() takes it
 * (FMODE_UNSIGNED_OFFSET), and a failed read leaves it there. -1 when it cannot be opened
 * (then an exec is not noticed this way). */
static int open_image(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && lseek(fd, IMAGE_PROBE_OFFSET, SEEK_SET) != IMAGE_PROBE_OFFSET) {
        close(fd);
        return -1;
    }
    return fd;
}

struct proc *proc_open(pid_t pid, struct pt_error *err)
{
    char path[64];
    struct stat sb;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (pid <= 0 || stat(path, &sb) < 0) {
        pt_error_set(err, PT_E_NOPROC, pid <= 0 ? ESRCH : errno, "no process with PID %d",
                     (int)pid);
        return NULL;
    }
    struct proc *p = calloc(1, sizeof *p);
    struct iovec *iovs = malloc(2 * (size_t)PROC_IOV_MAX * sizeof *iovs);
    if (p == NULL || iovs == NULL) {
        free(p);
        free(iovs);
        pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for process %d", (int)pid);
        return NULL;
    }
    p->local = iovs;
    p->remote = iovs + PROC_IOV_MAX;
    p->pid = pid;
    p->mem_fd = -1;
    p->image_fd = open_image(pid);
    /* Cached stat, schedstat and syscall fds stay open: leave half of what pytop may open
     * for everything else. */
    struct rlimit rl;
    p->stat_cache.file = "stat";
    p->sched_cache.file = "schedstat";
    p->syscall_cache.file = "syscall";
    p->max_stat_fds = LIMIT_THREADS;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur / 6 < LIMIT_THREADS) {
        p->max_stat_fds = (size_t)rl.rlim_cur / 6;
    }
    p->batch = proc_batch_new(); /* NULL: reads are not merged, nor read ahead */
    return p;
}

struct proc_batch *proc_backend_batch(const struct proc *p)
{
    return p->batch;
}

void proc_close(struct proc *p)
{
    if (p == NULL) {
        return;
    }
    proc_resume(p);
    if (p->mem_fd >= 0) {
        close(p->mem_fd);
    }
    if (p->image_fd >= 0) {
        close(p->image_fd);
    }
    fd_cache_close(&p->stat_cache);
    fd_cache_close(&p->sched_cache);
    fd_cache_close(&p->syscall_cache);
    fd_cache_close(&p->syscall_cache);
    proc_maps_free(p->maps, p->nmaps);
    proc_linux_pause_free(p->pause);
    proc_batch_free(p->batch);
    free(p->local);
    free(p);
}

int proc_exec_check(struct proc *p, struct pt_error *err)
{
    uint8_t byte;
    ssize_t got;
    if (p->image_fd < 0) {
        return 0;
    }
    do {
        got = read(p->image_fd, &byte, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 0) {
        return 0;
    }
    if (process_is_gone(p->pid)) {
        return proc_file_failed(p, ESRCH, "memory", err);
    }
    return 1;
}

int proc_reopen(struct proc *p, struct pt_error *err)
{
    proc_resume(p);
    int fd = open_image(p->pid);
    if (fd < 0) {
        return proc_file_failed(p, errno, "mem", err);
    }
    if (p->image_fd >= 0) {
        close(p->image_fd);
    }
    p->image_fd = fd;
    if (p->mem_fd >= 0) {
        close(p->mem_fd);
        p->mem_fd = -1;
    }
    p->use_mem = false;
    /* The threads are new (an exec leaves one), and what was read ahead is of the old image. */
    fd_cache_close(&p->stat_cache);
    fd_cache_close(&p->sched_cache);
    proc_maps_free(p->maps, p->nmaps);
    p->maps = NULL;
    p->nmaps = 0;
    proc_batch_free(p->batch);
    p->batch = proc_batch_new();
    return 0;
}

pid_t proc_pid(const struct proc *p)
{
    return p->pid;
}

struct proc_counters proc_get_counters(const struct proc *p)
{
    return p->counters;
}

long proc_clock_ticks(void)
{
    long ticks = sysconf(_SC_CLK_TCK);
    return ticks > 0 ? ticks : 100;
}

/* Names why region R could not be read, telling a bad address from a vanished process. */
static int read_failed(const struct proc *p, int e, const struct proc_iov *r, struct pt_error *err)
{
    bool gone = e == ESRCH || process_is_gone(p->pid);
    if (gone || e == EPERM || e == EACCES) {
        return proc_file_failed(p, gone ? ESRCH : e, "memory", err);
    }
    return pt_error_set(err, PT_E_READ, e, "cannot read %zu bytes at 0x%" PRIx64, r->len, r->addr);
}

/* Moves POS on by BYTES, past regions that are complete (or empty). */
static void batch_advance(const struct proc_iov *iov, size_t n, struct batch_pos *pos, size_t bytes)
{
    while (pos->i < n) {
        size_t left = iov[pos->i].len - pos->done;
        if (bytes < left) {
            pos->done += bytes;
            return;
        }
        bytes -= left;
        pos->i++;
        pos->done = 0;
    }
}

/* Reads from POS on with process_vm_readv, which stops at the first region it cannot read and
 * returns how far it got: go on from there, and a region that really cannot be read fails on
 * its own. Returns 0, -1, or 1 when the call is refused and /proc/PID/mem must do instead. */
static int read_vm(struct proc *p, const struct proc_iov *iov, size_t n, struct batch_pos *pos,
                   struct pt_error *err)
{
    while (pos->i < n) {
        int cnt = 0;
        for (size_t j = pos->i; j < n; j++) {
            size_t skip = j == pos->i ? pos->done : 0;
            size_t left = iov[j].len - skip;
            if (left == 0) {
                continue;
            }
            p->local[cnt] = (struct iovec){(char *)iov[j].dst + skip, left};
            p->remote[cnt++] = (struct iovec){(void *)(uintptr_t)(iov[j].addr + skip), left};
        }
        ssize_t got = process_vm_readv(p->pid, p->local, (unsigned long)cnt, p->remote,
                                       (unsigned long)cnt, 0);
        p->counters.syscalls++;
        if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
            p->use_mem = true;
            return 1;
        }
        if (got <= 0) {
            return read_failed(p, got < 0 ? errno : EFAULT, &iov[pos->i], err);
        }
        p->counters.bytes += (uint64_t)got;
        batch_advance(iov, n, pos, (size_t)got);
    }
    return 0;
}

/* Reads from POS on with pread on /proc/PID/mem, one region at a time. */
static int read_mem(struct proc *p, const struct proc_iov *iov, size_t n, struct batch_pos *pos,
                    struct pt_error *err)
{
    if (p->mem_fd < 0 && (p->mem_fd = open_proc_file(p, "mem", err)) < 0) {
        return -1;
    }
    while (pos->i < n) {
        const struct proc_iov *r = &iov[pos->i];
        ssize_t got = pread(p->mem_fd, (char *)r->dst + pos->done, r->len - pos->done,
                            (off_t)(r->addr + pos->done));
        p->counters.syscalls++;
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return read_failed(p, got < 0 ? errno : EIO, r, err);
        }
        p->counters.bytes += (uint64_t)got;
        batch_advance(iov, n, pos, (size_t)got);
    }
    return 0;
}

int proc_backend_read(struct proc *p, const struct proc_iov *iov, size_t n, struct pt_error *err)
{
    struct batch_pos pos = {0, 0};
    batch_advance(iov, n, &pos, 0);
    if (!p->use_mem) {
        int rc = read_vm(p, iov, n, &pos, err);
        if (rc <= 0) {
            return rc;
        }
    }
    return read_mem(p, iov, n, &pos, err);
}

/* Reads all of /proc/PID/NAME, up to LIMIT bytes, into a new buffer the caller frees. */
static int slurp_proc_file(const struct proc *p, const char *name, size_t limit, char **out,
                           size_t *out_len, struct pt_error *err)
{
    int fd = open_proc_file(p, name, err);
    if (fd < 0) {
        return -1;
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = 1;
    for (size_t cap = MAPS_FIRST_BYTES; rc > 0; cap = cap * 2 < limit ? cap * 2 : limit) {
        char *grown = realloc(buf, cap + 1); /* a spare byte: reading it shows there is more */
        ssize_t got = grown != NULL ? read_all(fd, grown + len, cap + 1 - len) : 0;
        buf = grown != NULL ? grown : buf;
        len += got > 0 ? (size_t)got : 0;
        if (grown == NULL) {
            rc = pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for the %s of process %d", name,
                              (int)p->pid);
        } else if (got < 0) {
            rc = proc_file_failed(p, errno, name, err);
        } else if (len > limit) {
            rc = pt_error_set(err, PT_E_LIMIT, 0, "the %s of process %d are over %zu bytes", name,
                              (int)p->pid, limit);
        } else if (len <= cap) {
            rc = 0;
        }
    }
    close(fd);
    if (rc < 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

int proc_maps(struct proc *p, const struct proc_map **maps, size_t *n, struct pt_error *err)
{
    char *text;
    size_t len;
    if (slurp_proc_file(p, "maps", LIMIT_MAPS_BYTES, &text, &len, err) < 0) {
        return -1;
    }
    proc_maps_free(p->maps, p->nmaps);
    p->nmaps = 0;
    int rc = proc_maps_parse(text, len, &p->maps, &p->nmaps, err);
    free(text);
    if (rc < 0) {
        p->maps = NULL;
        return pt_error_prefix(err, "maps of process %d", (int)p->pid);
    }
    *maps = p->maps;
    *n = p->nmaps;
    return 0;
}

/* Parses a directory entry name as a thread id: decimal, positive, fits a pid_t. */
static bool parse_tid(const char *name, pid_t *tid)
{
    int v = 0;
    for (const char *s = name; *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || v > (INT_MAX - (*s - '0')) / 10) {
            return false;
        }
        v = v * 10 + (*s - '0');
    }
    *tid = v;
    return v > 0;
}

int proc_linux_compare_pids(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a;
    pid_t y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

size_t proc_thread_count(struct proc *p)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)p->pid);
    struct stat st;
    if (stat(path, &st) != 0 || st.st_nlink < 3) {
        return 0;
    }
    return (size_t)st.st_nlink - 2;
}

int proc_tasks(struct proc *p, pid_t *tids, size_t max, size_t *n, struct pt_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)p->pid);
    DIR *dir = opendir(path);
    if (dir == NULL) {
        return proc_file_failed(p, errno, "task list", err);
    }
    size_t cap = max < LIMIT_TASKS ? max : LIMIT_TASKS;
    size_t count = 0;
    int rc = 0;
    struct dirent *de;
    errno = 0; /* nothing in the loop sets it but readdir (and the error that ends it) */
    while (rc == 0 && (de = readdir(dir)) != NULL) {
        pid_t tid;
        if (!parse_tid(de->d_name, &tid)) {
            continue;
        }
        if (count == cap) {
            rc = pt_error_set(err, PT_E_LIMIT, 0, "process %d has more than %zu threads",
                              (int)p->pid, cap);
        } else {
            tids[count++] = tid;
        }
    }
    if (rc == 0 && errno != 0) {
        rc = proc_file_failed(p, errno, "task list", err);
    }
    closedir(dir);
    if (rc < 0) {
        return -1;
    }
    qsort(tids, count, sizeof *tids, proc_linux_compare_pids);
    *n = count;
    return 0;
}

/* Where TID is, or would go, among C's fds. */
static size_t fd_slot(const struct fd_cache *c, pid_t tid)
{
    size_t lo = 0;
    size_t hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->fds[mid].tid < tid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void drop_fd(struct fd_cache *c, size_t i)
{
    close(c->fds[i].fd);
    c->n--;
    memmove(&c->fds[i], &c->fds[i + 1], (c->n - i) * sizeof *c->fds);
}

static void fd_cache_close(struct fd_cache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        close(c->fds[i].fd);
    }
    free(c->fds);
    c->fds = NULL;
    c->n = 0;
}

/* Makes room to cache one more fd. A thread that exited is never asked about again, so when
 * the cache is full the fd read longest ago goes, if no call has read it for a while. Returns
 * false when every cached fd is in use (more threads than fds to keep) or there is no memory:
 * then the caller reads without caching. */
static bool make_fd_room(struct fd_cache *c, size_t max)
{
    if (c->fds == NULL && max > 0) {
        /* Only fds[0..n) is ever read: uncleared, the pages past the threads seen stay free. */
        c->fds = malloc(max * sizeof *c->fds);
    }
    if (c->fds == NULL || c->n < max) {
        return c->fds != NULL;
    }
    size_t oldest = 0;
    for (size_t i = 1; i < c->n; i++) {
        if (c->fds[i].used < c->fds[oldest].used) {
            oldest = i;
        }
    }
    if (c->calls - c->fds[oldest].used <= STAT_FD_STALE * max) {
        return false;
    }
    drop_fd(c, oldest);
    return true;
}

/* Reads TID's file of cache C through its cached fd, or opens the file and caches the fd. A
 * cached fd that fails is dropped and the file opened afresh: the kernel binds an fd to the
 * thread it was opened for, and once that thread exits it fails with ESRCH, even after a new
 * thread has taken the id. Returns the length, or -1 with errno set as read_task_file(). */
static ssize_t read_cached(struct proc *p, struct fd_cache *c, pid_t tid, char *buf, size_t size)
{
    uint64_t now = ++c->calls;
    size_t i = fd_slot(c, tid);
    if (i < c->n && c->fds[i].tid == tid) {
        c->fds[i].used = now;
        ssize_t len = read_task_fd(c->fds[i].fd, buf, size);
        if (len >= 0) {
            return len;
        }
        drop_fd(c, i);
    }
    if (!make_fd_room(c, p->max_stat_fds)) {
        return read_task_file(p->pid, tid, c->file, buf, size);
    }
    int fd = open_task_file(p->pid, tid, c->file);
    ssize_t len = fd >= 0 ? read_task_fd(fd, buf, size) : -1;
    if (len < 0) {
        int saved = errno;
        if (fd >= 0) {
            close(fd);
        }
        errno = saved;
        return -1;
    }
    i = fd_slot(c, tid);
    memmove(&c->fds[i + 1], &c->fds[i], (c->n - i) * sizeof *c->fds);
    c->fds[i] = (struct stat_fd){.tid = tid, .fd = fd, .used = now};
    c->n++;
    return len;
}

static int read_task_stat(struct proc *p, pid_t tid, struct proc_task_stat *st)
{
    char buf[STAT_BYTES];
    return parse_stat(buf, read_cached(p, &p->stat_cache, tid, buf, sizeof buf), st);
}

/* The thread's errno from a failed read as the error a caller sees. */
static int task_failed(struct proc *p, pid_t tid, int e, const char *what, struct pt_error *err)
{
    if (e == ENOENT || e == ESRCH) {
        return pt_error_set(err, PT_E_GONE, e, "thread %d of process %d exited", (int)tid,
                            (int)p->pid);
    }
    if (e == EINVAL) {
        return pt_error_set(err, PT_E_FORMAT, 0, "malformed %s of thread %d of process %d", what,
                            (int)tid, (int)p->pid);
    }
    return proc_file_failed(p, e, what, err);
}

int proc_task_cputime(struct proc *p, pid_t tid, uint64_t *ns, struct pt_error *err)
{
    char buf[256];
    ssize_t len = read_cached(p, &p->sched_cache, tid, buf, sizeof buf - 1);
    if (len < 0) {
        return task_failed(p, tid, errno, "thread schedstat", err);
    }
    /* "RUN_NS WAIT_NS TIMESLICES\n" (Documentation/scheduler/sched-stats.rst). */
    buf[len] = '\0';
    uint64_t v = 0;
    ssize_t i = 0;
    for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, buf[i] - '0', &v)) {
            return task_failed(p, tid, EINVAL, "thread schedstat", err);
        }
    }
    if (i == 0 || (i < len && buf[i] != ' ')) {
        return task_failed(p, tid, EINVAL, "thread schedstat", err);
    }
    *ns = v;
    return 0;
}

int proc_task_stat(struct proc *p, pid_t tid, struct proc_task_stat *st, struct pt_error *err)
{
    if (read_task_stat(p, tid, st) == 0) {
        return 0;
    }
    return task_failed(p, tid, errno, "thread stat", err);
}

ssize_t proc_task_syscall_text(struct proc *p, pid_t tid, char *buf, size_t size)
{
    return read_cached(p, &p->syscall_cache, tid, buf, size);
}

int proc_age(struct proc *p, double *seconds, struct pt_error *err)
{
    struct proc_task_stat st;
    struct timespec boot;
    if (proc_linux_read_stat(p->pid, p->pid, &st) < 0) {
        return proc_file_failed(p, errno == EINVAL ? EIO : errno, "stat", err);
    }
    /* The start time counts clock ticks from boot, as CLOCK_BOOTTIME does (proc(5)). */
    if (clock_gettime(CLOCK_BOOTTIME, &boot) < 0) {
        return pt_error_set(err, PT_E_IO, errno, "no boot-time clock: %s", strerror(errno));
    }
    double now = (double)boot.tv_sec + (double)boot.tv_nsec / 1e9;
    double age = now - (double)st.start_time / (double)proc_clock_ticks();
    *seconds = age > 0 ? age : 0;
    return 0;
}

int proc_open_file(struct proc *p, const char *path, struct pt_error *err)
{
    char full[PATH_MAX];
    /* A relative path is the target's own, from its working directory (a script started as
     * `python app.py` has code objects named "app.py"). */
    int w = path[0] == '/' ? snprintf(full, sizeof full, "/proc/%d/root%s", (int)p->pid, path)
                           : snprintf(full, sizeof full, "/proc/%d/cwd/%s", (int)p->pid, path);
    if (w < 0 || (size_t)w >= sizeof full) {
        return pt_error_set(err, PT_E_IO, ENAMETOOLONG, "path too long: %.64s...", path);
    }
    /* O_NONBLOCK: a target could put a FIFO where a mapped file was; opening that must not
     * hang pytop. Only regular files are handed out, so the flag changes nothing else. */
    int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        return proc_file_failed(p, errno, path, err);
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return pt_error_set(err, PT_E_IO, EINVAL, "not a regular file: %s", path);
    }
    return fd;
}

int proc_cmdline(struct proc *p, char *buf, size_t size, struct pt_error *err)
{
    if (size == 0) {
        return pt_error_set(err, PT_E_LIMIT, 0, "no room for a command line");
    }
    buf[0] = '\0';
    int fd = open_proc_file(p, "cmdline", err);
    if (fd < 0) {
        return -1;
    }
    ssize_t len = read_all(fd, buf, size - 1);
    int e = errno;
    close(fd);
    if (len < 0) {
        return proc_file_failed(p, e, "cmdline", err);
    }
    for (ssize_t i = 0; i < len; i++) {
        if (buf[i] == '\0') {
            buf[i] = ' ';
        }
    }
    while (len > 0 && buf[len - 1] == ' ') {
        len--;
    }
    buf[len] = '\0';
    return 0;
}

int proc_argv(struct proc *p, char *buf, size_t size, size_t *len, bool *cut, struct pt_error *err)
{
    *len = 0;
    *cut = false;
    int fd = open_proc_file(p, "cmdline", err);
    if (fd < 0) {
        return -1;
    }
    ssize_t got = read_all(fd, buf, size);
    char more;
    ssize_t extra = got >= 0 && (size_t)got == size ? read_all(fd, &more, 1) : 0;
    int e = errno;
    close(fd);
    if (got < 0 || extra < 0) {
        return proc_file_failed(p, e, "cmdline", err);
    }
    *len = (size_t)got;
    *cut = extra > 0;
    return 0;
}

int proc_started(struct proc *p, double *epoch, struct pt_error *err)
{
    struct proc_task_stat st;
    struct timespec real;
    struct timespec boot;
    if (proc_linux_read_stat(p->pid, p->pid, &st) < 0) {
        return proc_file_failed(p, errno == EINVAL ? EIO : errno, "stat", err);
    }
    if (clock_gettime(CLOCK_REALTIME, &real) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0) {
        return pt_error_set(err, PT_E_IO, errno, "no clock: %s", strerror(errno));
    }
    /* The start time counts clock ticks from boot (proc(5)); boot was REAL - BOOT ago. Rounded
     * to the tick, so that two reads a few microseconds apart give the same time. */
    double booted =
        (double)(real.tv_sec - boot.tv_sec) + (double)(real.tv_nsec - boot.tv_nsec) / 1e9;
    double hz = (double)proc_clock_ticks();
    double ticks = (booted + (double)st.start_time / hz) * hz;
    *epoch = ticks > 0 ? (double)(long long)(ticks + 0.5) / hz : 0;
    return 0;
}

int proc_exe(struct proc *p, char *buf, size_t size, struct pt_error *err)
{
    char path[64];
    if (size == 0) {
        return pt_error_set(err, PT_E_LIMIT, 0, "no room for an executable path");
    }
    buf[0] = '\0';
    snprintf(path, sizeof path, "/proc/%d/exe", (int)p->pid);
    ssize_t len = readlink(path, buf, size);
    if (len < 0) {
        return proc_file_failed(p, errno, "executable", err);
    }
    if ((size_t)len >= size) {
        buf[0] = '\0';
        return pt_error_set(err, PT_E_LIMIT, 0, "executable path of process %d is over %zu bytes",
                            (int)p->pid, size - 1);
    }
    buf[len] = '\0';
    return 0;
}

