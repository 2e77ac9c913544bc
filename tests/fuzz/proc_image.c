/* proc_image: the proc interface (core/proc.h) over a memory image instead of a process. */
#include "config.h"

#include "proc_image.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/target/proc_batch.h"
#include "image.h"

struct proc {
    struct image im;
    struct proc_batch *batch;
    struct proc_counters counters;
};

struct proc *proc_image_open(const uint8_t *buf, size_t len, const struct image_header **header,
                             struct pt_error *err)
{
    struct proc *p = calloc(1, sizeof *p);
    if (p == NULL) {
        pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for the image");
        return NULL;
    }
    if (image_parse(buf, len, &p->im) < 0) {
        free(p);
        pt_error_set(err, PT_E_FORMAT, 0, "not a memory image");
        return NULL;
    }
    p->batch = proc_batch_new();
    *header = &p->im.h;
    return p;
}

void proc_close(struct proc *p)
{
    if (p != NULL) {
        image_release(&p->im);
        proc_batch_free(p->batch);
        free(p);
    }
}

struct proc *proc_open(pid_t pid, struct pt_error *err)
{
    pt_error_set(err, PT_E_NOPROC, ESRCH, "no process with PID %d (an image has none)", (int)pid);
    return NULL;
}

pid_t proc_pid(const struct proc *p)
{
    return (pid_t)p->im.h.pid;
}

struct proc_counters proc_get_counters(const struct proc *p)
{
    return p->counters;
}

long proc_clock_ticks(void)
{
    return 100;
}

/* The last region that starts at or before ADDR, or NULL. */
static const struct image_region *region_at(const struct image *im, uint64_t addr)
{
    size_t lo = 0;
    size_t hi = im->n_regions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (im->regions[mid].addr <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo > 0 ? &im->regions[lo - 1] : NULL;
}

/* Copies [ADDR, ADDR + LEN) out of the regions that hold it, one after another. */
static int read_one(struct proc *p, const struct proc_iov *r)
{
    uint64_t addr = r->addr;
    size_t done = 0;
    while (done < r->len) {
        const struct image_region *g = region_at(&p->im, addr);
        if (g == NULL || addr - g->addr >= g->len) {
            return -1;
        }
        size_t off = (size_t)(addr - g->addr);
        size_t n = g->len - off < r->len - done ? g->len - off : r->len - done;
        if (g->data != NULL) {
            memcpy((uint8_t *)r->dst + done, g->data + off, n);
        } else {
            memset((uint8_t *)r->dst + done, 0, n);
        }
        done += n;
        addr += n;
    }
    p->counters.bytes += r->len;
    return 0;
}

int proc_backend_read(struct proc *p, const struct proc_iov *iov, size_t n, struct pt_error *err)
{
    p->counters.syscalls++;
    for (size_t i = 0; i < n; i++) {
        if (read_one(p, &iov[i]) < 0) {
            return pt_error_set(err, PT_E_READ, EFAULT, "cannot read %zu bytes at 0x%" PRIx64,
                                iov[i].len, iov[i].addr);
        }
    }
    return 0;
}

struct proc_batch *proc_backend_batch(const struct proc *p)
{
    return p->batch;
}

int proc_maps(struct proc *p, const struct proc_map **maps, size_t *n, struct pt_error *err)
{
    (void)p;
    (void)err;
    *maps = NULL;
    *n = 0;
    return 0;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a;
    pid_t y = *(const pid_t *)b;
    return x < y ? -1 : x > y;
}

int proc_tasks(struct proc *p, pid_t *tids, size_t max, size_t *n, struct pt_error *err)
{
    size_t k = 0;
    for (size_t i = 0; i < p->im.n_threads && k < max; i++) {
        tids[k++] = (pid_t)p->im.threads[i].tid;
    }
    (void)err;
    qsort(tids, k, sizeof *tids, cmp_pid);
    *n = k;
    return 0;
}

size_t proc_thread_count(struct proc *p)
{
    return p->im.n_threads;
}

static const struct image_thread *thread_of(const struct proc *p, pid_t tid)
{
    for (size_t i = 0; i < p->im.n_threads; i++) {
        if ((pid_t)p->im.threads[i].tid == tid) {
            return &p->im.threads[i];
        }
    }
    return NULL;
}

int proc_task_stat(struct proc *p, pid_t tid, struct proc_task_stat *st, struct pt_error *err)
{
    const struct image_thread *t = thread_of(p, tid);
    if (t == NULL) {
        return pt_error_set(err, PT_E_GONE, ESRCH, "thread %d is gone", (int)tid);
    }
    *st = (struct proc_task_stat){.state = t->state, .utime = tid % 7, .stime = tid % 3};
    return 0;
}

int proc_task_cputime(struct proc *p, pid_t tid, uint64_t *ns, struct pt_error *err)
{
    if (thread_of(p, tid) == NULL) {
        return pt_error_set(err, PT_E_GONE, ESRCH, "thread %d is gone", (int)tid);
    }
    *ns = (uint64_t)tid * 1000;
    return 0;
}

/* What each thread waits in, made up from the image so that the waits' reads land in its
 * (mutated) memory: a thread in the running state runs; another waits on a futex in one of the
 * regions (chosen by its tid: a lock object, a parking-lot entry, a GIL among them, as the bytes
 * say), or sleeps on a timespec there. */
ssize_t proc_task_syscall_text(struct proc *p, pid_t tid, char *buf, size_t size)
{
    const struct image_thread *t = thread_of(p, tid);
    if (t == NULL) {
        errno = ESRCH;
        return -1;
    }
    if (t->state == 'R' || p->im.n_regions == 0) {
        return snprintf(buf, size, "running\n");
    }
    const struct image_region *r = &p->im.regions[(size_t)tid % p->im.n_regions];
    uint64_t at = r->addr + (r->len > 64 ? ((uint64_t)tid * 8) % (r->len - 64) : 0);
    int n = tid % 3 == 2 ? snprintf(buf, size, "230 0x1 0x1 %#llx 0x0 0x0 0x0 0x7ffd0 0x7f000\n",
                                    (unsigned long long)at)
                         : snprintf(buf, size, "202 %#llx 0x189 0x0 0x0 0x0 0xffffffff 0x7ffd0 "
                                    "0x7f000\n", (unsigned long long)at);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int proc_age(struct proc *p, double *seconds, struct pt_error *err)
{
    (void)p;
    (void)err;
    *seconds = 1.0;
    return 0;
}

int proc_open_file(struct proc *p, const char *path, struct pt_error *err)
{
    (void)p;
    return pt_error_set(err, PT_E_IO, ENOENT, "an image has no file %s", path);
}

int proc_cmdline(struct proc *p, char *buf, size_t size, struct pt_error *err)
{
    (void)p;
    (void)err;
    snprintf(buf, size, "image");
    return 0;
}

/* An image keeps no command line nor start time: they are unknown. */
int proc_argv(struct proc *p, char *buf, size_t size, size_t *len, bool *cut, struct pt_error *err)
{
    (void)p;
    (void)buf;
    (void)size;
    *len = 0;
    *cut = false;
    return pt_error_set(err, PT_E_IO, ENOENT, "an image has no command line");
}

int proc_started(struct proc *p, double *epoch, struct pt_error *err)
{
    (void)p;
    *epoch = -1;
    return pt_error_set(err, PT_E_IO, ENOENT, "an image has no start time");
}

int proc_exe(struct proc *p, char *buf, size_t size, struct pt_error *err)
{
    (void)p;
    (void)err;
    snprintf(buf, size, "/image/python");
    return 0;
}

/* An image never exec()s. */
int proc_exec_check(struct proc *p, struct pt_error *err)
{
    (void)p;
    (void)err;
    return 0;
}

int proc_reopen(struct proc *p, struct pt_error *err)
{
    (void)p;
    return pt_error_set(err, PT_E_IO, 0, "a memory image cannot be reopened");
}

int proc_pause(struct proc *p, struct pt_error *err)
{
    (void)p;
    (void)err;
    return 0;
}

void proc_resume(struct proc *p)
{
    (void)p;
}
