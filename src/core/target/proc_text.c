/* proc_text: what proc_wait.c (a thread's system call) and proc_net.c (what its descriptors
 * are) share to read the kernel's text under /proc: a cursor over text that is not
 * NUL-terminated, and opening and reading a /proc/PID file, naming what went wrong. */
#include "config.h"

#include "core/target/proc_text.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/target/proc.h"
#include "core/util/error.h"

enum {
    LINE_BUF = 1 << 16, /* what a streamed /proc file is read in */
};

bool proc_text_take_char(struct proc_cursor *c, char ch)
{
    bool ok = c->at < c->end && *c->at == ch;
    c->at += ok;
    return ok;
}

bool proc_text_take_word(struct proc_cursor *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->at) < n || memcmp(c->at, word, n) != 0) {
        return false;
    }
    c->at += n;
    return true;
}

size_t proc_text_skip_blanks(struct proc_cursor *c)
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

bool proc_text_take_number(struct proc_cursor *c, unsigned base, size_t max_digits, uint64_t *out)
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

struct proc_cursor proc_text_take_field(struct proc_cursor *c)
{
    proc_text_skip_blanks(c);
    struct proc_cursor f = {c->at, c->at};
    while (c->at < c->end && *c->at != ' ' && *c->at != '\t') {
        c->at++;
    }
    f.end = c->at;
    return f;
}

bool proc_text_take_line(struct proc_cursor *c, struct proc_cursor *line)
{
    if (c->at >= c->end) {
        return false;
    }
    const char *nl = memchr(c->at, '\n', (size_t)(c->end - c->at));
    *line = (struct proc_cursor){c->at, nl != NULL ? nl : c->end};
    c->at = nl != NULL ? nl + 1 : c->end;
    return true;
}

bool proc_text_process_gone(struct proc *p)
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

int proc_text_file_failed(struct proc *p, int e, const char *what, struct pt_error *err)
{
    int pid = (int)proc_pid(p);
    if (e == ESRCH || (e == ENOENT && proc_text_process_gone(p))) {
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

int proc_text_open(struct proc *p, const char *name, const char *what, struct pt_error *err)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)proc_pid(p), name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return proc_text_file_failed(p, errno, what, err);
    }
    return fd;
}

int proc_text_read_lines(struct proc *p, int fd, const char *what, proc_text_line_fn fn, void *ctx,
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
            rc = proc_text_file_failed(p, errno, what, err);
            break;
        }
        len += (size_t)got;
        struct proc_cursor c = {buf, buf + len};
        const char *nl;
        while (rc == 0 && (nl = memchr(c.at, '\n', (size_t)(c.end - c.at))) != NULL) {
            rc = skip ? 0 : fn(ctx, (struct proc_cursor){c.at, nl}, err);
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
