/* spawn: the command of `pytop -- CMD`, started with its output sent to a log file. */
#include "config.h"

#include "app/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util/error.h"

enum { NAME_CHARS = 24 };

/* "pytop-NAME-XXXXXX.log" in $TMPDIR: NAME is the command's base name, cut to safe
 * characters, so that a listing of /tmp tells the logs apart. */
static int open_log(const char *cmd, char *path, size_t size, struct pt_error *err)
{
    const char *dir = getenv("TMPDIR");
    const char *base = strrchr(cmd, '/') != NULL ? strrchr(cmd, '/') + 1 : cmd;
    char name[NAME_CHARS + 1];
    size_t n = 0;
    for (const char *c = base; *c != '\0' && n < NAME_CHARS; c++) {
        bool safe = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-';
        name[n++] = safe ? *c : '_';
    }
    name[n] = '\0';
    if (dir == NULL || dir[0] == '\0') {
        dir = "/tmp";
    }
    int w = snprintf(path, size, "%s/pytop-%s-XXXXXX.log", dir, n > 0 ? name : "cmd");
    if (w < 0 || (size_t)w >= size) {
        return pt_error_set(err, PT_E_IO, ENAMETOOLONG, "TMPDIR is too long");
    }
    int fd = mkostemps(path, 4, O_CLOEXEC);
    if (fd < 0) {
        return pt_error_set(err, PT_E_IO, errno, "cannot create a log file in %s: %s", dir,
                            strerror(errno));
    }
    return fd;
}

/* In the child, between fork and exec: only async-signal-safe calls. Reports a failure as its
 * errno on REPORT and exits. */
static void exec_child(char *const argv[], int log_fd, int report)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Ignored signals stay ignored across exec: give the command the usual ones back. */
    for (int sig = 1; sig < NSIG; sig++) {
        signal(sig, SIG_DFL);
    }
    setpgid(0, 0);
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
        goto failed;
    }
    execvp(argv[0], argv);
failed:;
    int e = errno;
    ssize_t w = write(report, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* Waits for the child's report: nothing (the pipe closed on exec) means it runs. */
static int read_report(int fd)
{
    int e = 0;
    ssize_t r;
    do {
        r = read(fd, &e, sizeof e);
    } while (r < 0 && errno == EINTR);
    return r == (ssize_t)sizeof e ? e : 0;
}

struct spawn *spawn_open(char *const argv[], struct pt_error *err)
{
    struct spawn *sp = calloc(1, sizeof *sp);
    int report[2] = {-1, -1};
    if (sp == NULL) {
        pt_error_set(err, PT_E_NOMEM, ENOMEM, "starting %s", argv[0]);
        return NULL;
    }
    int log_fd = open_log(argv[0], sp->log_path, sizeof sp->log_path, err);
    if (log_fd < 0 || pipe2(report, O_CLOEXEC) < 0) {
        if (log_fd >= 0) {
            pt_error_set(err, PT_E_IO, errno, "pipe: %s", strerror(errno));
        }
        goto failed;
    }
    sp->pid = fork();
    if (sp->pid == 0) {
        close(report[0]);
        exec_child(argv, log_fd, report[1]);
    }
    int fork_errno = errno;
    close(report[1]);
    close(log_fd);
    log_fd = -1;
    int e = sp->pid < 0 ? fork_errno : read_report(report[0]);
    close(report[0]);
    if (e != 0) {
        pt_error_set(err, PT_E_IO, e, "cannot run %s: %s", argv[0], strerror(e));
        if (sp->pid > 0) {
            waitpid(sp->pid, NULL, 0);
        }
        unlink(sp->log_path);
        free(sp);
        return NULL;
    }
    return sp;
failed:
    if (log_fd >= 0) {
        close(log_fd);
        unlink(sp->log_path);
    }
    free(sp);
    return NULL;
}

bool spawn_poll(struct spawn *sp)
{
    if (sp == NULL || sp->exited) {
        return sp != NULL;
    }
    int status;
    pid_t r;
    do {
        r = waitpid(sp->pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == sp->pid || (r < 0 && errno == ECHILD)) {
        sp->exited = true;
        sp->status = r == sp->pid ? status : 0;
    }
    return sp->exited;
}

static void sleep_briefly(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

void spawn_close(struct spawn *sp, double grace_s)
{
    if (sp == NULL) {
        return;
    }
    if (!spawn_poll(sp)) {
        kill(sp->pid, SIGTERM);
        for (double waited = 0; waited < grace_s && !spawn_poll(sp); waited += 0.02) {
            sleep_briefly();
        }
        if (!spawn_poll(sp)) {
            kill(sp->pid, SIGKILL);
            waitpid(sp->pid, NULL, 0);
        }
    }
    free(sp);
}

void spawn_describe(const struct spawn *sp, char *buf, size_t size)
{
    if (!sp->exited) {
        snprintf(buf, size, "running");
    } else if (WIFEXITED(sp->status)) {
        snprintf(buf, size, "exit status %d", WEXITSTATUS(sp->status));
    } else if (WIFSIGNALED(sp->status)) {
        const char *name = sigabbrev_np(WTERMSIG(sp->status));
        snprintf(buf, size, "killed by SIG%s%s", name != NULL ? name : "?",
                 WCOREDUMP(sp->status) ? ", core dumped" : "");
    } else {
        snprintf(buf, size, "ended (status 0x%x)", (unsigned)sp->status);
    }
}
