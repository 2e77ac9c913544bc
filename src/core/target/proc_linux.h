/* proc_linux: what the Linux proc backend's files share (proc_linux.c reads memory and /proc,
 * proc_pause.c stops and resumes the target's threads). Not for the rest of the core: it sees
 * only core/proc.h. */
#ifndef PYTOP_CORE_PROC_LINUX_H
#define PYTOP_CORE_PROC_LINUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/target/proc.h"

struct pause_state;

/* An open /proc/PID/task/TID/FILE, kept so that reading the thread again costs one pread(). */
struct stat_fd {
    pid_t tid;
    int fd;
    uint64_t used; /* the read that last used it */
};

/* The open files of one kind (stat, schedstat), sorted by tid. */
struct fd_cache {
    const char *file;
    struct stat_fd *fds; /* allocated by the first read */
    size_t n;
    uint64_t calls;
};

struct proc {
    pid_t pid;
    int mem_fd;   /* /proc/PID/mem, opened on first need */
    int image_fd; /* /proc/PID/mem opened with the handle: reads EOF once that image is gone */
    bool use_mem; /* process_vm_readv was refused (ENOSYS, or EPERM under seccomp) */
    struct proc_counters counters;
    struct proc_map *maps; /* from the last proc_maps() */
    size_t nmaps;
    bool paused;
    struct pause_state *pause; /* allocated by the first proc_pause() */
    struct fd_cache stat_cache;  /* the threads' stat files */
    struct fd_cache sched_cache; /* their schedstat files */
    struct fd_cache syscall_cache; /* their syscall files (what each waits for) */
    size_t max_stat_fds; /* per cache: LIMIT_THREADS, or a sixth of the files pytop may open */
    /* PROC_IOV_MAX each, not zeroed: a call fills what it uses (a one-shot dump pays a page
     * fault for each page touched, and a zeroed 32 KiB would be eight for a few entries) */
    struct iovec *local;
    struct iovec *remote;
    struct proc_batch *batch; /* merging and read-ahead; NULL when memory ran out */
};

/* Reads /proc/PID/task/TID/stat into ST. Returns 0, or -1 with errno set. */
int proc_linux_read_stat(pid_t pid, pid_t tid, struct proc_task_stat *st);

/* Orders pid_t values (and structs that start with one) for qsort() and bsearch(). */
int proc_linux_compare_pids(const void *a, const void *b);

/* Releases what proc_pause() set up (NULL: nothing). The threads must be resumed. */
void proc_linux_pause_free(struct pause_state *ps);

#endif
