/* target: the process batch and dump modes read: -p PID, or a command pytop starts and waits
 * for until its interpreter runs Python code. */
#ifndef PYTOP_TARGET_H
#define PYTOP_TARGET_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/target/runtime.h"

struct cli_options;
struct proc;
struct pt_error;
struct spawn;

struct target {
    pid_t pid;
    struct spawn *spawn; /* the command pytop started; NULL with -p */
    struct proc *proc;
    struct runtime rt;
};

/* Opens the target OPTS name into T. With -p it is located at once. A command (-- CMD) is
 * started (spawn_open(); stderr names its log file) and waited for until its main thread runs
 * Python code; after a couple of seconds stderr says what it waits for. The wait ends early
 * when the command ends (saying how, and why it could not be read) or *STOP is set. Returns 0,
 * or the exit status (enum cli_exit) after saying why on stderr; T is then closed. */
int target_open(struct target *t, const struct cli_options *opts, volatile sig_atomic_t *stop);

/* Ends a command pytop started if it still runs (SIGTERM, then SIGKILL two seconds later),
 * reaps it, and closes T's handle. T may be zeroed. */
void target_close(struct target *t);

/* How the started command ended ("exit status 3", "killed by SIGKILL") into BUF, reaping it
 * if it did, waiting up to WAIT_S seconds for that (its memory is gone a moment before it can
 * be reaped); false while it runs, or when pytop did not start it. */
bool target_ended(struct target *t, double wait_s, char *buf, size_t size);

/* True when some thread of P runs Python code: the main thread, if the target says which;
 * else false with ERR set (PT_E_NOTPY: no Python code yet; or why it could not be read). */
bool target_runs_python(struct proc *p, const struct runtime *rt, struct pt_error *err);

#endif
