/* proc_wait: the kernel's view of what a thread waits in: its system call (task/TID/syscall),
 * its number's name and how that call waits. What its descriptors are is in proc_net.c. */
#include "config.h"

#include "core/target/proc_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/target/proc.h"
#include "core/target/proc_text.h"
#include "core/util/error.h"

enum {
    SYSCALL_BYTES = 512, /* "NR" and 8 values of "0x" and 16 digits: under 200 */
};

int proc_syscall_parse(const char *text, size_t len, struct proc_syscall *out, struct pt_error *err)
{
    struct proc_cursor c = {text, text + len};
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
    bool negative = proc_text_take_char(&c, '-');
    uint64_t nr;
    if (!proc_text_take_number(&c, 10, 0, &nr) || nr > LONG_MAX) {
        return pt_error_set(err, PT_E_FORMAT, 0, "syscall: no system call number");
    }
    uint64_t v[8];
    size_t nv = negative ? 2 : 8;
    for (size_t i = 0; i < nv; i++) {
        if (!proc_text_take_char(&c, ' ') || !proc_text_take_word(&c, "0x") ||
            !proc_text_take_number(&c, 16, 16, &v[i])) {
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
    if ((e == ENOENT || e == ESRCH) && !proc_text_process_gone(p)) {
        return pt_error_set(err, PT_E_GONE, e, "thread %d of process %d exited", (int)tid,
                            (int)proc_pid(p));
    }
    return proc_text_file_failed(p, e, "thread syscall", err);
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
