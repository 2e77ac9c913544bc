/* proc_wait: the kernel's view of what a thread waits in (its system call, the descriptors). */
#ifndef PYTOP_CORE_PROC_WAIT_H
#define PYTOP_CORE_PROC_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc;
struct pt_error;

/* A thread's system call as /proc/PID/task/TID/syscall gives it. */
struct proc_syscall {
    bool running; /* the file says "running" (the thread is not blocked in the kernel) */
    long nr;      /* the system call number; -1 when not in one ("-1 SP PC" line) */
    uint64_t args[6];
    uint64_t sp, pc;
};

/* Parses that file's text: "running", "-1 0xSP 0xPC", or "NR 0xA0 ... 0xA5 0xSP 0xPC" (the
 * kernel's proc_pid_syscall()), with or without the final newline; pure. When RUNNING, or not
 * in a call, the fields the text lacks are 0 (and NR is -1). Errors: PT_E_FORMAT. */
int proc_syscall_parse(const char *text, size_t len, struct proc_syscall *out,
                       struct pt_error *err);

/* Reads it for thread TID of P's process (open, read and close of /proc/PID/task/TID/syscall,
 * which needs the same ptrace access as memory reads; the kernel waits for the thread to be
 * off its CPU, so a running thread reads as "running"). Errors: PT_E_GONE (the thread, or the
 * process, exited), PT_E_PERM, PT_E_IO (also for a kernel without the file), PT_E_FORMAT. */
int proc_task_syscall(struct proc *p, pid_t tid, struct proc_syscall *out, struct pt_error *err);

/* How a system call waits, from its number (this machine's architecture: the x86_64 and
 * aarch64 tables of the 64-bit ABI; elsewhere every number is OTHER and names are NULL). */
enum proc_sys_class {
    PROC_SYS_OTHER = 0,
    PROC_SYS_FUTEX,  /* futex: args[0] the futex word's address, args[1] the op (futex_waitv,
                      * whose args[0] is an array, is OTHER) */
    PROC_SYS_SLEEP,  /* nanosleep (args[0] = const struct timespec *req) and clock_nanosleep
                      * (args[0] clockid, args[1] flags (TIMER_ABSTIME=1), args[2] req) */
    PROC_SYS_FD,     /* one descriptor in args[0]: read, readv, pread64, preadv(2), write,
                      * writev, pwrite64, pwritev(2), recvfrom, recvmsg, recvmmsg, sendto,
                      * sendmsg, sendmmsg, accept, accept4, connect, flock, fcntl (F_SETLKW),
                      * fsync, fdatasync, sync_file_range, ioctl, close, sendfile (the output),
                      * splice and tee (the input), mq_timedsend, mq_timedreceive,
                      * io_uring_enter */
    PROC_SYS_POLL,   /* poll, ppoll: args[0] struct pollfd *, args[1] nfds */
    PROC_SYS_SELECT, /* select, pselect6: args[0] nfds, args[1..3] fd_set *, args[4] timeout */
    PROC_SYS_EPOLL,  /* epoll_wait, epoll_pwait, epoll_pwait2: args[0] the epoll fd */
    PROC_SYS_CHILD,  /* wait4, waitid: args[0] the pid (wait4; waitid's idtype) */
    PROC_SYS_PAUSE,  /* pause, rt_sigsuspend, rt_sigtimedwait (sigwaitinfo, sigtimedwait) */
};

/* The system call's name ("futex", "recvfrom", ...), static storage; NULL when not known. */
const char *proc_syscall_name(long nr);
enum proc_sys_class proc_syscall_class(long nr);

/* What a process's descriptors are, for a person. The socket tables
 * /proc/PID/net/{tcp,tcp6,udp,udp6,unix} are read into a NET lazily, only those a socket
 * lookup needs, and kept until proc_net_reset(); each holds at most LIMIT_NET_SOCKETS entries
 * a table (past that, the rest of a table is left out, and a socket in it is "socket"). */
struct proc_net;

/* NULL when out of memory. */
struct proc_net *proc_net_new(void);
void proc_net_free(struct proc_net *n);
/* Forgets the tables: the next lookup reads them again. */
void proc_net_reset(struct proc_net *n);

/* Writes what descriptor FD of P's process is into OUT, NUL-terminated (CAP bytes at most,
 * cut to fit): "socket TCP 127.0.0.1:5000->127.0.0.1:43122" (local->remote; IPv6 as
 * [::1]:5000; no "->" part while the remote port is 0), "socket TCP 0.0.0.0:5000 (listening)",
 * "socket UDP ...", "socket UNIX /path" (and " (listening)" for a listening one), "socket
 * UNIX @abstract", "socket UNIX" (unnamed), "socket" (another family, not in the tables, or
 * NET NULL), "pipe", "eventfd", "epoll", "signalfd", "timerfd", or else the link
 * /proc/PID/fd/FD as the kernel gives it ("/dev/pts/3", a path with " (deleted)",
 * "anon_inode:inotify"), copied as bytes. A socket reads the table its protocol is listed in
 * (all five when sockfs does not name it) from the target's network namespace into NET, once.
 * Errors: PT_E_GONE (the process exited), PT_E_PERM, PT_E_IO (FD is not open: sys_errno
 * ENOENT), PT_E_FORMAT (a table the kernel wrote unreadably), PT_E_NOMEM. */
int proc_fd_describe(struct proc *p, struct proc_net *net, int fd, char *out, size_t cap,
                     struct pt_error *err);

/* Pure parsers, for the tests and a fuzzer: one /proc/net/tcp|tcp6|udp|udp6 table (UDP and
 * IPV6 tell which), or /proc/net/unix, added to N. The first line must be the table's header;
 * an entry line that cannot be read is skipped, as is a socket with inode 0 (TIME_WAIT).
 * Errors: PT_E_FORMAT (no header, or not one entry line could be read) and PT_E_NOMEM, which
 * leave N as it was; PT_E_LIMIT (more than LIMIT_NET_SOCKETS entries), which keeps the first
 * LIMIT_NET_SOCKETS. */
int proc_net_parse_inet(struct proc_net *n, const char *text, size_t len, bool udp, bool ipv6,
                        struct pt_error *err);
int proc_net_parse_unix(struct proc_net *n, const char *text, size_t len, struct pt_error *err);

/* Looks up a socket inode in N's parsed tables (no reading, O(log n)) and writes its
 * description as proc_fd_describe() would. False when it is not there, or is there twice
 * (a Unix path with a newline can forge a line: then neither is trusted). */
bool proc_net_describe_inode(const struct proc_net *n, uint64_t inode, char *out, size_t cap);

/* The descriptors epoll descriptor EPFD watches, from /proc/PID/fdinfo/EPFD ("tfd: N" lines),
 * in the kernel's order, into FDS; *N how many (0 for a descriptor that is not an epoll).
 * Errors: PT_E_LIMIT when it watches more than MAX (FDS then holds the first MAX and *N is
 * MAX), PT_E_GONE, PT_E_PERM, PT_E_IO (EPFD is not open), PT_E_FORMAT (a malformed tfd: line),
 * PT_E_NOMEM. */
int proc_epoll_fds(struct proc *p, int epfd, int *fds, size_t max, size_t *n, struct pt_error *err);

#endif
