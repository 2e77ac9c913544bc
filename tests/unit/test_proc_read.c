/* test_proc_read: reading a child's memory: one region, batches, readahead, and the failures. */
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

/* A walk of many threads reads in several batches, each repeated by the next walk: the orders
 * of several earlier batches are kept, two of the same size among them. Batches that take turns
 * (ascending, descending, shuffled, a smaller one), their regions moving each round, must each
 * read every region right, whichever kept order each one tries first. */
static void test_proc_read_many_reads_batches_that_take_turns_right(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    enum { REGIONS = 24, LEN = 40 };
    unsigned char out[REGIONS][LEN];
    struct proc_iov iov[REGIONS];
    for (int round = 0; round < 12; round++) {
        int shape = round % 4;
        size_t n = shape == 3 ? 17 : REGIONS;
        size_t at[REGIONS];
        for (size_t k = 0; k < n; k++) {
            size_t slot = shape == 1 ? n - 1 - k : shape == 2 ? (k * 5) % n : k;
            /* Each round moves the regions by a few bytes; round 9 swaps two neighbours of
             * the ascending shape, which its kept order then no longer sorts. */
            if (round == 8 && (k == 3 || k == 4)) {
                slot = k == 3 ? 4 : 3;
            }
            at[k] = 5000 + slot * 56 + (size_t)(round / 4) * 3;
            memset(out[k], 0, sizeof out[k]);
            iov[k] = (struct proc_iov){addr_of(f->buf + at[k]), out[k], LEN};
        }
        struct pt_error err = {0};
        assert_int_equal(proc_read_many(p, iov, n, &err), 0);
        for (size_t k = 0; k < n; k++) {
            for (size_t i = 0; i < LEN; i++) {
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

/* A walk reads in the order it follows pointers, not by address: the record is sorted before
 * it is read ahead (a radix sort over the address bytes that differ, here the low two). */
static void test_proc_readahead_sorts_regions_read_out_of_order(void **state)
{
    struct fixture *f = *state;
    struct proc *p = open_child(f, spawn(f, fill_body));
    enum { REGIONS = 1024, STRIDE = BUF_SIZE / REGIONS, LEN = 24 };
    unsigned char out[LEN];
    struct pt_error err = {0};
    proc_readahead_begin(p);
    for (size_t k = 0; k < REGIONS; k++) {
        size_t slot = (k * 397 + 11) % REGIONS; /* every slot once, scattered */
        assert_int_equal(proc_read_bytes(p, addr_of(f->buf + slot * STRIDE), out, LEN, &err), 0);
    }
    proc_readahead_end(p);
    uint64_t before = proc_get_counters(p).syscalls;
    proc_readahead_begin(p);
    uint64_t ahead = proc_get_counters(p).syscalls - before;
    assert_true(ahead >= 1 && ahead <= 2);
    for (size_t slot = REGIONS; slot-- > 0;) {
        memset(out, 0, sizeof out);
        assert_int_equal(proc_read_bytes(p, addr_of(f->buf + slot * STRIDE), out, LEN, &err), 0);
        for (size_t i = 0; i < LEN; i++) {
            assert_int_equal(out[i], pattern(slot * STRIDE + i));
        }
    }
    assert_int_equal(proc_get_counters(p).syscalls - before, ahead);
    proc_readahead_end(p);
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

int main(void)
{
    struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_read_bytes_reads_a_child_buffer),
        cmocka_unit_test(test_proc_read_many_reads_fifty_regions_in_one_system_call),
        cmocka_unit_test(test_proc_read_many_reads_close_regions_in_any_order_and_overlapping),
        cmocka_unit_test(test_proc_read_many_reads_a_repeated_batch_right_when_its_regions_move),
        cmocka_unit_test(test_proc_readahead_serves_what_the_last_walk_read_in_one_call),
        cmocka_unit_test(test_proc_read_many_reads_batches_that_take_turns_right),
        cmocka_unit_test(test_proc_readahead_sorts_regions_read_out_of_order),
        cmocka_unit_test(test_proc_read_now_is_never_served_from_the_readahead_copy),
        cmocka_unit_test(test_proc_read_bytes_fails_with_read_error_at_an_unmapped_address),
        cmocka_unit_test(test_proc_read_many_names_the_region_that_stops_a_partial_read),
        cmocka_unit_test(test_proc_read_many_rejects_oversized_and_wrapping_requests),
        cmocka_unit_test(test_proc_reads_of_an_exited_child_fail_with_gone),
        cmocka_unit_test(test_proc_read_bytes_as_another_user_fails_with_perm),
        cmocka_unit_test(test_proc_read_many_falls_back_to_proc_mem_when_refused),
    };
    with_fixture(tests, sizeof tests / sizeof tests[0]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
