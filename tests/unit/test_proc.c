/* test_proc: opening, listing and pausing real child processes, and their threads. */
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
        cmocka_unit_test(test_proc_maps_lists_the_child_buffer_as_readable_and_writable),
        cmocka_unit_test(test_proc_tasks_lists_the_main_thread_and_three_pthreads),
        cmocka_unit_test(test_proc_task_stat_of_an_exited_thread_fails_with_gone_and_closes_its_fd),
        cmocka_unit_test(test_proc_task_stat_rereads_spinning_threads_without_opening_a_file),
        cmocka_unit_test(test_proc_task_stat_of_a_reused_thread_id_reads_the_new_thread),
        cmocka_unit_test(test_proc_pause_stops_every_thread_until_resumed),
        cmocka_unit_test(test_proc_cmdline_and_exe_describe_an_exec_child),
        cmocka_unit_test(test_proc_argv_and_started_name_an_exec_child),
        cmocka_unit_test(test_proc_open_file_opens_the_executable_through_the_target_root),
        cmocka_unit_test(test_proc_exec_check_notices_an_exec_and_reopen_follows_it),
    };
    with_fixture(tests, sizeof tests / sizeof tests[0]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
