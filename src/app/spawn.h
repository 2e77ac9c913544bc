/* spawn: the command of `pytop -- CMD`, started with its output sent to a log file. */
#ifndef PYTOP_SPAWN_H
#define PYTOP_SPAWN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct pt_error;

struct spawn {
    pid_t pid;
    char log_path[PATH_MAX]; /* where its stdout and stderr go */
    bool exited;
    int status; /* as waitpid() gave it, once EXITED */
};

/* Starts ARGV (ARGV[0] looked up in PATH) in a process group of its own, with stdin from
 * /dev/null and stdout and stderr written to a new file (mode 0600) in $TMPDIR, else /tmp.
 * Call it before any thread starts. Errors: PT_E_IO (no log file, no process, or the command
 * could not be executed, with the reason); PT_E_NOMEM. The caller closes it. */
struct spawn *spawn_open(char *const argv[], struct pt_error *err);

/* Ends the command if it still runs (SIGTERM, then SIGKILL after GRACE_S seconds), reaps it
 * and frees SP. The log file stays. */
void spawn_close(struct spawn *sp, double grace_s);

/* Reaps the command if it has ended, without waiting. Returns SP->exited. */
bool spawn_poll(struct spawn *sp);

/* How it ended, in a few words ("exit status 3", "killed by SIGKILL"), into BUF. */
void spawn_describe(const struct spawn *sp, char *buf, size_t size);

#endif
