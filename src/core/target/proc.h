/* proc: one target process (memory, mappings, threads, files seen through its root). */
#ifndef PYTOP_CORE_PROC_H
#define PYTOP_CORE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pt_error;

enum {
    PROC_READ_MAX = 1 << 24, /* largest single read */
    PROC_IOV_MAX = 1024,     /* most regions in one proc_read_many() call */
};

/* One region of target memory to copy into DST. */
struct proc_iov {
    uint64_t addr;
    void *dst;
    size_t len;
};

/* One line of /proc/PID/maps. PATH is "" for anonymous mappings. */
struct proc_map {
    uint64_t start;
    uint64_t end;
    uint64_t offset;
    uint64_t inode;
    bool readable;
    bool writable;
    bool executable;
    char *path;
};

/* What the kernel says of one thread (from /proc/PID/task/TID/stat). */
struct proc_task_stat {
    char state;          /* R, S, D, T, Z, ... */
    uint64_t utime;      /* clock ticks */
    uint64_t stime;      /* clock ticks */
    uint64_t start_time; /* when the thread started: clock ticks after boot */
    int processor;
};

/* How much I/O the handle has done, for benchmarks. */
struct proc_counters {
    uint64_t syscalls;   /* memory-read system calls */
    uint64_t bytes;      /* bytes read from target memory (with the gaps between regions
                          * that proc_read_many() read as one) */
};

struct proc;

/* Opens PID for reading. Errors: PT_E_NOPROC, PT_E_PERM. The caller closes it. */
struct proc *proc_open(pid_t pid, struct pt_error *err);
void proc_close(struct proc *p);
pid_t proc_pid(const struct proc *p);

/* Whether the process has exec()ed since the handle was opened (or last reopened): 1 it has
 * (the memory the handle reads is another program's now), 0 not, or cannot be told. One
 * system call: check it when reads fail and now and then, not per read. Errors: PT_E_GONE
 * once the process has exited. */
int proc_exec_check(struct proc *p, struct pt_error *err);

/* After an exec, makes P read the new image: forgets the old image's memory handle, mappings,
 * thread files and read-ahead. Errors: PT_E_GONE, PT_E_PERM, PT_E_IO. */
int proc_reopen(struct proc *p, struct pt_error *err);

/* Copies exactly LEN bytes at ADDR into DST, or fails: PT_E_READ (naming ADDR), PT_E_GONE,
 * PT_E_PERM. LEN is at most PROC_READ_MAX. */
int proc_read_bytes(struct proc *p, uint64_t addr, void *dst, size_t len, struct pt_error *err);

/* Reads N regions (N <= PROC_IOV_MAX) in as few system calls as the OS allows; regions that lie
 * close together (on one page, or a few hundred bytes apart) are read as one, in any order and
 * also when they overlap. Every region is read completely or the call fails as
 * proc_read_bytes() does. */
int proc_read_many(struct proc *p, const struct proc_iov *iov, size_t n, struct pt_error *err);

/* Reads N regions as proc_read_many() does, but from the target itself, never from the
 * read-ahead copy (nor recorded for it): every value was in the target's memory at some
 * moment after the call began. */
int proc_read_now(struct proc *p, const struct proc_iov *iov, size_t n, struct pt_error *err);

/* Reads the mappings afresh. *MAPS stays valid until the next proc_maps() or proc_close(). */
int proc_maps(struct proc *p, const struct proc_map **maps, size_t *n, struct pt_error *err);

/* Parses the text of a maps file; pure, in proc_parse.c like proc_stat_parse(). On success *OUT
 * (N entries) is owned by the caller and freed with proc_maps_free(). Errors: PT_E_FORMAT,
 * PT_E_LIMIT, PT_E_NOMEM. */
int proc_maps_parse(const char *text, size_t len, struct proc_map **out, size_t *n,
                    struct pt_error *err);
void proc_maps_free(struct proc_map *maps, size_t n);

/* Lists the kernel thread ids of the process into TIDS (at most MAX), sorted ascending. */
int proc_tasks(struct proc *p, pid_t *tids, size_t max, size_t *n, struct pt_error *err);

/* How many threads the process has now (the link count of /proc/PID/task is two more), in one
 * system call and without listing them: a hint for sizing, 0 when unknown. */
size_t proc_thread_count(struct proc *p);

/* Reads one thread's state. Errors: PT_E_GONE when the thread has exited. The handle keeps the
 * thread's stat file open (close-on-exec; closed once the thread is seen gone or long unread,
 * and by proc_close()), so reading the same thread again costs one system call. */
int proc_task_stat(struct proc *p, pid_t tid, struct proc_task_stat *st, struct pt_error *err);

/* The CPU time thread TID has run, in nanoseconds (the first field of its schedstat: cheaper
 * for the kernel to give than stat, and exact). Cached fds as proc_task_stat(). Errors:
 * PT_E_GONE, PT_E_FORMAT, PT_E_IO. */
int proc_task_cputime(struct proc *p, pid_t tid, uint64_t *ns, struct pt_error *err);

/* Reads thread TID's /proc/PID/task/TID/syscall (what it waits in, proc_wait.h) into BUF, at
 * most SIZE bytes, through a cached fd as proc_task_stat(). Returns the length, or -1 with
 * errno set (ENOENT or ESRCH: the thread exited). */
ssize_t proc_task_syscall_text(struct proc *p, pid_t tid, char *buf, size_t size);

/* How long the process has run, in seconds. Errors: PT_E_GONE, PT_E_IO. */
int proc_age(struct proc *p, double *seconds, struct pt_error *err);

/* Parses the text of a /proc/.../stat file. Errors: PT_E_FORMAT. */
int proc_stat_parse(const char *text, size_t len, struct proc_task_stat *st,
                    struct pt_error *err);

/* What /proc/PID/status says of who a process is (the lines that decide ptrace(2) access). */
struct proc_status {
    bool has_ids;    /* both the Uid: and Gid: lines were read */
    uint64_t uid[4]; /* real, effective, saved, filesystem */
    uint64_t gid[4];
    bool has_cap_eff;
    uint64_t cap_eff; /* CapEff: the effective capabilities, bit N for capability N */
};

/* Parses the text of a /proc/.../status file; lines it does not use are skipped. Errors:
 * PT_E_FORMAT (an Uid:, Gid: or CapEff: line it cannot read). */
int proc_status_parse(const char *text, size_t len, struct proc_status *st, struct pt_error *err);

/* What this process can tell of why it may not read process PID (ptrace(2)'s access check,
 * which process_vm_readv() and /proc/PID/mem make): for naming the cause after PT_E_PERM.
 * Each int is 1 yes, 0 no, -1 not known. */
struct proc_access {
    int ptrace_cap;   /* CAP_SYS_PTRACE is among this process's effective capabilities */
    int same_user;    /* the target's real, effective and saved uid and gid are our real ones */
    int same_userns;  /* the target is in this process's user namespace (0: another, where our
                       * capabilities do not count unless it lies below ours) */
    int dumpable;     /* 0: the kernel protects the target as not dumpable (prctl
                       * PR_SET_DUMPABLE 0, a setuid or file-capability program) */
    int ptrace_scope; /* kernel.yama.ptrace_scope; -1 without Yama */
    char lsm[96];     /* the security-module label this process is confined by (AppArmor,
                       * SELinux); "" when unconfined or not known */
};

/* Fills *OUT for PID as far as it can be told from here; never fails (unknowns are -1). */
void proc_access_facts(pid_t pid, struct proc_access *out);

/* Opens PATH as the target sees it (through /proc/PID/root; a relative PATH from the target's
 * working directory), read-only; only regular files. Returns an fd. */
int proc_open_file(struct proc *p, const char *path, struct pt_error *err);

/* The target's command line with NULs turned to spaces, into BUF (always NUL-terminated). */
int proc_cmdline(struct proc *p, char *buf, size_t size, struct pt_error *err);

/* The target's arguments as the kernel keeps them (/proc/PID/cmdline: each NUL-terminated),
 * at most SIZE bytes into BUF; *LEN is how many, *CUT whether there were more. *LEN is 0 for a
 * process that shows none (a zombie, a kernel thread). Errors: PT_E_GONE, PT_E_IO. */
int proc_argv(struct proc *p, char *buf, size_t size, size_t *len, bool *cut, struct pt_error *err);

/* When the process started, in seconds since the epoch, to the kernel's clock tick. Errors:
 * PT_E_GONE, PT_E_IO. */
int proc_started(struct proc *p, double *epoch, struct pt_error *err);

/* The path /proc/PID/exe points to, into BUF. */
int proc_exe(struct proc *p, char *buf, size_t size, struct pt_error *err);

/* Stops every thread of the target (SIGSTOP-free: ptrace seize+interrupt) and resumes them. */
int proc_pause(struct proc *p, struct pt_error *err);
void proc_resume(struct proc *p);

/* Clock ticks per second, for proc_task_stat times. */
long proc_clock_ticks(void);

struct proc_counters proc_get_counters(const struct proc *p);

/* Read-ahead across walks that repeat (a snapshot per refresh of a target that changes
 * little): proc_readahead_begin() reads, in as few system calls as it can, every region read
 * between the last begin and end, then serves reads that fall inside those regions from that
 * copy (as of that moment, as one batch would), and records this walk's regions for the next
 * begin; proc_readahead_end() stops both. The record is bounded (PROC_READAHEAD_*): a walk
 * past the bounds reads the rest as usual. */
enum {
    PROC_READAHEAD_REGIONS = 1 << 18,
    PROC_READAHEAD_BYTES = 32 << 20,
};
void proc_readahead_begin(struct proc *p);
void proc_readahead_end(struct proc *p);

/* Calls FN with each region read since the last proc_readahead_begin() (as recorded for the
 * next one, so within its bounds), until FN returns nonzero. For tools that capture what a
 * walk reads (tests/fuzz/capture.c). */
typedef int (*proc_region_fn)(void *ctx, uint64_t addr, size_t len);
void proc_readahead_each(const struct proc *p, proc_region_fn fn, void *ctx);

#endif
