/* proc_fixture: the children test_proc and test_proc_read read, and what each test gets. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/target/proc.h"
#include "proc_fixture.h"

unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 7 + 3);
}

uint64_t addr_of(const volatile void *ptr)
{
    return (uint64_t)(uintptr_t)ptr;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->page = (size_t)sysconf(_SC_PAGESIZE);
    f->buf = calloc(1, BUF_SIZE);
    f->hole = mmap(NULL, 3 * f->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    f->spins = mmap(NULL, f->page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_non_null(f->buf);
    assert_true(f->hole != MAP_FAILED && f->spins != MAP_FAILED);
    assert_int_equal(munmap(f->hole + f->page, f->page), 0);
    assert_int_equal(pipe(f->ready), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    proc_close(f->proc); /* first: it detaches from a paused child */
    for (size_t i = 0; i < f->nchildren; i++) {
        if (f->children[i] > 0) {
            kill(f->children[i], SIGKILL);
        }
    }
    /* __WALL also reaps threads left traced by a failed pause, which their process waits for. */
    while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR) {
        continue;
    }
    close(f->ready[0]);
    close(f->ready[1]);
    munmap(f->hole, f->page);
    munmap(f->hole + 2 * f->page, f->page);
    munmap((void *)f->spins, f->page);
    free(f->buf);
    free(f);
    return 0;
}

void signal_ready(struct fixture *f)
{
    if (write(f->ready[1], "x", 1) != 1) {
        _exit(2);
    }
}

pid_t spawn(struct fixture *f, void (*body)(struct fixture *))
{
    assert_true(f->nchildren < MAX_CHILDREN);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        body(f);
        _exit(0);
    }
    f->children[f->nchildren++] = pid;
    struct pollfd pfd = {.fd = f->ready[0], .events = POLLIN};
    char byte;
    assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
    assert_int_equal(read(f->ready[0], &byte, 1), 1);
    return pid;
}

void fill_body(struct fixture *f)
{
    for (size_t i = 0; i < BUF_SIZE; i++) {
        f->buf[i] = pattern(i);
    }
    signal_ready(f);
    for (;;) {
        pause();
    }
}

static void *spin_thread(void *arg)
{
    volatile uint64_t *counter = arg;
    for (;;) {
        (*counter)++;
    }
    return NULL;
}

void spin_body(struct fixture *f)
{
    pthread_t t;
    for (int i = 1; i < SPINNERS; i++) {
        if (pthread_create(&t, NULL, spin_thread, (void *)(f->spins + i)) != 0) {
            _exit(3);
        }
    }
    signal_ready(f);
    spin_thread((void *)f->spins);
}

/* A thread that stores its id in *ARG, then sleeps until cancelled. */
static void *park(void *arg)
{
    *(volatile pid_t *)arg = (pid_t)syscall(SYS_gettid);
    for (;;) {
        pause();
    }
    return NULL;
}

pid_t start_parked(pthread_t *th)
{
    volatile pid_t tid = 0;
    if (pthread_create(th, NULL, park, (void *)&tid) != 0) {
        return 0;
    }
    for (int ms = 0; ms < WAIT_MS && tid == 0; ms++) {
        usleep(1000);
    }
    return tid;
}

int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < FD_SCAN; fd++) {
        n += fcntl(fd, F_GETFD) >= 0;
    }
    return n;
}

int stat_fd_of(pid_t pid, pid_t tid, int other)
{
    char want[64];
    snprintf(want, sizeof want, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    for (int fd = 0; fd < FD_SCAN; fd++) {
        char link[64];
        char target[64] = "";
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        if (fd != other && readlink(link, target, sizeof target - 1) > 0 &&
            strcmp(target, want) == 0) {
            return fd;
        }
    }
    return -1;
}

struct proc *open_child(struct fixture *f, pid_t pid)
{
    struct pt_error err = {0};
    f->proc = proc_open(pid, &err);
    assert_non_null(f->proc);
    return f->proc;
}

void expect_error(int rc, const struct pt_error *err, enum pt_errcode code)
{
    assert_int_equal(rc, -1);
    assert_string_equal(pt_error_name(err->code), pt_error_name(code));
}

int run_in_child(struct fixture *f, int (*check)(struct fixture *, pid_t), pid_t arg)
{
    int status;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(check(f, arg));
    }
    f->children[f->nchildren++] = pid;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    f->children[f->nchildren - 1] = 0;
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

bool refuse_syscalls(unsigned a, unsigned b)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, a, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, b, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

void with_fixture(struct CMUnitTest *tests, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tests[i].setup_func = setup;
        tests[i].teardown_func = teardown;
    }
}
