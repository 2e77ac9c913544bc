/* test_proc_wait: a thread's system call and its descriptors as the kernel shows them, parsed
 * from captured text (hostile text included) and read from this test's own process. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/proc_wait.h"

enum {
    WAIT_MS = 5000, /* longest wait for the helper thread to block */
    DESC = 256,
};

static void expect_error(int rc, const struct pt_error *err, enum pt_errcode code)
{
    assert_int_equal(rc, -1);
    assert_string_equal(pt_error_name(err->code), pt_error_name(code));
}

static int parse_syscall(const char *text, struct proc_syscall *out, struct pt_error *err)
{
    return proc_syscall_parse(text, strlen(text), out, err);
}

static void test_proc_syscall_parse_reads_running_idle_and_blocked_threads(void **state)
{
    (void)state;
    struct proc_syscall s;
    struct pt_error err = {0};
    assert_int_equal(parse_syscall("running\n", &s, &err), 0);
    assert_true(s.running);
    assert_int_equal(s.nr, -1);
    assert_int_equal(parse_syscall("running", &s, &err), 0);
    assert_true(s.running);

    assert_int_equal(parse_syscall("-1 0x7ffd 0x7f12\n", &s, &err), 0);
    assert_false(s.running);
    assert_int_equal(s.nr, -1);
    assert_int_equal(s.sp, 0x7ffd);
    assert_int_equal(s.pc, 0x7f12);
    assert_int_equal(s.args[0], 0);

    static const char futex[] = "202 0x7f3a5c0012a8 0x80 0x0 0x0 0x0 0xffffffffffffffff "
                                "0x7ffc8e1b3c40 0x7f3a5c89e1bd\n";
    assert_int_equal(parse_syscall(futex, &s, &err), 0);
    assert_false(s.running);
    assert_int_equal(s.nr, 202);
    assert_int_equal(s.args[0], 0x7f3a5c0012a8);
    assert_int_equal(s.args[1], 0x80);
    assert_int_equal(s.args[4], 0);
    assert_true(s.args[5] == UINT64_MAX);
    assert_int_equal(s.sp, 0x7ffc8e1b3c40);
    assert_int_equal(s.pc, 0x7f3a5c89e1bd);
}

static void test_proc_syscall_parse_rejects_garbage_and_truncated_lines(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "\n",
        "runnin",
        "running now",
        "walking\n",
        "202",
        "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7\n", /* one value short */
        "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9\n",
        "-1 0x7ffd\n",
        "-1 0x7ffd 0x7f12 0x1\n",
        "-1 7ffd 7f12\n",
        "- 0x1 0x2\n",
        "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0xg\n",
        "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x\n",
        "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x12345678901234567\n",
        "99999999999999999999999 0x1 0x2\n",
        "202  0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8\n",
        "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8\n\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct proc_syscall s = {.nr = 12345};
        struct pt_error err = {0};
        expect_error(parse_syscall(bad[i], &s, &err), &err, PT_E_FORMAT);
        assert_int_equal(s.nr, 12345); /* untouched */
        assert_non_null(strstr(err.msg, "syscall"));
    }
    /* A NUL inside the text is a byte like any other, not its end. */
    struct proc_syscall s;
    struct pt_error err = {0};
    expect_error(proc_syscall_parse("running\0x", 9, &s, &err), &err, PT_E_FORMAT);
    assert_int_equal(proc_syscall_parse("running\0x", 7, &s, &err), 0);
}

static void expect_syscall(long nr, const char *name, enum proc_sys_class cls)
{
    assert_non_null(proc_syscall_name(nr));
    assert_string_equal(proc_syscall_name(nr), name);
    assert_int_equal(proc_syscall_class(nr), cls);
}

static void test_proc_syscall_names_and_classes_match_this_architecture(void **state)
{
    (void)state;
#if defined(__x86_64__) || defined(__aarch64__)
    expect_syscall(SYS_futex, "futex", PROC_SYS_FUTEX);
    expect_syscall(SYS_recvfrom, "recvfrom", PROC_SYS_FD);
    expect_syscall(SYS_clock_nanosleep, "clock_nanosleep", PROC_SYS_SLEEP);
    expect_syscall(SYS_nanosleep, "nanosleep", PROC_SYS_SLEEP);
    expect_syscall(SYS_pselect6, "pselect6", PROC_SYS_SELECT);
    expect_syscall(SYS_epoll_pwait, "epoll_pwait", PROC_SYS_EPOLL);
    expect_syscall(SYS_ppoll, "ppoll", PROC_SYS_POLL);
    expect_syscall(SYS_read, "read", PROC_SYS_FD);
    expect_syscall(SYS_write, "write", PROC_SYS_FD);
    expect_syscall(SYS_accept4, "accept4", PROC_SYS_FD);
    expect_syscall(SYS_connect, "connect", PROC_SYS_FD);
    expect_syscall(SYS_recvmsg, "recvmsg", PROC_SYS_FD);
    expect_syscall(SYS_flock, "flock", PROC_SYS_FD);
    expect_syscall(SYS_ioctl, "ioctl", PROC_SYS_FD);
    expect_syscall(SYS_wait4, "wait4", PROC_SYS_CHILD);
    expect_syscall(SYS_waitid, "waitid", PROC_SYS_CHILD);
    expect_syscall(SYS_rt_sigtimedwait, "rt_sigtimedwait", PROC_SYS_PAUSE);
    expect_syscall(SYS_rt_sigsuspend, "rt_sigsuspend", PROC_SYS_PAUSE);
    expect_syscall(SYS_epoll_pwait2, "epoll_pwait2", PROC_SYS_EPOLL);
    expect_syscall(SYS_getpid, "getpid", PROC_SYS_OTHER);
    expect_syscall(SYS_futex_waitv, "futex_waitv", PROC_SYS_OTHER);
    expect_syscall(SYS_io_uring_enter, "io_uring_enter", PROC_SYS_FD);
#if defined(__x86_64__)
    expect_syscall(SYS_select, "select", PROC_SYS_SELECT);
    expect_syscall(SYS_epoll_wait, "epoll_wait", PROC_SYS_EPOLL);
    expect_syscall(SYS_poll, "poll", PROC_SYS_POLL);
    expect_syscall(SYS_pause, "pause", PROC_SYS_PAUSE);
#endif
#endif
    assert_null(proc_syscall_name(-1));
    assert_null(proc_syscall_name(LONG_MIN));
    assert_null(proc_syscall_name(100000));
    assert_null(proc_syscall_name(LONG_MAX));
    assert_int_equal(proc_syscall_class(-1), PROC_SYS_OTHER);
    assert_int_equal(proc_syscall_class(LONG_MAX), PROC_SYS_OTHER);
}

/* Captured on x86_64 (the padding of the real files kept), so little-endian words. */
static const char tcp_text[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
    "inode                                                     \n"
    "   0: 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 "
    "41234 1 0000000000000000 100 0 0 10 0                     \n"
    "   1: 0100007F:1388 0100007F:A8A2 01 00000000:00000000 00:00000000 00000000  1000        0 "
    "41240 1 0000000000000000 20 4 30 10 -1                    \n"
    "   2: 0100007F:A8A2 0100007F:1388 01 00000000:00000000 02:000A5D4E 00000000  1000        0 "
    "41239 2 0000000000000000 20 4 0 10 -1                     \n"
    "   3: 0100007F:A8A4 0100007F:1388 06 00000000:00000000 03:000016FC 00000000     0        0 "
    "0 3 0000000000000000\n";

static const char tcp6_text[] =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000  1000        0 51234 1 0000000000000000 100 0 0 10 "
    "0\n"
    "   1: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D431 01 "
    "00000000:00000000 00:00000000 00000000  1000        0 51240 1 0000000000000000 20 4 30 10 "
    "-1\n";

static const char udp_text[] =
    "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode ref pointer drops             \n"
    "  123: 3500007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   101        "
    "0 21000 2 0000000000000000 0         \n"
    "  456: 0100007F:C001 0100007F:0035 01 00000000:00000000 00:00000000 00000000  1000        "
    "0 21001 2 0000000000000000 0         \n";

static const char unix_text[] =
    "Num       RefCount Protocol Flags    Type St Inode Path\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 31000 /run/app.sock\n"
    "0000000000000000: 00000002 00000000 00000000 0002 01 31001 @/tmp/.X11-unix/X0\n"
    "0000000000000000: 00000003 00000000 00000000 0001 03 31002\n"
    "0000000000000000: 00000003 00000000 00000000 0001 03  9999 /a path with  spaces \n"
    "0000000000000000: 00000003 00000000 00000000 0001 03  1076\n";

static void expect_inode(const struct proc_net *n, uint64_t inode, const char *want)
{
    char out[DESC];
    assert_true(proc_net_describe_inode(n, inode, out, sizeof out));
    assert_string_equal(out, want);
}

static void test_proc_net_parse_inet_reads_ipv4_ipv6_and_listening_sockets(void **state)
{
    (void)state;
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    skip(); /* the captures are of a little-endian machine */
#endif
    struct proc_net *n = proc_net_new();
    struct pt_error err = {0};
    assert_non_null(n);
    assert_int_equal(proc_net_parse_inet(n, tcp_text, sizeof tcp_text - 1, false, false, &err), 0);
    assert_int_equal(proc_net_parse_inet(n, tcp6_text, strlen(tcp6_text), false, true, &err), 0);
    assert_int_equal(proc_net_parse_inet(n, udp_text, sizeof udp_text - 1, true, false, &err), 0);
    expect_inode(n, 41234, "socket TCP 127.0.0.1:5000 (listening)");
    expect_inode(n, 41240, "socket TCP 127.0.0.1:5000->127.0.0.1:43170");
    expect_inode(n, 41239, "socket TCP 127.0.0.1:43170->127.0.0.1:5000");
    expect_inode(n, 51234, "socket TCP [::1]:8080 (listening)");
    expect_inode(n, 51240, "socket TCP [::ffff:127.0.0.1]:8080->[::ffff:127.0.0.1]:54321");
    expect_inode(n, 21000, "socket UDP 127.0.0.53:53");
    expect_inode(n, 21001, "socket UDP 127.0.0.1:49153->127.0.0.1:53");
    char out[DESC] = "x";
    assert_false(proc_net_describe_inode(n, 0, out, sizeof out)); /* TIME_WAIT: no inode */
    assert_string_equal(out, "");
    assert_false(proc_net_describe_inode(n, 41235, out, sizeof out));

    /* Cut to fit, always terminated; nothing at all written into no room. */
    char small[12];
    assert_true(proc_net_describe_inode(n, 41234, small, sizeof small));
    assert_string_equal(small, "socket TCP ");
    assert_true(proc_net_describe_inode(n, 41234, small, 0));

    /* Forgetting the tables forgets their sockets. */
    proc_net_reset(n);
    assert_false(proc_net_describe_inode(n, 41234, out, sizeof out));
    assert_int_equal(proc_net_parse_inet(n, tcp_text, sizeof tcp_text - 1, false, false, &err), 0);
    expect_inode(n, 41234, "socket TCP 127.0.0.1:5000 (listening)");
    proc_net_free(n);
}

static void test_proc_net_parse_unix_reads_named_abstract_and_unnamed_sockets(void **state)
{
    (void)state;
    struct proc_net *n = proc_net_new();
    struct pt_error err = {0};
    assert_non_null(n);
    assert_int_equal(proc_net_parse_unix(n, unix_text, sizeof unix_text - 1, &err), 0);
    expect_inode(n, 31000, "socket UNIX /run/app.sock (listening)");
    expect_inode(n, 31001, "socket UNIX @/tmp/.X11-unix/X0");
    expect_inode(n, 31002, "socket UNIX");
    expect_inode(n, 9999, "socket UNIX /a path with  spaces ");
    expect_inode(n, 1076, "socket UNIX");
    proc_net_free(n);
}

static void test_proc_net_parsers_skip_bad_lines_and_refuse_tables_without_any(void **state)
{
    (void)state;
    struct proc_net *n = proc_net_new();
    struct pt_error err = {0};
    assert_non_null(n);
    static const char mixed[] =
        "  sl  local_address rem_address   st tx_queue\n"
        "   0: 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 7 1\n"
        "   1: 0100007F:13 00000000:0000 0A\n" /* cut */
        "   2: 0100007G:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 8 1\n"
        "   3: 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 9x\n"
        "   4 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 10 1\n"
        "   5: 0100007F:11388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 11\n"
        "\n"
        "   6: 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 12";
    assert_int_equal(proc_net_parse_inet(n, mixed, sizeof mixed - 1, false, false, &err), 0);
    char out[DESC];
    assert_true(proc_net_describe_inode(n, 7, out, sizeof out));
    assert_true(proc_net_describe_inode(n, 12, out, sizeof out)); /* no final newline */
    for (uint64_t inode = 8; inode <= 11; inode++) {
        assert_false(proc_net_describe_inode(n, inode, out, sizeof out));
    }

    static const char *const refused[] = {
        "",
        "   0: 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 20 1\n",
        "  sl  local_address\n   0: nonsense\n   1: 0100007F:1388\n",
        "Num       RefCount Protocol Flags    Type St Inode Path\n", /* another table's header */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        int rc = proc_net_parse_inet(n, refused[i], strlen(refused[i]), false, false, &err);
        expect_error(rc, &err, PT_E_FORMAT);
    }
    assert_false(proc_net_describe_inode(n, 20, out, sizeof out));
    assert_true(proc_net_describe_inode(n, 7, out, sizeof out)); /* what was in stays */

    static const char *const bad_unix[] = {
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01\n",
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 31000x /x\n",
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000 00000002 00000000 00010000 0001 01 31000 /x\n",
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 31000 \n",
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 31000 /"
        "1234567890123456789012345678901234567890123456789012345678901234567890123456789012345"
        "67890123456789012345678901234567890\n", /* longer than sun_path */
    };
    for (size_t i = 0; i < sizeof bad_unix / sizeof bad_unix[0]; i++) {
        int rc = proc_net_parse_unix(n, bad_unix[i], strlen(bad_unix[i]), &err);
        expect_error(rc, &err, PT_E_FORMAT);
    }
    assert_false(proc_net_describe_inode(n, 31000, out, sizeof out));
    proc_net_free(n);
}

static void test_proc_net_describe_inode_trusts_no_inode_a_unix_path_could_forge(void **state)
{
    (void)state;
    /* A socket bound to a name with a newline shows a second line of the name's making. */
    static const char forged[] =
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 41000 /run/real.sock\n"
        "0000000000000000: 00000002 00000000 00000000 0002 01 41001 @x\n"
        "0000000000000000: 00000002 00000000 00000000 0001 01 41000 /run/fake.sock\n";
    struct proc_net *n = proc_net_new();
    struct pt_error err = {0};
    assert_non_null(n);
    assert_int_equal(proc_net_parse_unix(n, forged, sizeof forged - 1, &err), 0);
    char out[DESC];
    assert_false(proc_net_describe_inode(n, 41000, out, sizeof out));
    expect_inode(n, 41001, "socket UNIX @x");
    proc_net_free(n);
}

static void test_proc_net_parse_unix_keeps_the_first_sockets_past_the_limit(void **state)
{
    (void)state;
    static const char head[] = "Num       RefCount Protocol Flags    Type St Inode Path\n";
    size_t lines = (size_t)LIMIT_NET_SOCKETS + 1;
    size_t cap = sizeof head + lines * 80;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t len = (size_t)snprintf(text, cap, "%s", head);
    for (size_t i = 1; i <= lines; i++) {
        len += (size_t)snprintf(text + len, cap - len,
                                "0000000000000000: 00000002 00000000 00000000 0001 01 %zu /s%zu\n",
                                i, i);
    }
    struct proc_net *n = proc_net_new();
    struct pt_error err = {0};
    assert_non_null(n);
    expect_error(proc_net_parse_unix(n, text, len, &err), &err, PT_E_LIMIT);
    expect_inode(n, 1, "socket UNIX /s1");
    expect_inode(n, LIMIT_NET_SOCKETS, "socket UNIX /s65536");
    char out[DESC];
    assert_false(proc_net_describe_inode(n, lines, out, sizeof out));
    proc_net_free(n);
    free(text);
}

/* The descriptors the real check describes. */
struct fds {
    int listener;
    int client;
    int served;
    int udp;
    int pipe[2];
    int pair[2];
    int named;
    int file;
    int event;
    int epoll;
    char file_path[PATH_MAX];
    char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static void endpoint(const struct sockaddr_in *a, char *out, size_t cap)
{
    char host[INET_ADDRSTRLEN];
    assert_non_null(inet_ntop(AF_INET, &a->sin_addr, host, sizeof host));
    snprintf(out, cap, "%s:%u", host, (unsigned)ntohs(a->sin_port));
}

static void names_of(int fd, char *local, char *remote, size_t cap)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    endpoint(&a, local, cap);
    len = sizeof a;
    if (remote != NULL) {
        assert_int_equal(getpeername(fd, (struct sockaddr *)&a, &len), 0);
        endpoint(&a, remote, cap);
    }
}

static void open_fds(struct fds *f)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    f->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->listener >= 0);
    assert_int_equal(bind(f->listener, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(f->listener, 4), 0);
    assert_int_equal(getsockname(f->listener, (struct sockaddr *)&a, &len), 0);
    f->client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(f->client, (struct sockaddr *)&a, sizeof a), 0);
    f->served = accept4(f->listener, NULL, NULL, SOCK_CLOEXEC);
    assert_true(f->served >= 0);
    a.sin_port = 0;
    f->udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(f->udp, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(pipe2(f->pipe, O_CLOEXEC), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->pair), 0);

    struct sockaddr_un u = {.sun_family = AF_UNIX};
    snprintf(f->sock_path, sizeof f->sock_path, "/tmp/pytop-test-%d.sock", (int)getpid());
    unlink(f->sock_path);
    memcpy(u.sun_path, f->sock_path, strlen(f->sock_path) + 1);
    f->named = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(f->named, (struct sockaddr *)&u, sizeof u), 0);
    assert_int_equal(listen(f->named, 1), 0);

    char tmpl[] = "/tmp/pytop-test-XXXXXX";
    f->file = mkstemp(tmpl);
    assert_true(f->file >= 0);
    assert_non_null(realpath(tmpl, f->file_path));
    f->event = eventfd(0, EFD_CLOEXEC);
    f->epoll = epoll_create1(EPOLL_CLOEXEC);
    assert_true(f->event >= 0 && f->epoll >= 0);
    struct epoll_event ev = {.events = EPOLLIN};
    assert_int_equal(epoll_ctl(f->epoll, EPOLL_CTL_ADD, f->pipe[0], &ev), 0);
    assert_int_equal(epoll_ctl(f->epoll, EPOLL_CTL_ADD, f->event, &ev), 0);
}

static void close_fds(struct fds *f)
{
    int all[] = {f->listener, f->client,  f->served, f->udp,  f->pipe[0], f->pipe[1],
                 f->pair[0],  f->pair[1], f->named,  f->file, f->event,   f->epoll};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        close(all[i]);
    }
    unlink(f->file_path);
    unlink(f->sock_path);
}

static void expect_fd(struct proc *p, struct proc_net *net, int fd, const char *want)
{
    char out[DESC];
    struct pt_error err = {0};
    assert_int_equal(proc_fd_describe(p, net, fd, out, sizeof out, &err), 0);
    assert_string_equal(out, want);
}

static void test_proc_fd_describe_names_this_process_sockets_pipes_and_files(void **state)
{
    (void)state;
    struct fds f;
    struct pt_error err = {0};
    char want[DESC];
    char local[64];
    char remote[64];
    open_fds(&f);
    struct proc *p = proc_open(getpid(), &err);
    struct proc_net *net = proc_net_new();
    assert_non_null(p);
    assert_non_null(net);

    names_of(f.listener, local, NULL, sizeof local);
    snprintf(want, sizeof want, "socket TCP %s (listening)", local);
    expect_fd(p, net, f.listener, want);
    names_of(f.client, local, remote, sizeof local);
    snprintf(want, sizeof want, "socket TCP %s->%s", local, remote);
    expect_fd(p, net, f.client, want);
    names_of(f.served, local, remote, sizeof local);
    snprintf(want, sizeof want, "socket TCP %s->%s", local, remote);
    expect_fd(p, net, f.served, want);
    names_of(f.udp, local, NULL, sizeof local);
    snprintf(want, sizeof want, "socket UDP %s", local);
    expect_fd(p, net, f.udp, want);
    expect_fd(p, net, f.pipe[0], "pipe");
    expect_fd(p, net, f.pipe[1], "pipe");
    expect_fd(p, net, f.pair[0], "socket UNIX");
    snprintf(want, sizeof want, "socket UNIX %s (listening)", f.sock_path);
    expect_fd(p, net, f.named, want);
    expect_fd(p, net, f.file, f.file_path);
    expect_fd(p, net, f.event, "eventfd");
    expect_fd(p, net, f.epoll, "epoll");
    expect_fd(p, NULL, f.client, "socket"); /* no tables to look in */

    /* Cut to fit. */
    char small[5];
    assert_int_equal(proc_fd_describe(p, net, f.pipe[0], small, sizeof small, &err), 0);
    assert_string_equal(small, "pipe");
    assert_int_equal(proc_fd_describe(p, net, f.file, small, sizeof small, &err), 0);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, f.file_path, sizeof small - 1);

    /* The tables are read once: a socket made since is found after a reset. */
    int late = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(late, (struct sockaddr *)&a, sizeof a), 0);
    expect_fd(p, net, late, "socket");
    proc_net_reset(net);
    names_of(late, local, NULL, sizeof local);
    snprintf(want, sizeof want, "socket UDP %s", local);
    expect_fd(p, net, late, want);
    close(late);

    /* An fd that is not open. */
    char out[DESC];
    int rc = proc_fd_describe(p, net, late, out, sizeof out, &err);
    expect_error(rc, &err, PT_E_IO);
    assert_int_equal(err.sys_errno, ENOENT);

    proc_net_free(net);
    proc_close(p);
    close_fds(&f);
}

static int compare_ints(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static void test_proc_epoll_fds_lists_what_an_epoll_watches(void **state)
{
    (void)state;
    struct fds f;
    struct pt_error err = {0};
    open_fds(&f);
    struct proc *p = proc_open(getpid(), &err);
    assert_non_null(p);
    int fds[8];
    size_t n = 99;
    assert_int_equal(proc_epoll_fds(p, f.epoll, fds, 8, &n, &err), 0);
    assert_int_equal(n, 2);
    qsort(fds, n, sizeof fds[0], compare_ints);
    int want[2] = {f.pipe[0] < f.event ? f.pipe[0] : f.event,
                   f.pipe[0] < f.event ? f.event : f.pipe[0]};
    assert_memory_equal(fds, want, sizeof want);

    expect_error(proc_epoll_fds(p, f.epoll, fds, 1, &n, &err), &err, PT_E_LIMIT);
    assert_int_equal(n, 1);
    assert_true(fds[0] == f.pipe[0] || fds[0] == f.event);

    assert_int_equal(proc_epoll_fds(p, f.pipe[0], fds, 8, &n, &err), 0); /* watches nothing */
    assert_int_equal(n, 0);
    close(f.file);
    expect_error(proc_epoll_fds(p, f.file, fds, 8, &n, &err), &err, PT_E_IO);
    f.file = -1;
    proc_close(p);
    close_fds(&f);
}

/* A thread blocked in read() on a pipe, and its kernel thread id. */
struct reader {
    int fd;
    volatile pid_t tid;
};

static void *read_body(void *arg)
{
    struct reader *r = arg;
    char byte;
    r->tid = (pid_t)syscall(SYS_gettid);
    while (read(r->fd, &byte, 1) < 0 && errno == EINTR) {
    }
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_proc_task_syscall_sees_a_thread_blocked_in_read(void **state)
{
    (void)state;
    int fds[2];
    struct pt_error err = {0};
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    struct reader r = {fds[0], 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_body, &r), 0);
    struct proc *p = proc_open(getpid(), &err);
    assert_non_null(p);
    struct proc_syscall s = {0};
    bool blocked = false;
    for (int ms = 0; ms < WAIT_MS && !blocked; ms++) {
        if (r.tid != 0) {
            assert_int_equal(proc_task_syscall(p, r.tid, &s, &err), 0);
            blocked = !s.running && s.nr == SYS_read && s.args[0] == (uint64_t)fds[0];
        }
        if (!blocked) {
            sleep_ms(1);
        }
    }
    assert_true(blocked);
#if defined(__x86_64__) || defined(__aarch64__)
    assert_string_equal(proc_syscall_name(s.nr), "read");
    assert_int_equal(proc_syscall_class(s.nr), PROC_SYS_FD);
#endif
    assert_int_equal(s.args[2], 1);
    assert_true(s.sp != 0 && s.pc != 0);

    /* This thread asks of itself from within the read of the file (lib/syscall.c): read(), or
     * pread() of the descriptor kept open from the last time. */
    assert_int_equal(proc_task_syscall(p, (pid_t)syscall(SYS_gettid), &s, &err), 0);
    assert_false(s.running);
    assert_true(s.nr == SYS_read || s.nr == SYS_pread64);
    assert_int_equal(proc_task_syscall(p, (pid_t)syscall(SYS_gettid), &s, &err), 0);
    assert_int_equal(s.nr, SYS_pread64);

    assert_int_equal(write(fds[1], "x", 1), 1);
    assert_int_equal(pthread_join(th, NULL), 0);
    expect_error(proc_task_syscall(p, r.tid, &s, &err), &err, PT_E_GONE);
    assert_non_null(strstr(err.msg, "thread"));
    proc_close(p);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_syscall_parse_reads_running_idle_and_blocked_threads),
        cmocka_unit_test(test_proc_syscall_parse_rejects_garbage_and_truncated_lines),
        cmocka_unit_test(test_proc_syscall_names_and_classes_match_this_architecture),
        cmocka_unit_test(test_proc_net_parse_inet_reads_ipv4_ipv6_and_listening_sockets),
        cmocka_unit_test(test_proc_net_parse_unix_reads_named_abstract_and_unnamed_sockets),
        cmocka_unit_test(test_proc_net_parsers_skip_bad_lines_and_refuse_tables_without_any),
        cmocka_unit_test(test_proc_net_describe_inode_trusts_no_inode_a_unix_path_could_forge),
        cmocka_unit_test(test_proc_net_parse_unix_keeps_the_first_sockets_past_the_limit),
        cmocka_unit_test(test_proc_fd_describe_names_this_process_sockets_pipes_and_files),
        cmocka_unit_test(test_proc_epoll_fds_lists_what_an_epoll_watches),
        cmocka_unit_test(test_proc_task_syscall_sees_a_thread_blocked_in_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
