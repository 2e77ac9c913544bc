/* proc_fixture: the children test_proc and test_proc_read read, and what each test gets. */
#ifndef PYTOP_TESTS_UNIT_PROC_FIXTURE_H
#define PYTOP_TESTS_UNIT_PROC_FIXTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/util/error.h"
#include "core/target/proc.h"

enum {
    BUF_SIZE = 1 << 16,
    MAX_CHILDREN = 4,
    SPINNERS = 4,   /* threads of the spinning child: its main thread and 3 pthreads */
    WAIT_MS = 5000, /* longest wait for a child to reach a state */
    FD_SCAN = 1024, /* fds looked at when counting our open ones */
    SKIPPED = 77,   /* what a check in a child returns when it may not run here */
};

/* What each test gets: memory laid out before fork(), so a child has it at the same address,
 * and the children to kill afterwards. */
struct fixture {
    unsigned char *buf;  /* children fill it with pattern(); it stays zero here */
    unsigned char *hole; /* three pages, the middle one unmapped */
    size_t page;
    volatile uint64_t *spins; /* shared: one counter per spinning thread */
    int ready[2];             /* a child writes a byte here once it is set up */
    pid_t children[MAX_CHILDREN];
    size_t nchildren;
    struct proc *proc;
};

unsigned char pattern(size_t i);
uint64_t addr_of(const volatile void *ptr);
void signal_ready(struct fixture *f);
/* Forks a child that runs BODY (which never returns) and waits until it says it is ready. */
pid_t spawn(struct fixture *f, void (*body)(struct fixture *));
void fill_body(struct fixture *f);
void spin_body(struct fixture *f);
/* Starts a parked thread, which the caller cancels and joins. Returns its id, or 0. */
pid_t start_parked(pthread_t *th);
/* How many fds this process has open, found without opening anything. */
int count_fds(void);
/* An fd other than OTHER that this process has open on /proc/PID/task/TID/stat, or -1. */
int stat_fd_of(pid_t pid, pid_t tid, int other);
struct proc *open_child(struct fixture *f, pid_t pid);
void expect_error(int rc, const struct pt_error *err, enum pt_errcode code);
/* Runs CHECK(F, ARG) in a child. Returns its exit status: 0, SKIPPED, or the failed check. */
int run_in_child(struct fixture *f, int (*check)(struct fixture *, pid_t), pid_t arg);
/* Makes system calls A and B fail with EPERM from now on, as seccomp does in some containers. */
bool refuse_syscalls(unsigned a, unsigned b);
/* Every test gets a fixture; teardown kills the children a test started, even one that failed
 * half-way. */
struct CMUnitTest;
void with_fixture(struct CMUnitTest *tests, size_t n);

#endif
