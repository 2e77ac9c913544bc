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
    char buf[SYSCALL_BYTES];
    ssize_t len = proc_task_syscall_text(p, tid, buf, sizeof buf);
    if (len < 0) {
        return task_failed(p, tid, errno, err);
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
    [0] = {"read", PROC_SYS_FD}, [1] = {"write", PROC_SYS_FD}, [2] = {"open", PROC_SYS_OTHER},
    [3] = {"close", PROC_SYS_FD}, [4] = {"stat", PROC_SYS_OTHER}, [5] = {"fstat", PROC_SYS_OTHER},
    [6] = {"lstat", PROC_SYS_OTHER}, [7] = {"poll", PROC_SYS_POLL}, [8] = {"lseek", PROC_SYS_OTHER},
    [9] = {"mmap", PROC_SYS_OTHER}, [10] = {"mprotect", PROC_SYS_OTHER},
    [11] = {"munmap", PROC_SYS_OTHER}, [12] = {"brk", PROC_SYS_OTHER},
    [13] = {"rt_sigaction", PROC_SYS_OTHER}, [14] = {"rt_sigprocmask", PROC_SYS_OTHER},
    [15] = {"rt_sigreturn", PROC_SYS_OTHER}, [16] = {"ioctl", PROC_SYS_FD},
    [17] = {"pread64", PROC_SYS_FD}, [18] = {"pwrite64", PROC_SYS_FD},
    [19] = {"readv", PROC_SYS_FD}, [20] = {"writev", PROC_SYS_FD},
    [21] = {"access", PROC_SYS_OTHER}, [22] = {"pipe", PROC_SYS_OTHER},
    [23] = {"select", PROC_SYS_SELECT}, [24] = {"sched_yield", PROC_SYS_OTHER},
    [25] = {"mremap", PROC_SYS_OTHER}, [26] = {"msync", PROC_SYS_OTHER},
    [27] = {"mincore", PROC_SYS_OTHER}, [28] = {"madvise", PROC_SYS_OTHER},
    [32] = {"dup", PROC_SYS_OTHER}, [33] = {"dup2", PROC_SYS_OTHER},
    [34] = {"pause", PROC_SYS_PAUSE}, [35] = {"nanosleep", PROC_SYS_SLEEP},
    [39] = {"getpid", PROC_SYS_OTHER}, [40] = {"sendfile", PROC_SYS_FD},
    [41] = {"socket", PROC_SYS_OTHER}, [42] = {"connect", PROC_SYS_FD},
    [43] = {"accept", PROC_SYS_FD}, [44] = {"sendto", PROC_SYS_FD},
    [45] = {"recvfrom", PROC_SYS_FD}, [46] = {"sendmsg", PROC_SYS_FD},
    [47] = {"recvmsg", PROC_SYS_FD}, [48] = {"shutdown", PROC_SYS_OTHER},
    [49] = {"bind", PROC_SYS_OTHER}, [50] = {"listen", PROC_SYS_OTHER},
    [51] = {"getsockname", PROC_SYS_OTHER}, [52] = {"getpeername", PROC_SYS_OTHER},
    [53] = {"socketpair", PROC_SYS_OTHER}, [54] = {"setsockopt", PROC_SYS_OTHER},
    [55] = {"getsockopt", PROC_SYS_OTHER}, [56] = {"clone", PROC_SYS_OTHER},
    [57] = {"fork", PROC_SYS_OTHER}, [58] = {"vfork", PROC_SYS_OTHER},
    [59] = {"execve", PROC_SYS_OTHER}, [60] = {"exit", PROC_SYS_OTHER},
    [61] = {"wait4", PROC_SYS_CHILD}, [62] = {"kill", PROC_SYS_OTHER},
    [63] = {"uname", PROC_SYS_OTHER}, [65] = {"semop", PROC_SYS_OTHER},
    [69] = {"msgsnd", PROC_SYS_OTHER}, [70] = {"msgrcv", PROC_SYS_OTHER},
    [72] = {"fcntl", PROC_SYS_FD}, [73] = {"flock", PROC_SYS_FD}, [74] = {"fsync", PROC_SYS_FD},
    [75] = {"fdatasync", PROC_SYS_FD}, [79] = {"getcwd", PROC_SYS_OTHER},
    [80] = {"chdir", PROC_SYS_OTHER}, [95] = {"umask", PROC_SYS_OTHER},
    [96] = {"gettimeofday", PROC_SYS_OTHER}, [98] = {"getrusage", PROC_SYS_OTHER},
    [99] = {"sysinfo", PROC_SYS_OTHER}, [101] = {"ptrace", PROC_SYS_OTHER},
    [128] = {"rt_sigtimedwait", PROC_SYS_PAUSE}, [130] = {"rt_sigsuspend", PROC_SYS_PAUSE},
    [131] = {"sigaltstack", PROC_SYS_OTHER}, [137] = {"statfs", PROC_SYS_OTHER},
    [138] = {"fstatfs", PROC_SYS_OTHER}, [157] = {"prctl", PROC_SYS_OTHER},
    [186] = {"gettid", PROC_SYS_OTHER}, [200] = {"tkill", PROC_SYS_OTHER},
    [202] = {"futex", PROC_SYS_FUTEX}, [203] = {"sched_setaffinity", PROC_SYS_OTHER},
    [204] = {"sched_getaffinity", PROC_SYS_OTHER}, [208] = {"io_getevents", PROC_SYS_OTHER},
    [217] = {"getdents64", PROC_SYS_OTHER}, [220] = {"semtimedop", PROC_SYS_OTHER},
    [228] = {"clock_gettime", PROC_SYS_OTHER}, [230] = {"clock_nanosleep", PROC_SYS_SLEEP},
    [231] = {"exit_group", PROC_SYS_OTHER}, [232] = {"epoll_wait", PROC_SYS_EPOLL},
    [233] = {"epoll_ctl", PROC_SYS_OTHER}, [234] = {"tgkill", PROC_SYS_OTHER},
    [242] = {"mq_timedsend", PROC_SYS_FD}, [243] = {"mq_timedreceive", PROC_SYS_FD},
    [247] = {"waitid", PROC_SYS_CHILD}, [257] = {"openat", PROC_SYS_OTHER},
    [258] = {"mkdirat", PROC_SYS_OTHER}, [262] = {"newfstatat", PROC_SYS_OTHER},
    [263] = {"unlinkat", PROC_SYS_OTHER}, [267] = {"readlinkat", PROC_SYS_OTHER},
    [269] = {"faccessat", PROC_SYS_OTHER}, [270] = {"pselect6", PROC_SYS_SELECT},
    [271] = {"ppoll", PROC_SYS_POLL}, [273] = {"set_robust_list", PROC_SYS_OTHER},
    [275] = {"splice", PROC_SYS_FD}, [276] = {"tee", PROC_SYS_FD},
    [277] = {"sync_file_range", PROC_SYS_FD}, [281] = {"epoll_pwait", PROC_SYS_EPOLL},
    [288] = {"accept4", PROC_SYS_FD}, [290] = {"eventfd2", PROC_SYS_OTHER},
    [291] = {"epoll_create1", PROC_SYS_OTHER}, [292] = {"dup3", PROC_SYS_OTHER},
    [293] = {"pipe2", PROC_SYS_OTHER}, [295] = {"preadv", PROC_SYS_FD},
    [296] = {"pwritev", PROC_SYS_FD}, [299] = {"recvmmsg", PROC_SYS_FD},
    [307] = {"sendmmsg", PROC_SYS_FD}, [310] = {"process_vm_readv", PROC_SYS_OTHER},
    [318] = {"getrandom", PROC_SYS_OTHER}, [324] = {"membarrier", PROC_SYS_OTHER},
    [327] = {"preadv2", PROC_SYS_FD}, [328] = {"pwritev2", PROC_SYS_FD},
    [332] = {"statx", PROC_SYS_OTHER}, [333] = {"io_pgetevents", PROC_SYS_OTHER},
    [334] = {"rseq", PROC_SYS_OTHER}, [426] = {"io_uring_enter", PROC_SYS_FD},
    [435] = {"clone3", PROC_SYS_OTHER}, [441] = {"epoll_pwait2", PROC_SYS_EPOLL},
    [449] = {"futex_waitv", PROC_SYS_OTHER},
};
#elif defined(__aarch64__)
static const struct sys_entry sys_table[] = {
    [4] = {"io_getevents", PROC_SYS_OTHER}, [17] = {"getcwd", PROC_SYS_OTHER},
    [19] = {"eventfd2", PROC_SYS_OTHER}, [20] = {"epoll_create1", PROC_SYS_OTHER},
    [21] = {"epoll_ctl", PROC_SYS_OTHER}, [22] = {"epoll_pwait", PROC_SYS_EPOLL},
    [23] = {"dup", PROC_SYS_OTHER}, [24] = {"dup3", PROC_SYS_OTHER}, [25] = {"fcntl", PROC_SYS_FD},
    [29] = {"ioctl", PROC_SYS_FD}, [32] = {"flock", PROC_SYS_FD},
    [34] = {"mkdirat", PROC_SYS_OTHER}, [35] = {"unlinkat", PROC_SYS_OTHER},
    [43] = {"statfs", PROC_SYS_OTHER}, [44] = {"fstatfs", PROC_SYS_OTHER},
    [48] = {"faccessat", PROC_SYS_OTHER}, [49] = {"chdir", PROC_SYS_OTHER},
    [56] = {"openat", PROC_SYS_OTHER}, [57] = {"close", PROC_SYS_FD},
    [59] = {"pipe2", PROC_SYS_OTHER}, [61] = {"getdents64", PROC_SYS_OTHER},
    [62] = {"lseek", PROC_SYS_OTHER}, [63] = {"read", PROC_SYS_FD}, [64] = {"write", PROC_SYS_FD},
    [65] = {"readv", PROC_SYS_FD}, [66] = {"writev", PROC_SYS_FD}, [67] = {"pread64", PROC_SYS_FD},
    [68] = {"pwrite64", PROC_SYS_FD}, [69] = {"preadv", PROC_SYS_FD},
    [70] = {"pwritev", PROC_SYS_FD}, [71] = {"sendfile", PROC_SYS_FD},
    [72] = {"pselect6", PROC_SYS_SELECT}, [73] = {"ppoll", PROC_SYS_POLL},
    [76] = {"splice", PROC_SYS_FD}, [77] = {"tee", PROC_SYS_FD},
    [78] = {"readlinkat", PROC_SYS_OTHER}, [79] = {"newfstatat", PROC_SYS_OTHER},
    [80] = {"fstat", PROC_SYS_OTHER}, [82] = {"fsync", PROC_SYS_FD},
    [83] = {"fdatasync", PROC_SYS_FD}, [84] = {"sync_file_range", PROC_SYS_FD},
    [93] = {"exit", PROC_SYS_OTHER}, [94] = {"exit_group", PROC_SYS_OTHER},
    [95] = {"waitid", PROC_SYS_CHILD}, [98] = {"futex", PROC_SYS_FUTEX},
    [99] = {"set_robust_list", PROC_SYS_OTHER}, [101] = {"nanosleep", PROC_SYS_SLEEP},
    [113] = {"clock_gettime", PROC_SYS_OTHER}, [115] = {"clock_nanosleep", PROC_SYS_SLEEP},
    [117] = {"ptrace", PROC_SYS_OTHER}, [122] = {"sched_setaffinity", PROC_SYS_OTHER},
    [123] = {"sched_getaffinity", PROC_SYS_OTHER}, [124] = {"sched_yield", PROC_SYS_OTHER},
    [129] = {"kill", PROC_SYS_OTHER}, [130] = {"tkill", PROC_SYS_OTHER},
    [131] = {"tgkill", PROC_SYS_OTHER}, [132] = {"sigaltstack", PROC_SYS_OTHER},
    [133] = {"rt_sigsuspend", PROC_SYS_PAUSE}, [134] = {"rt_sigaction", PROC_SYS_OTHER},
    [135] = {"rt_sigprocmask", PROC_SYS_OTHER}, [137] = {"rt_sigtimedwait", PROC_SYS_PAUSE},
    [139] = {"rt_sigreturn", PROC_SYS_OTHER}, [160] = {"uname", PROC_SYS_OTHER},
    [165] = {"getrusage", PROC_SYS_OTHER}, [166] = {"umask", PROC_SYS_OTHER},
    [167] = {"prctl", PROC_SYS_OTHER}, [169] = {"gettimeofday", PROC_SYS_OTHER},
    [172] = {"getpid", PROC_SYS_OTHER}, [178] = {"gettid", PROC_SYS_OTHER},
    [179] = {"sysinfo", PROC_SYS_OTHER}, [182] = {"mq_timedsend", PROC_SYS_FD},
    [183] = {"mq_timedreceive", PROC_SYS_FD}, [188] = {"msgrcv", PROC_SYS_OTHER},
    [189] = {"msgsnd", PROC_SYS_OTHER}, [192] = {"semtimedop", PROC_SYS_OTHER},
    [193] = {"semop", PROC_SYS_OTHER}, [198] = {"socket", PROC_SYS_OTHER},
    [199] = {"socketpair", PROC_SYS_OTHER}, [200] = {"bind", PROC_SYS_OTHER},
    [201] = {"listen", PROC_SYS_OTHER}, [202] = {"accept", PROC_SYS_FD},
    [203] = {"connect", PROC_SYS_FD}, [204] = {"getsockname", PROC_SYS_OTHER},
    [205] = {"getpeername", PROC_SYS_OTHER}, [206] = {"sendto", PROC_SYS_FD},
    [207] = {"recvfrom", PROC_SYS_FD}, [208] = {"setsockopt", PROC_SYS_OTHER},
    [209] = {"getsockopt", PROC_SYS_OTHER}, [210] = {"shutdown", PROC_SYS_OTHER},
    [211] = {"sendmsg", PROC_SYS_FD}, [212] = {"recvmsg", PROC_SYS_FD},
    [214] = {"brk", PROC_SYS_OTHER}, [215] = {"munmap", PROC_SYS_OTHER},
    [216] = {"mremap", PROC_SYS_OTHER}, [220] = {"clone", PROC_SYS_OTHER},
    [221] = {"execve", PROC_SYS_OTHER}, [222] = {"mmap", PROC_SYS_OTHER},
    [226] = {"mprotect", PROC_SYS_OTHER}, [227] = {"msync", PROC_SYS_OTHER},
    [232] = {"mincore", PROC_SYS_OTHER}, [233] = {"madvise", PROC_SYS_OTHER},
    [242] = {"accept4", PROC_SYS_FD}, [243] = {"recvmmsg", PROC_SYS_FD},
    [260] = {"wait4", PROC_SYS_CHILD}, [269] = {"sendmmsg", PROC_SYS_FD},
    [270] = {"process_vm_readv", PROC_SYS_OTHER}, [278] = {"getrandom", PROC_SYS_OTHER},
    [283] = {"membarrier", PROC_SYS_OTHER}, [286] = {"preadv2", PROC_SYS_FD},
    [287] = {"pwritev2", PROC_SYS_FD}, [291] = {"statx", PROC_SYS_OTHER},
    [292] = {"io_pgetevents", PROC_SYS_OTHER}, [293] = {"rseq", PROC_SYS_OTHER},
    [426] = {"io_uring_enter", PROC_SYS_FD}, [435] = {"clone3", PROC_SYS_OTHER},
    [441] = {"epoll_pwait2", PROC_SYS_EPOLL}, [449] = {"futex_waitv", PROC_SYS_OTHER},
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
