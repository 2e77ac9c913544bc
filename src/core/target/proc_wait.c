/* proc_wait: the kernel's view of what a thread waits in: its system call (task/TID/syscall),
 * what its descriptors are (fd links, the socket tables of net/), what an epoll watches. */
#include "config.h"

#include "core/target/proc_wait.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/target/proc.h"
#include "core/util/error.h"
#include "core/util/limits.h"

enum {
    SYSCALL_BYTES = 512,   /* "NR" and 8 values of "0x" and 16 digits: under 200 */
    LINE_BUF = 1 << 16,    /* what a streamed /proc file is read in */
    UNIX_PATH_BYTES = 108, /* sun_path (including the '@' of an abstract name) */
    ACCEPTCON = 0x10000,   /* __SO_ACCEPTCON in /proc/net/unix's Flags */
    TCP_LISTEN = 0x0a,
};

/* The socket tables, in the order of a struct proc_net's loaded[]. */
enum net_table { NET_TCP, NET_TCP6, NET_UDP, NET_UDP6, NET_UNIX, NET_TABLES };

static const char *const table_names[NET_TABLES] = {"tcp", "tcp6", "udp", "udp6", "unix"};

/* A read position in text that is not NUL-terminated. */
struct cursor {
    const char *at;
    const char *end;
};

static bool take_char(struct cursor *c, char ch)
{
    bool ok = c->at < c->end && *c->at == ch;
    c->at += ok;
    return ok;
}

static bool take_word(struct cursor *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->at) < n || memcmp(c->at, word, n) != 0) {
        return false;
    }
    c->at += n;
    return true;
}

static size_t skip_blanks(struct cursor *c)
{
    const char *start = c->at;
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t')) {
        c->at++;
    }
    return (size_t)(c->at - start);
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    if (ch >= 'A' && ch <= 'F') {
        return ch - 'A' + 10;
    }
    return -1;
}

/* Takes one or more digits in BASE (10 or 16, either case) whose value fits in 64 bits; at
 * most MAX_DIGITS of them (0: any number). */
static bool take_number(struct cursor *c, unsigned base, size_t max_digits, uint64_t *out)
{
    uint64_t v = 0;
    const char *start = c->at;
    for (; c->at < c->end; c->at++) {
        int d = hex_value(*c->at);
        if (d < 0 || (unsigned)d >= base) {
            break;
        }
        if ((max_digits > 0 && (size_t)(c->at - start) == max_digits) ||
            __builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, (uint64_t)d, &v)) {
            return false;
        }
    }
    *out = v;
    return c->at != start;
}

/* Takes the rest of the line up to the next blank (or its end) as a field. */
static struct cursor take_field(struct cursor *c)
{
    skip_blanks(c);
    struct cursor f = {c->at, c->at};
    while (c->at < c->end && *c->at != ' ' && *c->at != '\t') {
        c->at++;
    }
    f.end = c->at;
    return f;
}

/* Splits off the line at C (without its '\n'); false at the end of the text. */
static bool take_line(struct cursor *c, struct cursor *line)
{
    if (c->at >= c->end) {
        return false;
    }
    const char *nl = memchr(c->at, '\n', (size_t)(c->end - c->at));
    *line = (struct cursor){c->at, nl != NULL ? nl : c->end};
    c->at = nl != NULL ? nl + 1 : c->end;
    return true;
}

int proc_syscall_parse(const char *text, size_t len, struct proc_syscall *out, struct pt_error *err)
{
    struct cursor c = {text, text + len};
    if (c.end > c.at && c.end[-1] == '\n') {
        c.end--;
    }
    struct proc_syscall s = {.nr = -1};
    if (c.end - c.at == 7 && memcmp(c.at, "running", 7) == 0) {
        s.running = true;
        *out = s;
        return 0;
    }
    /* "%d 0x%llx 0x%llx" when not in a call (NR -1), else the 6 arguments come between. */
    bool negative = take_char(&c, '-');
    uint64_t nr;
    if (!take_number(&c, 10, 0, &nr) || nr > LONG_MAX) {
        return pt_error_set(err, PT_E_FORMAT, 0, "syscall: no system call number");
    }
    uint64_t v[8];
    size_t nv = negative ? 2 : 8;
    for (size_t i = 0; i < nv; i++) {
        if (!take_char(&c, ' ') || !take_word(&c, "0x") || !take_number(&c, 16, 16, &v[i])) {
            return pt_error_set(err, PT_E_FORMAT, 0, "syscall: value %zu missing or malformed",
                                i + 1);
        }
    }
    if (c.at != c.end) {
        return pt_error_set(err, PT_E_FORMAT, 0, "syscall: bytes after the last value");
    }
    if (!negative) {
        s.nr = (long)nr;
        memcpy(s.args, v, sizeof s.args);
    }
    s.sp = v[nv - 2];
    s.pc = v[nv - 1];
    *out = s;
    return 0;
}

/* True when P's process no longer runs: no such process, or only its zombie is left. */
static bool process_gone(struct proc *p)
{
    pid_t pid = proc_pid(p);
    if (kill(pid, 0) < 0 && errno == ESRCH) {
        return true;
    }
    char path[64];
    char buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT || errno == ESRCH;
    }
    ssize_t len;
    do {
        len = read(fd, buf, sizeof buf);
    } while (len < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    struct proc_task_stat st;
    if (len < 0) {
        return e == ESRCH;
    }
    return proc_stat_parse(buf, (size_t)len, &st, NULL) == 0 &&
           (st.state == 'Z' || st.state == 'X');
}

/* Names what went wrong opening or reading WHAT (a /proc file of P) with errno E. An fd or a
 * thread that is not there while the process runs is PT_E_IO, not PT_E_GONE, which callers
 * take to mean the target exited. Returns -1. */
static int file_failed(struct proc *p, int e, const char *what, struct pt_error *err)
{
    int pid = (int)proc_pid(p);
    if (e == ESRCH || (e == ENOENT && process_gone(p))) {
        return pt_error_set(err, PT_E_GONE, e, "process %d exited", pid);
    }
    if (e == EPERM || e == EACCES) {
        return pt_error_set(err, PT_E_PERM, e, "not allowed to read the %s of process %d", what,
                            pid);
    }
    if (e == ENOENT) {
        return pt_error_set(err, PT_E_IO, e, "process %d has no %s", pid, what);
    }
    return pt_error_set(err, PT_E_IO, e, "cannot read the %s of process %d: %s", what, pid,
                        strerror(e));
}

static int open_file(struct proc *p, const char *name, const char *what, struct pt_error *err)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)proc_pid(p), name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return file_failed(p, errno, what, err);
    }
    return fd;
}

/* The thread's errno E from opening or reading its syscall file as the error a caller sees. */
static int task_failed(struct proc *p, pid_t tid, int e, struct pt_error *err)
{
    char path[64];
    struct stat sb;
    snprintf(path, sizeof path, "/proc/%d/task/%d", (int)proc_pid(p), (int)tid);
    if (e == ENOENT && stat(path, &sb) == 0) {
        /* The file exists only where the kernel has CONFIG_HAVE_ARCH_TRACEHOOK. */
        return pt_error_set(err, PT_E_IO, ENOSYS, "the kernel shows no thread's system call");
    }
    if ((e == ENOENT || e == ESRCH) && !process_gone(p)) {
        return pt_error_set(err, PT_E_GONE, e, "thread %d of process %d exited", (int)tid,
                            (int)proc_pid(p));
    }
    return file_failed(p, e, "thread syscall", err);
}

int proc_task_syscall(struct proc *p, pid_t tid, struct proc_syscall *out, struct pt_error *err)
{
    char path[96];
    char buf[SYSCALL_BYTES];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)proc_pid(p), (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return task_failed(p, tid, errno, err);
    }
    ssize_t len;
    do {
        len = read(fd, buf, sizeof buf);
    } while (len < 0 && errno == EINTR);
    int e = len == 0 ? ESRCH : errno; /* empty: the thread went while the file was open */
    close(fd);
    if (len <= 0) {
        return task_failed(p, tid, e, err);
    }
    if ((size_t)len == sizeof buf) {
        return pt_error_set(err, PT_E_FORMAT, 0, "syscall of thread %d is over %zu bytes", (int)tid,
                            sizeof buf - 1);
    }
    if (proc_syscall_parse(buf, (size_t)len, out, err) < 0) {
        return pt_error_prefix(err, "thread %d of process %d", (int)tid, (int)proc_pid(p));
    }
    return 0;
}

/* What the syscall tables know of one number. */
struct sys_entry {
    const char *name;
    enum proc_sys_class cls;
};

/* The 64-bit ABI's numbers: arch/x86/entry/syscalls/syscall_64.tbl, and for aarch64
 * include/uapi/asm-generic/unistd.h; the system calls a thread is commonly found in, and every
 * one that waits. A 32-bit (compat) target numbers its calls otherwise: they read as these. */
/* Packed, rather than one entry a line: */
/* clang-format off */
#if defined(__x86_64__)
static const struct sys_entry sys_table[] = {
    [0] = {"read", PROC_SYS_FD}, [1] = {"write", PROC_SYS_FD}, [2] = {"open"},
    [3] = {"close", PROC_SYS_FD}, [4] = {"stat"}, [5] = {"fstat"}, [6] = {"lstat"},
    [7] = {"poll", PROC_SYS_POLL}, [8] = {"lseek"}, [9] = {"mmap"}, [10] = {"mprotect"},
    [11] = {"munmap"}, [12] = {"brk"}, [13] = {"rt_sigaction"}, [14] = {"rt_sigprocmask"},
    [15] = {"rt_sigreturn"}, [16] = {"ioctl", PROC_SYS_FD}, [17] = {"pread64", PROC_SYS_FD},
    [18] = {"pwrite64", PROC_SYS_FD}, [19] = {"readv", PROC_SYS_FD}, [20] = {"writev", PROC_SYS_FD},
    [21] = {"access"}, [22] = {"pipe"}, [23] = {"select", PROC_SYS_SELECT}, [24] = {"sched_yield"},
    [25] = {"mremap"}, [26] = {"msync"}, [27] = {"mincore"}, [28] = {"madvise"}, [32] = {"dup"},
    [33] = {"dup2"}, [34] = {"pause", PROC_SYS_PAUSE}, [35] = {"nanosleep", PROC_SYS_SLEEP},
    [39] = {"getpid"}, [40] = {"sendfile", PROC_SYS_FD}, [41] = {"socket"},
    [42] = {"connect", PROC_SYS_FD}, [43] = {"accept", PROC_SYS_FD}, [44] = {"sendto", PROC_SYS_FD},
    [45] = {"recvfrom", PROC_SYS_FD}, [46] = {"sendmsg", PROC_SYS_FD},
    [47] = {"recvmsg", PROC_SYS_FD}, [48] = {"shutdown"}, [49] = {"bind"}, [50] = {"listen"},
    [51] = {"getsockname"}, [52] = {"getpeername"}, [53] = {"socketpair"}, [54] = {"setsockopt"},
    [55] = {"getsockopt"}, [56] = {"clone"}, [57] = {"fork"}, [58] = {"vfork"}, [59] = {"execve"},
    [60] = {"exit"}, [61] = {"wait4", PROC_SYS_CHILD}, [62] = {"kill"}, [63] = {"uname"},
    [65] = {"semop"}, [69] = {"msgsnd"}, [70] = {"msgrcv"}, [72] = {"fcntl", PROC_SYS_FD},
    [73] = {"flock", PROC_SYS_FD}, [74] = {"fsync", PROC_SYS_FD}, [75] = {"fdatasync", PROC_SYS_FD},
    [79] = {"getcwd"}, [80] = {"chdir"}, [95] = {"umask"}, [96] = {"gettimeofday"},
    [98] = {"getrusage"}, [99] = {"sysinfo"}, [101] = {"ptrace"},
    [128] = {"rt_sigtimedwait", PROC_SYS_PAUSE}, [130] = {"rt_sigsuspend", PROC_SYS_PAUSE},
    [131] = {"sigaltstack"}, [137] = {"statfs"}, [138] = {"fstatfs"}, [157] = {"prctl"},
    [186] = {"gettid"}, [200] = {"tkill"}, [202] = {"futex", PROC_SYS_FUTEX},
    [203] = {"sched_setaffinity"}, [204] = {"sched_getaffinity"}, [208] = {"io_getevents"},
    [217] = {"getdents64"}, [220] = {"semtimedop"}, [228] = {"clock_gettime"},
    [230] = {"clock_nanosleep", PROC_SYS_SLEEP}, [231] = {"exit_group"},
    [232] = {"epoll_wait", PROC_SYS_EPOLL}, [233] = {"epoll_ctl"}, [234] = {"tgkill"},
    [242] = {"mq_timedsend", PROC_SYS_FD}, [243] = {"mq_timedreceive", PROC_SYS_FD},
    [247] = {"waitid", PROC_SYS_CHILD}, [257] = {"openat"}, [258] = {"mkdirat"},
    [262] = {"newfstatat"}, [263] = {"unlinkat"}, [267] = {"readlinkat"}, [269] = {"faccessat"},
    [270] = {"pselect6", PROC_SYS_SELECT}, [271] = {"ppoll", PROC_SYS_POLL},
    [273] = {"set_robust_list"}, [275] = {"splice", PROC_SYS_FD}, [276] = {"tee", PROC_SYS_FD},
    [277] = {"sync_file_range", PROC_SYS_FD}, [281] = {"epoll_pwait", PROC_SYS_EPOLL},
    [288] = {"accept4", PROC_SYS_FD}, [290] = {"eventfd2"}, [291] = {"epoll_create1"},
    [292] = {"dup3"}, [293] = {"pipe2"}, [295] = {"preadv", PROC_SYS_FD},
    [296] = {"pwritev", PROC_SYS_FD}, [299] = {"recvmmsg", PROC_SYS_FD},
    [307] = {"sendmmsg", PROC_SYS_FD}, [310] = {"process_vm_readv"}, [318] = {"getrandom"},
    [324] = {"membarrier"}, [327] = {"preadv2", PROC_SYS_FD}, [328] = {"pwritev2", PROC_SYS_FD},
    [332] = {"statx"}, [333] = {"io_pgetevents"}, [334] = {"rseq"},
    [426] = {"io_uring_enter", PROC_SYS_FD}, [435] = {"clone3"},
    [441] = {"epoll_pwait2", PROC_SYS_EPOLL}, [449] = {"futex_waitv"},
};
#elif defined(__aarch64__)
static const struct sys_entry sys_table[] = {
    [4] = {"io_getevents"}, [17] = {"getcwd"}, [19] = {"eventfd2"}, [20] = {"epoll_create1"},
    [21] = {"epoll_ctl"}, [22] = {"epoll_pwait", PROC_SYS_EPOLL}, [23] = {"dup"}, [24] = {"dup3"},
    [25] = {"fcntl", PROC_SYS_FD}, [29] = {"ioctl", PROC_SYS_FD}, [32] = {"flock", PROC_SYS_FD},
    [34] = {"mkdirat"}, [35] = {"unlinkat"}, [43] = {"statfs"}, [44] = {"fstatfs"},
    [48] = {"faccessat"}, [49] = {"chdir"}, [56] = {"openat"}, [57] = {"close", PROC_SYS_FD},
    [59] = {"pipe2"}, [61] = {"getdents64"}, [62] = {"lseek"}, [63] = {"read", PROC_SYS_FD},
    [64] = {"write", PROC_SYS_FD}, [65] = {"readv", PROC_SYS_FD}, [66] = {"writev", PROC_SYS_FD},
    [67] = {"pread64", PROC_SYS_FD}, [68] = {"pwrite64", PROC_SYS_FD},
    [69] = {"preadv", PROC_SYS_FD}, [70] = {"pwritev", PROC_SYS_FD},
    [71] = {"sendfile", PROC_SYS_FD}, [72] = {"pselect6", PROC_SYS_SELECT},
    [73] = {"ppoll", PROC_SYS_POLL}, [76] = {"splice", PROC_SYS_FD}, [77] = {"tee", PROC_SYS_FD},
    [78] = {"readlinkat"}, [79] = {"newfstatat"}, [80] = {"fstat"}, [82] = {"fsync", PROC_SYS_FD},
    [83] = {"fdatasync", PROC_SYS_FD}, [84] = {"sync_file_range", PROC_SYS_FD}, [93] = {"exit"},
    [94] = {"exit_group"}, [95] = {"waitid", PROC_SYS_CHILD}, [98] = {"futex", PROC_SYS_FUTEX},
    [99] = {"set_robust_list"}, [101] = {"nanosleep", PROC_SYS_SLEEP}, [113] = {"clock_gettime"},
    [115] = {"clock_nanosleep", PROC_SYS_SLEEP}, [117] = {"ptrace"}, [122] = {"sched_setaffinity"},
    [123] = {"sched_getaffinity"}, [124] = {"sched_yield"}, [129] = {"kill"}, [130] = {"tkill"},
    [131] = {"tgkill"}, [132] = {"sigaltstack"}, [133] = {"rt_sigsuspend", PROC_SYS_PAUSE},
    [134] = {"rt_sigaction"}, [135] = {"rt_sigprocmask"},
    [137] = {"rt_sigtimedwait", PROC_SYS_PAUSE}, [139] = {"rt_sigreturn"}, [160] = {"uname"},
    [165] = {"getrusage"}, [166] = {"umask"}, [167] = {"prctl"}, [169] = {"gettimeofday"},
    [172] = {"getpid"}, [178] = {"gettid"}, [179] = {"sysinfo"},
    [182] = {"mq_timedsend", PROC_SYS_FD}, [183] = {"mq_timedreceive", PROC_SYS_FD},
    [188] = {"msgrcv"}, [189] = {"msgsnd"}, [192] = {"semtimedop"}, [193] = {"semop"},
    [198] = {"socket"}, [199] = {"socketpair"}, [200] = {"bind"}, [201] = {"listen"},
    [202] = {"accept", PROC_SYS_FD}, [203] = {"connect", PROC_SYS_FD}, [204] = {"getsockname"},
    [205] = {"getpeername"}, [206] = {"sendto", PROC_SYS_FD}, [207] = {"recvfrom", PROC_SYS_FD},
    [208] = {"setsockopt"}, [209] = {"getsockopt"}, [210] = {"shutdown"},
    [211] = {"sendmsg", PROC_SYS_FD}, [212] = {"recvmsg", PROC_SYS_FD}, [214] = {"brk"},
    [215] = {"munmap"}, [216] = {"mremap"}, [220] = {"clone"}, [221] = {"execve"}, [222] = {"mmap"},
    [226] = {"mprotect"}, [227] = {"msync"}, [232] = {"mincore"}, [233] = {"madvise"},
    [242] = {"accept4", PROC_SYS_FD}, [243] = {"recvmmsg", PROC_SYS_FD},
    [260] = {"wait4", PROC_SYS_CHILD}, [269] = {"sendmmsg", PROC_SYS_FD},
    [270] = {"process_vm_readv"}, [278] = {"getrandom"}, [283] = {"membarrier"},
    [286] = {"preadv2", PROC_SYS_FD}, [287] = {"pwritev2", PROC_SYS_FD}, [291] = {"statx"},
    [292] = {"io_pgetevents"}, [293] = {"rseq"}, [426] = {"io_uring_enter", PROC_SYS_FD},
    [435] = {"clone3"}, [441] = {"epoll_pwait2", PROC_SYS_EPOLL}, [449] = {"futex_waitv"},
};
#else
static const struct sys_entry sys_table[] = {{NULL, PROC_SYS_OTHER}};
#endif
/* clang-format on */

static const struct sys_entry *sys_entry(long nr)
{
    if (nr < 0 || (unsigned long)nr >= sizeof sys_table / sizeof sys_table[0] ||
        sys_table[nr].name == NULL) {
        return NULL;
    }
    return &sys_table[nr];
}

const char *proc_syscall_name(long nr)
{
    const struct sys_entry *e = sys_entry(nr);
    return e != NULL ? e->name : NULL;
}

enum proc_sys_class proc_syscall_class(long nr)
{
    const struct sys_entry *e = sys_entry(nr);
    return e != NULL ? e->cls : PROC_SYS_OTHER;
}

/* One socket of the tables. */
struct net_sock {
    uint64_t inode;
    uint8_t addr[2][16]; /* local and remote, in network order (the first 4 bytes for IPv4) */
    uint16_t port[2];
    uint32_t path_off; /* a Unix socket's name: PATH_LEN bytes at paths + PATH_OFF */
    uint8_t path_len;
    uint8_t table; /* enum net_table */
    bool listening;
};

struct proc_net {
    struct net_sock *socks; /* sorted by inode once a table is in */
    size_t n;
    size_t cap;
    char *paths;
    size_t paths_len;
    size_t paths_cap;
    bool loaded[NET_TABLES];
};

/* A NUL-terminated description being written into CAP bytes, cut to fit. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
};

static struct out out_begin(char *buf, size_t cap)
{
    if (cap > 0) {
        buf[0] = '\0';
    }
    return (struct out){buf, cap, 0};
}

static void put_bytes(struct out *o, const char *s, size_t n)
{
    if (o->cap == 0) {
        return;
    }
    size_t room = o->cap - 1 - o->len;
    n = n < room ? n : room;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void put_str(struct out *o, const char *s)
{
    put_bytes(o, s, strlen(s));
}

struct proc_net *proc_net_new(void)
{
    return calloc(1, sizeof(struct proc_net));
}

void proc_net_free(struct proc_net *n)
{
    if (n == NULL) {
        return;
    }
    free(n->socks);
    free(n->paths);
    free(n);
}

void proc_net_reset(struct proc_net *n)
{
    if (n == NULL) {
        return;
    }
    /* The buffers stay for the next tables, which are much the same size. */
    n->n = 0;
    n->paths_len = 0;
    memset(n->loaded, 0, sizeof n->loaded);
}

/* One table being parsed, line by line. */
struct table_parse {
    struct proc_net *net;
    enum net_table table;
    size_t lines; /* the header included */
    size_t good;  /* entry lines read, those of inode 0 too */
    size_t bad;
    size_t added;
    size_t first_n; /* where the table's entries start, to take them out again */
    size_t first_paths;
    bool full; /* LIMIT_NET_SOCKETS entries are in */
};

static struct table_parse table_begin(struct proc_net *n, enum net_table table)
{
    return (struct table_parse){
        .net = n, .table = table, .first_n = n->n, .first_paths = n->paths_len};
}

static bool grow(void **buf, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap) {
        return true;
    }
    size_t bigger = *cap == 0 ? first : *cap * 2;
    bigger = bigger < need ? need : bigger;
    void *grown = realloc(*buf, bigger * size);
    if (grown == NULL) {
        return false;
    }
    *buf = grown;
    *cap = bigger;
    return true;
}

static int add_sock(struct table_parse *t, struct net_sock *s, struct cursor path,
                    struct pt_error *err)
{
    struct proc_net *n = t->net;
    size_t path_len = (size_t)(path.end - path.at);
    if (t->added == LIMIT_NET_SOCKETS) {
        t->full = true;
        return pt_error_set(err, PT_E_LIMIT, 0, "more than %d sockets in the %s table",
                            LIMIT_NET_SOCKETS, table_names[t->table]);
    }
    if (!grow((void **)&n->socks, &n->cap, n->n + 1, sizeof *n->socks, 256) ||
        !grow((void **)&n->paths, &n->paths_cap, n->paths_len + path_len, 1, 4096)) {
        return pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for the %s table",
                            table_names[t->table]);
    }
    /* At most 5 tables of LIMIT_NET_SOCKETS names of UNIX_PATH_BYTES: the offset fits. */
    s->path_off = (uint32_t)n->paths_len;
    s->path_len = (uint8_t)path_len;
    if (path_len > 0) {
        memcpy(n->paths + n->paths_len, path.at, path_len);
    }
    n->paths_len += path_len;
    n->socks[n->n++] = *s;
    t->added++;
    return 0;
}

/* "ADDR:PORT" of /proc/net/tcp: the address as 1 (IPv4) or 4 (IPv6) 32-bit words of 8 hex
 * digits, each the bytes in network order read as a host-order number; the port in hex. */
static bool take_endpoint(struct cursor f, bool ipv6, uint8_t addr[16], uint16_t *port)
{
    for (size_t i = 0; i < (ipv6 ? 4u : 1u); i++) {
        uint64_t v;
        struct cursor word = {f.at, f.end - f.at >= 8 ? f.at + 8 : f.end};
        if (word.end - word.at != 8 || !take_number(&word, 16, 8, &v) || word.at != word.end) {
            return false;
        }
        uint32_t host = (uint32_t)v;
        memcpy(addr + 4 * i, &host, sizeof host);
        f.at = word.end;
    }
    uint64_t p;
    if (!take_char(&f, ':') || !take_number(&f, 16, 4, &p) || f.at != f.end) {
        return false;
    }
    *port = (uint16_t)p;
    return true;
}

/* "sl: local remote st tx:rx tr:when retrnsmt uid timeout inode ..." (tcp4_seq_show(),
 * udp4_format_sock() and their IPv6 forms). Returns NULL or what is wrong with the line. */
static const char *parse_inet_line(struct cursor c, enum net_table table, struct net_sock *s)
{
    bool ipv6 = table == NET_TCP6 || table == NET_UDP6;
    struct cursor sl = take_field(&c);
    if (sl.at == sl.end || sl.end[-1] != ':') {
        return "no slot number";
    }
    if (!take_endpoint(take_field(&c), ipv6, s->addr[0], &s->port[0]) ||
        !take_endpoint(take_field(&c), ipv6, s->addr[1], &s->port[1])) {
        return "bad address";
    }
    uint64_t state;
    struct cursor st = take_field(&c);
    if (!take_number(&st, 16, 2, &state) || st.at != st.end) {
        return "bad state";
    }
    for (int i = 4; i < 9; i++) {
        struct cursor f = take_field(&c);
        if (f.at == f.end) {
            return "too few fields";
        }
    }
    struct cursor inode = take_field(&c);
    if (!take_number(&inode, 10, 0, &s->inode) || inode.at != inode.end) {
        return "bad inode";
    }
    s->listening = (table == NET_TCP || table == NET_TCP6) && state == TCP_LISTEN;
    return NULL;
}

/* "Num: RefCount Protocol Flags Type St Inode[ Path]" (unix_seq_show()): the path is the rest
 * of the line, '@' first for an abstract name, its NUL bytes shown as '@'. */
static const char *parse_unix_line(struct cursor c, struct net_sock *s, struct cursor *path)
{
    struct cursor num = take_field(&c);
    if (num.at == num.end || num.end[-1] != ':') {
        return "no slot";
    }
    uint64_t v[5]; /* RefCount, Protocol, Flags, Type, St */
    for (size_t i = 0; i < 5; i++) {
        struct cursor f = take_field(&c);
        if (!take_number(&f, 16, 8, &v[i]) || f.at != f.end) {
            return "bad field";
        }
    }
    skip_blanks(&c);
    if (!take_number(&c, 10, 0, &s->inode)) {
        return "bad inode";
    }
    *path = (struct cursor){c.end, c.end};
    if (c.at < c.end) {
        if (!take_char(&c, ' ') || c.at == c.end || c.end - c.at > UNIX_PATH_BYTES ||
            memchr(c.at, '\0', (size_t)(c.end - c.at)) != NULL) {
            return "bad path";
        }
        *path = c;
    }
    s->listening = (v[2] & ACCEPTCON) != 0;
    return NULL;
}

static int table_line(void *ctx, struct cursor line, struct pt_error *err)
{
    struct table_parse *t = ctx;
    if (t->lines++ == 0) {
        const char *want = t->table == NET_UNIX ? "Num" : "sl";
        struct cursor head = take_field(&line);
        if ((size_t)(head.end - head.at) != strlen(want) ||
            memcmp(head.at, want, strlen(want)) != 0) {
            return pt_error_set(err, PT_E_FORMAT, 0, "%s table: no header", table_names[t->table]);
        }
        return 0;
    }
    struct net_sock s = {.table = (uint8_t)t->table};
    struct cursor path = {line.end, line.end};
    const char *problem = t->table == NET_UNIX ? parse_unix_line(line, &s, &path)
                                               : parse_inet_line(line, t->table, &s);
    if (problem != NULL) {
        t->bad++;
        return 0;
    }
    t->good++;
    return s.inode == 0 ? 0 : add_sock(t, &s, path, err);
}

static int compare_inodes(const void *a, const void *b)
{
    uint64_t x = ((const struct net_sock *)a)->inode;
    uint64_t y = ((const struct net_sock *)b)->inode;
    return (x > y) - (x < y);
}

/* Ends the table that RC (0 or -1) says how its lines went: takes its entries out again on
 * failure, but for reaching the limit, and sorts the rest for lookups. */
static int table_finish(struct table_parse *t, int rc, struct pt_error *err)
{
    struct proc_net *n = t->net;
    if (rc == 0 && t->lines == 0) {
        rc = pt_error_set(err, PT_E_FORMAT, 0, "%s table: empty", table_names[t->table]);
    } else if (rc == 0 && t->good == 0 && t->bad > 0) {
        rc = pt_error_set(err, PT_E_FORMAT, 0, "%s table: none of its %zu lines could be read",
                          table_names[t->table], t->bad);
    }
    if (rc < 0 && !t->full) {
        n->n = t->first_n;
        n->paths_len = t->first_paths;
    }
    if (n->n > 0) {
        qsort(n->socks, n->n, sizeof *n->socks, compare_inodes);
    }
    return rc;
}

static int parse_table(struct proc_net *n, enum net_table table, const char *text, size_t len,
                       struct pt_error *err)
{
    struct table_parse t = table_begin(n, table);
    struct cursor c = {text, text + len};
    struct cursor line;
    int rc = 0;
    while (rc == 0 && take_line(&c, &line)) {
        rc = table_line(&t, line, err);
    }
    return table_finish(&t, rc, err);
}

int proc_net_parse_inet(struct proc_net *n, const char *text, size_t len, bool udp, bool ipv6,
                        struct pt_error *err)
{
    enum net_table table = udp ? (ipv6 ? NET_UDP6 : NET_UDP) : (ipv6 ? NET_TCP6 : NET_TCP);
    return parse_table(n, table, text, len, err);
}

int proc_net_parse_unix(struct proc_net *n, const char *text, size_t len, struct pt_error *err)
{
    return parse_table(n, NET_UNIX, text, len, err);
}

static void put_endpoint(struct out *o, const uint8_t addr[16], bool ipv6, uint16_t port)
{
    char host[INET6_ADDRSTRLEN];
    char text[INET6_ADDRSTRLEN + 16];
    if (inet_ntop(ipv6 ? AF_INET6 : AF_INET, addr, host, sizeof host) == NULL) {
        snprintf(host, sizeof host, "?");
    }
    if (ipv6) {
        snprintf(text, sizeof text, "[%s]:%u", host, (unsigned)port);
    } else {
        snprintf(text, sizeof text, "%s:%u", host, (unsigned)port);
    }
    put_str(o, text);
}

static void describe_sock(const struct proc_net *n, const struct net_sock *s, struct out *o)
{
    if (s->table == NET_UNIX) {
        put_str(o, "socket UNIX");
        if (s->path_len > 0) {
            put_str(o, " ");
            put_bytes(o, n->paths + s->path_off, s->path_len);
        }
        if (s->listening) {
            put_str(o, " (listening)");
        }
        return;
    }
    bool ipv6 = s->table == NET_TCP6 || s->table == NET_UDP6;
    put_str(o, s->table == NET_TCP || s->table == NET_TCP6 ? "socket TCP " : "socket UDP ");
    put_endpoint(o, s->addr[0], ipv6, s->port[0]);
    if (s->listening) {
        put_str(o, " (listening)");
    } else if (s->port[1] != 0) {
        put_str(o, "->");
        put_endpoint(o, s->addr[1], ipv6, s->port[1]);
    }
}

bool proc_net_describe_inode(const struct proc_net *n, uint64_t inode, char *out, size_t cap)
{
    struct out o = out_begin(out, cap);
    if (n == NULL || n->n == 0) {
        return false;
    }
    struct net_sock key = {.inode = inode};
    const struct net_sock *s = bsearch(&key, n->socks, n->n, sizeof key, compare_inodes);
    if (s == NULL || (s > n->socks && s[-1].inode == inode) ||
        (s + 1 < n->socks + n->n && s[1].inode == inode)) {
        return false;
    }
    describe_sock(n, s, &o);
    return true;
}

typedef int (*line_fn)(void *ctx, struct cursor line, struct pt_error *err);

/* Calls FN with each line of FD (WHAT, a /proc file of P) without its '\n', until FN fails. A
 * line longer than LINE_BUF (none of the kernel's) is passed cut to that, its rest skipped. */
static int read_lines(struct proc *p, int fd, const char *what, line_fn fn, void *ctx,
                      struct pt_error *err)
{
    char *buf = malloc(LINE_BUF);
    if (buf == NULL) {
        return pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory to read the %s of process %d", what,
                            (int)proc_pid(p));
    }
    size_t len = 0;
    bool skip = false;
    int rc = 0;
    while (rc == 0) {
        ssize_t got;
        do {
            got = read(fd, buf + len, LINE_BUF - len);
        } while (got < 0 && errno == EINTR);
        if (got < 0) {
            rc = file_failed(p, errno, what, err);
            break;
        }
        len += (size_t)got;
        struct cursor c = {buf, buf + len};
        const char *nl;
        while (rc == 0 && (nl = memchr(c.at, '\n', (size_t)(c.end - c.at))) != NULL) {
            rc = skip ? 0 : fn(ctx, (struct cursor){c.at, nl}, err);
            skip = false;
            c.at = nl + 1;
        }
        size_t rest = (size_t)(c.end - c.at);
        if (rc == 0 && got == 0) {
            rc = rest > 0 && !skip ? fn(ctx, c, err) : 0;
            break;
        }
        if (rc == 0 && rest == LINE_BUF) {
            rc = skip ? 0 : fn(ctx, c, err);
            skip = true;
            rest = 0;
        }
        memmove(buf, c.at, rest);
        len = rest;
    }
    free(buf);
    return rc;
}

/* Reads /proc/PID/net/TABLE into N. A table the kernel does not have (tcp6 without IPv6) is
 * empty; one past LIMIT_NET_SOCKETS keeps what fits. */
static int load_table(struct proc *p, struct proc_net *n, enum net_table table,
                      struct pt_error *err)
{
    char name[32];
    struct pt_error open_err = {0};
    snprintf(name, sizeof name, "net/%s", table_names[table]);
    int fd = open_file(p, name, name, &open_err);
    if (fd < 0) {
        if (open_err.code == PT_E_IO && open_err.sys_errno == ENOENT) {
            n->loaded[table] = true;
            return 0;
        }
        if (err != NULL) {
            *err = open_err;
        }
        return -1;
    }
    struct table_parse t = table_begin(n, table);
    int rc = read_lines(p, fd, name, table_line, &t, err);
    close(fd);
    if (table_finish(&t, rc, err) < 0 && !t.full) {
        return pt_error_prefix(err, "%s of process %d", name, (int)proc_pid(p));
    }
    n->loaded[table] = true;
    return 0;
}

/* Which tables can hold socket FD, as a bit per enum net_table: by its protocol's name as
 * sockfs gives it ("TCP", "UDPv6", "UNIX-STREAM"), or all of them when that cannot be read; 0
 * for a protocol no table lists (netlink, raw, ...). */
static unsigned tables_for(struct proc *p, int fd)
{
    static const struct {
        const char *name;
        enum net_table table;
    } protos[] = {{"TCP", NET_TCP},    {"TCPv6", NET_TCP6}, {"UDP", NET_UDP},
                  {"UDPv6", NET_UDP6}, {"UNIX", NET_UNIX},  {"UNIX-STREAM", NET_UNIX}};
    char path[64];
    char proto[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)proc_pid(p), fd);
    ssize_t len = getxattr(path, "system.sockprotoname", proto, sizeof proto - 1);
    if (len <= 0) {
        return (1u << NET_TABLES) - 1;
    }
    proto[len] = '\0'; /* the kernel's name ends in a NUL of its own */
    for (size_t i = 0; i < sizeof protos / sizeof protos[0]; i++) {
        if (strcmp(proto, protos[i].name) == 0) {
            return 1u << protos[i].table;
        }
    }
    return 0;
}

static int describe_socket(struct proc *p, struct proc_net *net, int fd, uint64_t inode,
                           struct out *o, struct pt_error *err)
{
    unsigned want = net != NULL ? tables_for(p, fd) : 0;
    for (int t = 0; t < NET_TABLES; t++) {
        if ((want >> t & 1) && !net->loaded[t] && load_table(p, net, t, err) < 0) {
            return -1;
        }
    }
    if (want == 0 || !proc_net_describe_inode(net, inode, o->buf, o->cap)) {
        put_str(o, "socket");
    }
    return 0;
}

int proc_fd_describe(struct proc *p, struct proc_net *net, int fd, char *out, size_t cap,
                     struct pt_error *err)
{
    static const struct {
        const char *link;
        const char *says;
    } anon[] = {{"anon_inode:[eventfd]", "eventfd"},
                {"anon_inode:[eventpoll]", "epoll"},
                {"anon_inode:[signalfd]", "signalfd"},
                {"anon_inode:[timerfd]", "timerfd"}};
    struct out o = out_begin(out, cap);
    char path[64];
    char link[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)proc_pid(p), fd);
    ssize_t len = readlink(path, link, sizeof link);
    if (len < 0) {
        char what[32];
        snprintf(what, sizeof what, "fd %d", fd);
        return file_failed(p, errno, what, err);
    }
    for (size_t i = 0; i < sizeof anon / sizeof anon[0]; i++) {
        if ((size_t)len == strlen(anon[i].link) && memcmp(link, anon[i].link, (size_t)len) == 0) {
            put_str(&o, anon[i].says);
            return 0;
        }
    }
    struct cursor c = {link, link + len};
    uint64_t inode;
    if (take_word(&c, "pipe:[")) {
        put_str(&o, "pipe");
        return 0;
    }
    if (take_word(&c, "socket:[") && take_number(&c, 10, 0, &inode) && take_char(&c, ']') &&
        c.at == c.end) {
        return describe_socket(p, net, fd, inode, &o, err);
    }
    /* A path longer than LINK is cut by readlink() as it would be by CAP. */
    put_bytes(&o, link, (size_t)len);
    return 0;
}

/* The descriptors of an epoll's fdinfo, as far as they fit. */
struct epoll_parse {
    int *fds;
    size_t max;
    size_t n;
    bool more; /* a descriptor past MAX */
};

/* "tfd: %8d events: %8x data: %16llx  pos:%lli ino:%lx sdev:%x" (ep_show_fdinfo()). */
static int epoll_line(void *ctx, struct cursor line, struct pt_error *err)
{
    struct epoll_parse *e = ctx;
    uint64_t fd;
    if (!take_word(&line, "tfd:")) {
        return 0;
    }
    skip_blanks(&line);
    if (!take_number(&line, 10, 0, &fd) || fd > INT_MAX ||
        (line.at < line.end && skip_blanks(&line) == 0)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "malformed tfd line");
    }
    if (e->n == e->max) {
        e->more = true;
        return pt_error_set(err, PT_E_LIMIT, 0, "watches more than %zu descriptors", e->max);
    }
    e->fds[e->n++] = (int)fd;
    return 0;
}

int proc_epoll_fds(struct proc *p, int epfd, int *fds, size_t max, size_t *n, struct pt_error *err)
{
    char name[32];
    *n = 0;
    snprintf(name, sizeof name, "fdinfo/%d", epfd);
    int fd = open_file(p, name, name, err);
    if (fd < 0) {
        return -1;
    }
    struct epoll_parse e = {fds, max, 0, false};
    int rc = read_lines(p, fd, name, epoll_line, &e, err);
    close(fd);
    *n = rc == 0 || e.more ? e.n : 0;
    if (rc < 0) {
        return pt_error_prefix(err, "epoll fd %d of process %d", epfd, (int)proc_pid(p));
    }
    return 0;
}
