/* proc_access: why a process may not be read, as facts for the message that says so (uids,
 * capabilities, user namespaces, the security module's label). */
#include "config.h"

#include "core/target/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads up to SIZE - 1 bytes of the small file PATH into BUF, NUL-terminated; the length, or -1
 * when it cannot be read. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    size_t len = 0;
    while (len + 1 < size) {
        ssize_t r = read(fd, buf + len, size - 1 - len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            if (r < 0) {
                len = 0;
                close(fd);
                return -1;
            }
            break;
        }
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

static bool read_status(const char *path, struct proc_status *st)
{
    char text[4096];
    ssize_t n = read_small(path, text, sizeof text);
    return n > 0 && proc_status_parse(text, (size_t)n, st, NULL) == 0;
}

/* Whether PID shares our user namespace: the namespace files' identities where both can be
 * seen (seeing PID's needs the access that failed), else a different uid_map says another. */
static int same_userns(pid_t pid)
{
    char path[64];
    struct stat mine;
    struct stat theirs;
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
    if (stat("/proc/self/ns/user", &mine) == 0 && stat(path, &theirs) == 0) {
        return mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
    }
    char a[1024];
    char b[1024];
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    if (read_small("/proc/self/uid_map", a, sizeof a) >= 0 && read_small(path, b, sizeof b) >= 0 &&
        strcmp(a, b) != 0) {
        return 0;
    }
    return -1;
}

/* The label our security module confines us by, or "" (unconfined, or no module says). */
static void lsm_label(char *buf, size_t size)
{
    static const char *const files[] = {"/proc/self/attr/apparmor/current",
                                        "/proc/self/attr/current"};
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        ssize_t n = read_small(files[i], buf, size);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0')) {
            buf[--n] = '\0';
        }
        if (n > 0) {
            break;
        }
        buf[0] = '\0';
    }
    /* AppArmor says "unconfined", SELinux "unconfined_u:unconfined_r:unconfined_t:...". */
    if (strstr(buf, "unconfined") != NULL) {
        buf[0] = '\0';
    }
    for (char *c = buf; *c != '\0'; c++) {
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) {
            *c = '?';
        }
    }
}

void proc_access_facts(pid_t pid, struct proc_access *out)
{
    enum { CAP_SYS_PTRACE_BIT = 19 }; /* linux/capability.h */
    char path[64];
    struct proc_status self;
    struct proc_status target;
    *out = (struct proc_access){-1, -1, -1, -1, -1, ""};
    if (read_status("/proc/self/status", &self) && self.has_cap_eff) {
        out->ptrace_cap = (int)((self.cap_eff >> CAP_SYS_PTRACE_BIT) & 1u);
    }
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (read_status(path, &target) && target.has_ids) {
        uint64_t uid = getuid();
        uint64_t gid = getgid();
        out->same_user = 1;
        for (int i = 0; i < 3; i++) {
            out->same_user &= target.uid[i] == uid && target.gid[i] == gid;
        }
        /* The kernel gives a process that is not dumpable root as the owner of its /proc files
         * that are not world-readable (task_dump_owner(), fs/proc/base.c), such as mem. */
        struct stat st;
        snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
        if (stat(path, &st) == 0 && target.uid[1] != 0) {
            out->dumpable = st.st_uid == target.uid[1] ? 1 : st.st_uid == 0 ? 0 : -1;
        }
    }
    out->same_userns = same_userns(pid);
    char scope[32];
    if (read_small("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof scope) > 0) {
        char *end;
        long v = strtol(scope, &end, 10);
        out->ptrace_scope = end != scope && v >= 0 && v <= 3 ? (int)v : -1;
    }
    lsm_label(out->lsm, sizeof out->lsm);
}
