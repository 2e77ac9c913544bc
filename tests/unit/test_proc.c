/* test_proc: reading, listing and pausing real child processes, and their threads. */
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

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 7 + 3);
}

static uint64_t addr_of(const volatile void *ptr)
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

static void signal_ready(struct fixture *f)
{
    if (write(f->ready[1], "x", 1) != 1) {
        _exit(2);
    }
}

/* Forks a child that runs BODY (which never returns) and waits until it says it is ready. */
static pid_t spawn(struct fixture *f, void (*body)(struct fixture *))
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

static void fill_body(struct fixture *f)
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

static void spin_body(struct fixture *f)
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

/* Starts a parked thread, which the caller cancels and joins. Returns its id, or 0. */
static pid_t start_parked(pthread_t *th)
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

/* How many fds this process has open, found without opening anything. */
static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < FD_SCAN; fd++) {
        n += fcntl(fd, F_GETFD) >= 0;
    }
    return n;
}

/* An fd other than OTHER that this process has open on /proc/PID/task/TID/stat, or -1. */
static int stat_fd_of(pid_t pid, pid_t tid, int other)
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

static struct proc *open_child(struct fixture *f, pid_t pid)
{
    struct pt_error err = {0};
    f->proc = proc_open(pid, &err);
    assert_non_null(f->proc);
    return f->proc;
}

static void expect_error(int rc, const struct pt_error *err, enum pt_errcode code)
{
    assert_int_equal(rc, -1);
    assert_string_equal(pt_error_name(err->code), pt_error_name(code));
}

static void test_proc_open_on_itself_reads_memory_but_refuses_to_pause(void **state)
{
    struct fixture *f = *state;
    static const char secret[] = "pytop reads itself";
    char out[sizeof secret] = {0};
    struct pt_error err = {0};
    struct proc *p = open_child(f, getpid());
    assert_int_equal(proc_pid(p), getpid());
    assert_int_equal(proc_read_bytes(p, addr_of(secret), out, sizeof out, &err), 0);
    assert_string_equal(out, secret);
    assert_int_equal(proc_get_counters(p).bytes, sizeof secret);
    expect_error(proc_pause(p, &err), &err, PT_E_PERM);
}

static void test_proc_open_fails_with_noproc_for_a_missing_pid(void **state)
{
    (void)state;
    static const pid_t missing[] = {INT_MAX, 0, -5};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        struct pt_error err = {0};
        assert_null(proc_open(missing[i], &err));
        assert_int_equal(err.code, PT_E_NOPROC);
        assert_non_null(strstr(err.msg, "no process with PID"));
    }
}

static void test_proc_read_bytes_reads_a_child_buffer(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    unsigned char out[5000];
    struct pt_error err = {0};
    assert_int_equal(proc_read_bytes(p, addr_of(f->buf + 100), out, sizeof out, &err), 0);
    for (size_t i = 0; i < sizeof out; i++) {
        assert_int_equal(out[i], pattern(100 + i));
    }
    assert_int_equal(f->buf[100], 0); /* so that was the child's copy */
    assert_int_equal(proc_get_counters(p).syscalls, 1);
}

static void test_proc_read_many_reads_fifty_regions_in_one_system_call(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    enum { REGIONS = 50, STRIDE = 1200 };
    unsigned char *out = calloc(1, BUF_SIZE);
    struct proc_iov iov[REGIONS];
    size_t total = 0;
    assert_non_null(out);
    for (size_t k = 0; k < REGIONS; k++) {
        /* Every third region runs right up to the next one; some are empty or cross pages. */
        size_t len = k % 3 == 0 ? STRIDE : k % 7 == 0 ? 0 : (k * 97) % STRIDE + 1;
        iov[k] = (struct proc_iov){addr_of(f->buf + k * STRIDE), out + k * STRIDE, len};
        total += len;
    }
    struct proc_counters before = proc_get_counters(p);
    struct pt_error err = {0};
    assert_int_equal(proc_read_many(p, iov, REGIONS, &err), 0);
    struct proc_counters after = proc_get_counters(p);
    assert_int_equal(after.syscalls - before.syscalls, 1);
    /* Regions close together are read as one, gaps included: never less than was asked, never
     * more than the span they cover. */
    assert_true(after.bytes - before.bytes >= total);
    assert_true(after.bytes - before.bytes <= (uint64_t)REGIONS * STRIDE);
    for (size_t k = 0; k < REGIONS; k++) {
        for (size_t i = k * STRIDE; i < k * STRIDE + iov[k].len; i++) {
            assert_int_equal(out[i], pattern(i));
        }
    }
    free(out);
}

static void test_proc_read_many_reads_close_regions_in_any_order_and_overlapping(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    enum { REGIONS = 40 };
    unsigned char out[REGIONS][64];
    struct proc_iov iov[REGIONS];
    /* Backwards, 24 bytes apart, 64 long: each overlaps the next; two are the same region. */
    for (size_t k = 0; k < REGIONS; k++) {
        size_t at = 5000 + (REGIONS - 1 - k) * 24 + (k == 7 ? 24 : 0);
        iov[k] = (struct proc_iov){addr_of(f->buf + at), out[k], sizeof out[k]};
    }
    struct pt_error err = {0};
    assert_int_equal(proc_read_many(p, iov, REGIONS, &err), 0);
    assert_int_equal(proc_get_counters(p).syscalls, 1);
    for (size_t k = 0; k < REGIONS; k++) {
        size_t at = 5000 + (REGIONS - 1 - k) * 24 + (k == 7 ? 24 : 0);
        for (size_t i = 0; i < sizeof out[k]; i++) {
            assert_int_equal(out[k][i], pattern(at + i));
        }
    }
}

/* A repeated batch reuses the address order the last one sorted into: a batch of the same size
 * whose regions moved, or one that leaves a region empty, must still read every region right. */
static void test_proc_read_many_reads_a_repeated_batch_right_when_its_regions_move(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    enum { REGIONS = 24, LEN = 48 };
    unsigned char out[REGIONS][LEN];
    struct proc_iov iov[REGIONS];
    /* Rounds: ascending, the same again, reversed, with one region empty, shuffled. */
    for (int round = 0; round < 5; round++) {
        size_t at[REGIONS];
        for (size_t k = 0; k < REGIONS; k++) {
            size_t slot = round == 2 ? REGIONS - 1 - k : round == 4 ? (k * 7) % REGIONS : k;
            at[k] = 3000 + slot * 40 + (size_t)round;
            size_t len = round == 3 && k == 5 ? 0 : LEN;
            memset(out[k], 0, sizeof out[k]);
            iov[k] = (struct proc_iov){addr_of(f->buf + at[k]), out[k], len};
        }
        struct pt_error err = {0};
        assert_int_equal(proc_read_many(p, iov, REGIONS, &err), 0);
        for (size_t k = 0; k < REGIONS; k++) {
            for (size_t i = 0; i < iov[k].len; i++) {
                assert_int_equal(out[k][i], pattern(at[k] + i));
            }
        }
    }
}

static void test_proc_readahead_serves_what_the_last_walk_read_in_one_call(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    enum { REGIONS = 30, STRIDE = 2000, LEN = 100 };
    unsigned char out[LEN];
    struct pt_error err = {0};
    /* The first walk: nothing recorded yet, every region is read. */
    proc_readahead_begin(p);
    for (size_t k = 0; k < REGIONS; k++) {
        assert_int_equal(proc_read_bytes(p, addr_of(f->buf + k * STRIDE), out, LEN, &err), 0);
    }
    proc_readahead_end(p);
    uint64_t before = proc_get_counters(p).syscalls;
    /* The second: one call reads them all ahead, then they cost nothing; others are read. */
    proc_readahead_begin(p);
    assert_int_equal(proc_get_counters(p).syscalls - before, 1);
    for (size_t k = 0; k < REGIONS; k++) {
        memset(out, 0, sizeof out);
        assert_int_equal(proc_read_bytes(p, addr_of(f->buf + k * STRIDE + 10), out, LEN - 10, &err),
                         0);
        for (size_t i = 0; i < LEN - 10; i++) {
            assert_int_equal(out[i], pattern(k * STRIDE + 10 + i));
        }
    }
    assert_int_equal(proc_get_counters(p).syscalls - before, 1);
    /* Past the last region read: not read ahead. */
    assert_int_equal(proc_read_bytes(p, addr_of(f->buf + REGIONS * STRIDE + 1000), out, LEN, &err),
                     0);
    assert_int_equal(out[0], pattern(REGIONS * STRIDE + 1000));
    assert_int_equal(proc_get_counters(p).syscalls - before, 2);
    proc_readahead_end(p);
    /* Outside a walk nothing is served or recorded. */
    assert_int_equal(proc_read_bytes(p, addr_of(f->buf), out, LEN, &err), 0);
    assert_int_equal(proc_get_counters(p).syscalls - before, 3);
}

static void test_proc_read_now_is_never_served_from_the_readahead_copy(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    unsigned char out[64];
    struct pt_error err = {0};
    struct proc_iov one = {addr_of(f->buf + 100), out, sizeof out};
    proc_readahead_begin(p);
    assert_int_equal(proc_read_many(p, &one, 1, &err), 0);
    proc_readahead_end(p);
    proc_readahead_begin(p);
    uint64_t before = proc_get_counters(p).syscalls;
    assert_int_equal(proc_read_many(p, &one, 1, &err), 0);
    assert_int_equal(proc_get_counters(p).syscalls - before, 0);
    memset(out, 0, sizeof out);
    assert_int_equal(proc_read_now(p, &one, 1, &err), 0);
    assert_int_equal(proc_get_counters(p).syscalls - before, 1);
    assert_int_equal(out[0], pattern(100));
    proc_readahead_end(p);
}

static void test_proc_read_bytes_fails_with_read_error_at_an_unmapped_address(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    char out[16];
    char addr[32];
    struct pt_error err = {0};
    uint64_t hole = addr_of(f->hole + f->page);
    expect_error(proc_read_bytes(p, hole, out, sizeof out, &err), &err, PT_E_READ);
    snprintf(addr, sizeof addr, "0x%" PRIx64, hole);
    assert_non_null(strstr(err.msg, addr));
}

static void test_proc_read_many_names_the_region_that_stops_a_partial_read(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    unsigned char a[100];
    unsigned char b[100];
    unsigned char c[10];
    /* B starts 50 bytes before the hole: the kernel copies A and half of B, then stops. */
    struct proc_iov iov[] = {
        {addr_of(f->buf), a, sizeof a},
        {addr_of(f->hole + f->page - 50), b, sizeof b},
        {addr_of(f->hole + 2 * f->page), c, sizeof c},
    };
    char addr[64];
    struct pt_error err = {0};
    expect_error(proc_read_many(p, iov, 3, &err), &err, PT_E_READ);
    snprintf(addr, sizeof addr, "100 bytes at 0x%" PRIx64, iov[1].addr);
    assert_non_null(strstr(err.msg, addr));
    assert_int_equal(a[99], pattern(99));
    assert_int_equal(proc_get_counters(p).syscalls, 2);
    assert_int_equal(proc_get_counters(p).bytes, 150);
}

static void test_proc_read_many_rejects_oversized_and_wrapping_requests(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, getpid());
    struct proc_iov iov[PROC_IOV_MAX + 1];
    char out[16];
    struct pt_error err = {0};
    expect_error(proc_read_bytes(p, addr_of(f->buf), f->buf, PROC_READ_MAX + 1, &err), &err,
                 PT_E_LIMIT);
    for (size_t i = 0; i <= PROC_IOV_MAX; i++) {
        iov[i] = (struct proc_iov){addr_of(out), out, 1};
    }
    expect_error(proc_read_many(p, iov, PROC_IOV_MAX + 1, &err), &err, PT_E_LIMIT);
    assert_int_equal(proc_read_many(p, iov, PROC_IOV_MAX, &err), 0);
    expect_error(proc_read_bytes(p, UINT64_MAX - 4, out, sizeof out, &err), &err, PT_E_READ);
}

static void test_proc_reads_of_an_exited_child_fail_with_gone(void **state)
{
    struct fixture *f = *state;
    pid_t pid = spawn(f, fill_body);
    struct proc *p = open_child(f, pid);
    const struct proc_map *maps;
    size_t n;
    siginfo_t info;
    char out[16];
    struct pt_error err = {0};
    kill(pid, SIGKILL);
    assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0); /* a zombie */
    expect_error(proc_read_bytes(p, addr_of(f->buf), out, sizeof out, &err), &err, PT_E_GONE);
    assert_int_equal(waitpid(pid, NULL, 0), pid); /* reaped */
    f->children[0] = 0;
    expect_error(proc_read_bytes(p, addr_of(f->buf), out, sizeof out, &err), &err, PT_E_GONE);
    expect_error(proc_maps(p, &maps, &n, &err), &err, PT_E_GONE);
    assert_null(proc_open(pid, &err));
    assert_int_equal(err.code, PT_E_NOPROC);
}

static void test_proc_maps_lists_the_child_buffer_as_readable_and_writable(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    const struct proc_map *maps;
    size_t n;
    struct pt_error err = {0};
    for (int pass = 0; pass < 2; pass++) { /* the second call replaces the cached list */
        const struct proc_map *found = NULL;
        assert_int_equal(proc_maps(p, &maps, &n, &err), 0);
        for (size_t i = 0; i < n; i++) {
            if (maps[i].start <= addr_of(f->buf) && addr_of(f->buf) < maps[i].end) {
                found = &maps[i];
            }
        }
        assert_non_null(found);
        assert_true(found->readable && found->writable);
    }
}

static void test_proc_tasks_lists_the_main_thread_and_three_pthreads(void **state)
{
    struct fixture *f = *state;
    pid_t pid = spawn(f, spin_body);
    struct proc *p = open_child(f, pid);
    pid_t tids[8];
    size_t n = 0;
    struct pt_error err = {0};
    assert_int_equal(proc_tasks(p, tids, 8, &n, &err), 0);
    assert_int_equal(n, 4);
    bool has_main = false;
    for (size_t i = 0; i < n; i++) {
        has_main = has_main || tids[i] == pid;
        assert_true(i == 0 || tids[i - 1] < tids[i]);
    }
    assert_true(has_main);
    expect_error(proc_tasks(p, tids, 3, &n, &err), &err, PT_E_LIMIT);
}

/* Waits until thread TID is (or, with NOT, stops being) in STATE. */
static void wait_for_state(struct proc *p, pid_t tid, char state, bool not )
{
    struct proc_task_stat st = {0};
    for (int ms = 0; ms < WAIT_MS; ms++) {
        struct pt_error err = {0};
        assert_int_equal(proc_task_stat(p, tid, &st, &err), 0);
        if ((st.state == state) != not ) {
            return;
        }
        usleep(1000);
    }
    fail_msg("thread %d stayed in state %c", (int)tid, st.state);
}

static void test_proc_task_stat_of_an_exited_thread_fails_with_gone_and_closes_its_fd(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, getpid());
    pthread_t th;
    struct proc_task_stat st;
    struct pt_error err = {0};
    int before = count_fds();
    pid_t tid = start_parked(&th);
    assert_int_equal(proc_task_stat(p, tid, &st, &err), 0);
    int fd = stat_fd_of(getpid(), tid, -1);
    assert_true(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
    pthread_cancel(th);
    pthread_join(th, NULL);
    int rc = 0;
    for (int ms = 0; ms < WAIT_MS && rc == 0; ms++) { /* until the kernel releases it */
        rc = proc_task_stat(p, tid, &st, &err);
        usleep(1000);
    }
    expect_error(rc, &err, PT_E_GONE);
    assert_int_equal(stat_fd_of(getpid(), tid, -1), -1);
    expect_error(proc_task_stat(p, tid, &st, &err), &err, PT_E_GONE); /* now with no fd */
    assert_int_equal(count_fds(), before);
}

static void test_proc_pause_stops_every_thread_until_resumed(void **state)
{
    struct fixture *f = *state;
    pid_t pid = spawn(f, spin_body);
    struct proc *p = open_child(f, pid);
    pid_t tids[SPINNERS];
    uint64_t seen[SPINNERS];
    size_t n = 0;
    struct pt_error err = {0};
    assert_int_equal(proc_tasks(p, tids, SPINNERS, &n, &err), 0);
    assert_int_equal(n, SPINNERS);

    assert_int_equal(proc_pause(p, &err), 0);
    for (size_t i = 0; i < n; i++) {
        struct proc_task_stat st;
        assert_int_equal(proc_task_stat(p, tids[i], &st, &err), 0);
        assert_int_equal(st.state, 't');
    }
    uint64_t read_back = 0;
    assert_int_equal(proc_read_bytes(p, addr_of(f->spins), &read_back, 8, &err), 0);
    memcpy(seen, (const void *)f->spins, sizeof seen);
    assert_int_equal(read_back, seen[0]);
    usleep(50000);
    assert_memory_equal(seen, (const void *)f->spins, sizeof seen);

    proc_resume(p);
    for (size_t i = 0; i < n; i++) {
        wait_for_state(p, tids[i], 't', true);
        for (int ms = 0; ms < WAIT_MS && f->spins[i] == seen[i]; ms++) {
            usleep(1000);
        }
        assert_true(f->spins[i] != seen[i]);
    }
    assert_int_equal(proc_pause(p, &err), 0); /* and once more, so close() must resume it */
}

static void exec_sleep_body(struct fixture *f)
{
    signal_ready(f);
    execl("/bin/sleep", "sleep", "30", (char *)NULL);
    _exit(127);
}

static void test_proc_cmdline_and_exe_describe_an_exec_child(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, exec_sleep_body));
    char buf[256] = "";
    struct pt_error err = {0};
    /* Until the exec is done the command line is the test's, or briefly empty. */
    for (int ms = 0; ms < WAIT_MS && strcmp(buf, "sleep 30") != 0; ms++) {
        assert_int_equal(proc_cmdline(p, buf, sizeof buf, &err), 0);
        usleep(1000);
    }
    assert_string_equal(buf, "sleep 30");
    assert_int_equal(proc_cmdline(p, buf, 4, &err), 0);
    assert_string_equal(buf, "sle");
    assert_int_equal(proc_exe(p, buf, sizeof buf, &err), 0);
    assert_string_equal(buf + strlen(buf) - 6, "/sleep");
    expect_error(proc_exe(p, buf, 4, &err), &err, PT_E_LIMIT);
}

static void test_proc_argv_and_started_name_an_exec_child(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, exec_sleep_body));
    char buf[256];
    size_t len = 0;
    bool cut = true;
    struct pt_error err = {0};
    static const char want[9] = {'s', 'l', 'e', 'e', 'p', '\0', '3', '0', '\0'};
    for (int ms = 0; ms < WAIT_MS && !(len == 9 && memcmp(buf, want, 9) == 0); ms++) {
        assert_int_equal(proc_argv(p, buf, sizeof buf, &len, &cut, &err), 0);
        usleep(1000);
    }
    assert_int_equal(len, 9);
    assert_memory_equal(buf, want, 9);
    assert_false(cut);
    /* Exactly full is not cut; one byte short is. */
    assert_int_equal(proc_argv(p, buf, 9, &len, &cut, &err), 0);
    assert_int_equal(len, 9);
    assert_false(cut);
    assert_int_equal(proc_argv(p, buf, 4, &len, &cut, &err), 0);
    assert_int_equal(len, 4);
    assert_memory_equal(buf, "slee", 4);
    assert_true(cut);
    /* The child started a moment ago, and each read says the same to the tick. */
    double started = 0;
    double again = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    assert_int_equal(proc_started(p, &started, &err), 0);
    double age = (double)now.tv_sec + (double)now.tv_nsec / 1e9 - started;
    assert_true(age > -0.1 && age < 30);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(proc_started(p, &again, &err), 0);
        assert_true(again - started < 0.011 && started - again < 0.011);
    }
}

static void test_proc_open_file_opens_the_executable_through_the_target_root(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, getpid());
    char exe[PATH_MAX];
    char magic[4];
    struct pt_error err = {0};
    assert_int_equal(proc_exe(p, exe, sizeof exe, &err), 0);
    int fd = proc_open_file(p, exe, &err);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, magic, 4), 4);
    assert_memory_equal(magic, "\177ELF", 4);
    close(fd);
    expect_error(proc_open_file(p, "relative/no/such/path", &err), &err, PT_E_IO);
    /* A relative name is the target's, from its working directory (here: ours). */
    FILE *tmp = fopen("test_proc-relative.tmp", "w");
    assert_non_null(tmp);
    fputs("ELF?", tmp);
    fclose(tmp);
    fd = proc_open_file(p, "test_proc-relative.tmp", &err);
    unlink("test_proc-relative.tmp");
    assert_true(fd >= 0);
    assert_int_equal(read(fd, magic, 4), 4);
    assert_memory_equal(magic, "ELF?", 4);
    close(fd);
    expect_error(proc_open_file(p, "/", &err), &err, PT_E_IO);
    expect_error(proc_open_file(p, "/no/such/file/here", &err), &err, PT_E_IO);
}

/* Runs CHECK(F, ARG) in a child. Returns its exit status: 0, SKIPPED, or the failed check. */
static int run_in_child(struct fixture *f, int (*check)(struct fixture *, pid_t), pid_t arg)
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

/* In a child: the checks of a read as an unprivileged user. Returns 0, or which one failed. */
static int check_reads_as_nobody(struct fixture *f, pid_t root_pid)
{
    struct pt_error err = {0};
    const struct proc_map *maps;
    size_t n;
    char out[16];
    struct proc *p = NULL;
    if (setgid(65534) != 0 || setuid(65534) != 0 || (p = proc_open(root_pid, &err)) == NULL) {
        return 1;
    }
    int rc = 0;
    if (proc_read_bytes(p, addr_of(f->buf), out, sizeof out, &err) == 0 || err.code != PT_E_PERM) {
        rc = 3;
    } else if (proc_maps(p, &maps, &n, &err) == 0 || err.code != PT_E_PERM) {
        rc = 4;
    }
    proc_close(p);
    return rc;
}

static void test_proc_read_bytes_as_another_user_fails_with_perm(void **state)
{
    struct fixture *f = *state;
    if (getuid() != 0) {
        skip(); /* needs root to become another user */
    }
    assert_int_equal(run_in_child(f, check_reads_as_nobody, getpid()), 0);
}

/* Makes system calls A and B fail with EPERM from now on, as seccomp does in some containers. */
static bool refuse_syscalls(unsigned a, unsigned b)
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

/* In a child: makes process_vm_readv fail with EPERM (as seccomp does in some containers),
 * then reads TARGET's buffer, which must go through /proc/PID/mem. Returns 0 or a check. */
static int check_reads_without_process_vm_readv(struct fixture *f, pid_t target)
{
    if (!refuse_syscalls(SYS_process_vm_readv, SYS_process_vm_readv)) {
        return 1;
    }
    struct pt_error err = {0};
    struct proc *p = proc_open(target, &err);
    unsigned char a[3000];
    unsigned char b[10];
    struct proc_iov iov[] = {{addr_of(f->buf + 5), a, sizeof a}, {addr_of(f->buf), b, 10}};
    if (p == NULL || proc_read_many(p, iov, 2, &err) != 0) {
        return 2;
    }
    if (a[0] != pattern(5) || a[2999] != pattern(3004) || b[9] != pattern(9)) {
        return 3;
    }
    /* One refused process_vm_readv, then one pread per region. */
    if (proc_get_counters(p).syscalls != 3 || proc_get_counters(p).bytes != 3010) {
        return 4;
    }
    int rc = 0;
    if (proc_read_bytes(p, addr_of(f->hole + f->page), a, 8, &err) == 0 || err.code != PT_E_READ) {
        rc = 5;
    }
    proc_close(p);
    /* Once its process dies an open mem file reads as empty: that is no bad address. */
    siginfo_t info;
    pid_t doomed = fork();
    if (doomed < 0) {
        return 7; /* and so never kill(-1, ...) */
    }
    if (doomed == 0) {
        pause();
        _exit(0);
    }
    p = proc_open(doomed, &err);
    bool was_read = p != NULL && proc_read_bytes(p, addr_of(f->buf), a, 8, &err) == 0;
    kill(doomed, SIGKILL);
    waitid(P_PID, (id_t)doomed, &info, WEXITED | WNOWAIT);
    if (!was_read || proc_read_bytes(p, addr_of(f->buf), a, 8, &err) == 0 ||
        err.code != PT_E_GONE) {
        rc = 6;
    }
    proc_close(p);
    waitpid(doomed, NULL, 0);
    return rc;
}

static void test_proc_read_many_falls_back_to_proc_mem_when_refused(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(run_in_child(f, check_reads_without_process_vm_readv, spawn(f, fill_body)), 0);
}

/* In a child: reads each thread of TARGET once, then forbids opening files and reads each
 * 100 times more, through the fd kept for it. Returns 0 or the failed check. */
static int check_task_stat_rereads_without_opening(struct fixture *f, pid_t target)
{
    struct proc_task_stat st[SPINNERS];
    struct proc_task_stat now;
    pid_t tids[SPINNERS];
    size_t n = 0;
    uint64_t cpu[2] = {0, 0}; /* of all threads, first and last read */
    int before = count_fds();
    struct proc *p = proc_open(target, NULL);
    if (p == NULL || proc_tasks(p, tids, SPINNERS, &n, NULL) != 0 || n != SPINNERS) {
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (proc_task_stat(p, tids[i], &st[i], NULL) != 0 || stat_fd_of(target, tids[i], -1) < 0) {
            return 2;
        }
        cpu[0] += st[i].utime + st[i].stime;
    }
    int kept = count_fds();
    /* One fd per thread, and the handle's own on the image (proc_exec_check()). */
    if (kept != before + 1 + SPINNERS || !refuse_syscalls(SYS_openat, SYS_open)) {
        return 3;
    }
    for (int round = 0; round < 100; round++, usleep(2000)) {
        for (size_t i = 0; i < n; i++) {
            if (proc_task_stat(p, tids[i], &now, NULL) != 0 || now.utime < st[i].utime ||
                now.stime < st[i].stime) {
                return 4;
            }
            st[i] = now;
        }
    }
    for (size_t i = 0; i < n; i++) {
        cpu[1] += st[i].utime + st[i].stime;
        if (st[i].state != 'R' || st[i].processor < 0) {
            return 5;
        }
    }
    /* The spinning threads were read afresh each time, through the same fds. */
    if (count_fds() != kept || cpu[1] <= cpu[0]) {
        return 6;
    }
    proc_close(p);
    return count_fds() == before ? 0 : 7;
}

static void test_proc_task_stat_rereads_spinning_threads_without_opening_a_file(void **state)
{
    struct fixture *f = *state;
    pid_t pid = spawn(f, spin_body);
    struct proc_task_stat st;
    struct pt_error err = {0};
    assert_true(proc_clock_ticks() > 0);
    expect_error(proc_task_stat(open_child(f, pid), INT_MAX, &st, &err), &err, PT_E_GONE);
    assert_int_equal(run_in_child(f, check_task_stat_rereads_without_opening, pid), 0);
}

/* As init of a new PID namespace: keeps a thread's stat fd, lets the thread exit and gives its
 * id to a new thread through ns_last_pid. Returns 0 or the failed check. */
static int reuse_a_thread_id(void)
{
    pthread_t th;
    struct proc_task_stat st;
    char buf[2048];
    pid_t self = getpid();
    struct proc *p = proc_open(self, NULL);
    pid_t tid = start_parked(&th);
    int old = -1; /* the same open file as the one pytop keeps */
    if (p == NULL || tid == 0 || proc_task_stat(p, tid, &st, NULL) != 0 ||
        (old = dup(stat_fd_of(self, tid, -1))) < 0) {
        return 10;
    }
    pthread_cancel(th);
    pthread_join(th, NULL);
    /* Ask for the id until the kernel frees it, soon after the join; misses stay parked. */
    pid_t again = 0;
    for (int ms = 0; ms < WAIT_MS && again != tid; ms++, usleep(1000)) {
        FILE *last = fopen("/proc/sys/kernel/ns_last_pid", "w");
        if (last == NULL || fprintf(last, "%d", (int)tid - 1) < 0 || fclose(last) != 0) {
            return 11;
        }
        again = start_parked(&th);
    }
    /* The kernel binds the fd to the thread that exited: it never reads the new one. */
    if (again != tid || pread(old, buf, sizeof buf, 0) != -1 || errno != ESRCH) {
        return 12;
    }
    /* So pytop drops it and reads the new thread through a new fd. */
    if (proc_task_stat(p, tid, &st, NULL) != 0 ||
        pread(stat_fd_of(self, tid, old), buf, sizeof buf, 0) <= 0) {
        return 13;
    }
    return 0; /* the caller exits at once, which ends the thread and closes the fds */
}

/* In a child: makes a PID namespace with its own /proc, where a thread id can be had again,
 * and runs reuse_a_thread_id() as its init. Returns what that returns, or SKIPPED. */
static int check_thread_id_reuse(struct fixture *f, pid_t unused)
{
    int status;
    if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        return SKIPPED;
    }
    pid_t init = fork();
    if (init == 0) {
        _exit(mount("proc", "/proc", "proc", 0, NULL) != 0 ? SKIPPED : reuse_a_thread_id());
    }
    if (init < 0 || waitpid(init, &status, 0) != init || !WIFEXITED(status)) {
        return 1;
    }
    return WEXITSTATUS(status);
}

static void test_proc_task_stat_of_a_reused_thread_id_reads_the_new_thread(void **state)
{
    struct fixture *f = *state;
    int rc = run_in_child(f, check_thread_id_reuse, 0);
    if (rc == SKIPPED) {
        skip(); /* needs root, for a PID namespace and ns_last_pid */
    }
    assert_int_equal(rc, 0);
}

/* A child that exec()s /bin/sleep when told: the handle opened before notices the exec (and
 * keeps saying so), reads the new image once reopened, and tells the exit apart. */
static void test_proc_exec_check_notices_an_exec_and_reopen_follows_it(void **state)
{
    (void)state;
    int go[2];
    char exe[PATH_MAX] = "";
    struct pt_error err = {0};
    siginfo_t info;
    assert_int_equal(pipe(go), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) == 1) {
            execl("/bin/sleep", "sleep", "30", (char *)NULL);
        }
        _exit(1);
    }
    close(go[0]);
    struct proc *p = proc_open(child, &err);
    assert_non_null(p);
    assert_int_equal(proc_exec_check(p, &err), 0);
    assert_int_equal(write(go[1], "x", 1), 1);
    int seen = 0;
    for (int i = 0; i < 500 && (seen = proc_exec_check(p, &err)) == 0; i++) {
        usleep(10000);
    }
    assert_int_equal(seen, 1);
    assert_int_equal(proc_exec_check(p, &err), 1);
    assert_int_equal(proc_exe(p, exe, sizeof exe, &err), 0);
    assert_non_null(strstr(exe, "sleep"));
    assert_int_equal(proc_reopen(p, &err), 0);
    assert_int_equal(proc_exec_check(p, &err), 0);
    kill(child, SIGKILL);
    waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT);
    expect_error(proc_exec_check(p, &err), &err, PT_E_GONE);
    proc_close(p);
    waitpid(child, NULL, 0);
    close(go[1]);
}

int main(void)
{
    struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_open_fails_with_noproc_for_a_missing_pid),
        cmocka_unit_test(test_proc_open_on_itself_reads_memory_but_refuses_to_pause),
        cmocka_unit_test(test_proc_read_bytes_reads_a_child_buffer),
        cmocka_unit_test(test_proc_read_many_reads_fifty_regions_in_one_system_call),
        cmocka_unit_test(test_proc_read_many_reads_close_regions_in_any_order_and_overlapping),
        cmocka_unit_test(test_proc_read_many_reads_a_repeated_batch_right_when_its_regions_move),
        cmocka_unit_test(test_proc_readahead_serves_what_the_last_walk_read_in_one_call),
        cmocka_unit_test(test_proc_read_now_is_never_served_from_the_readahead_copy),
        cmocka_unit_test(test_proc_read_bytes_fails_with_read_error_at_an_unmapped_address),
        cmocka_unit_test(test_proc_read_many_names_the_region_that_stops_a_partial_read),
        cmocka_unit_test(test_proc_read_many_rejects_oversized_and_wrapping_requests),
        cmocka_unit_test(test_proc_reads_of_an_exited_child_fail_with_gone),
        cmocka_unit_test(test_proc_maps_lists_the_child_buffer_as_readable_and_writable),
        cmocka_unit_test(test_proc_tasks_lists_the_main_thread_and_three_pthreads),
        cmocka_unit_test(test_proc_task_stat_of_an_exited_thread_fails_with_gone_and_closes_its_fd),
        cmocka_unit_test(test_proc_task_stat_rereads_spinning_threads_without_opening_a_file),
        cmocka_unit_test(test_proc_task_stat_of_a_reused_thread_id_reads_the_new_thread),
        cmocka_unit_test(test_proc_pause_stops_every_thread_until_resumed),
        cmocka_unit_test(test_proc_cmdline_and_exe_describe_an_exec_child),
        cmocka_unit_test(test_proc_argv_and_started_name_an_exec_child),
        cmocka_unit_test(test_proc_open_file_opens_the_executable_through_the_target_root),
        cmocka_unit_test(test_proc_read_bytes_as_another_user_fails_with_perm),
        cmocka_unit_test(test_proc_read_many_falls_back_to_proc_mem_when_refused),
        cmocka_unit_test(test_proc_exec_check_notices_an_exec_and_reopen_follows_it),
    };
    /* Every test gets a fixture; teardown kills the children a test started, even one that
     * failed half-way. */
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        tests[i].setup_func = setup;
        tests[i].teardown_func = teardown;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
