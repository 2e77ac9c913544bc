/* liveview: the live view put together: the command started, the sampling thread on the
 * target, the statistics' window chosen, and the screen shown on them. */
#include "config.h"

#include "app/liveview.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "core/util/error.h"
#include "app/live.h"
#include "app/spawn.h"
#include "ui/ui.h"

static const double SPAWN_GRACE_S = 2.0; /* a command still running at quit: SIGTERM, then KILL */

/* How far back the statistics reach: --window, else as long as the refresh interval, within
 * 1 to 60 s. */
static double first_window(const struct cli_options *opts)
{
    if (opts->window_s > 0) {
        return opts->window_s;
    }
    return opts->delay < 1 ? 1 : opts->delay > 60 ? 60 : opts->delay;
}

/* Starts the command, if there is one, then the sampling thread, into *T. Returns 0, or -1
 * with ERR set. */
static int start_target(const struct cli_options *o, double window, int wake_fd,
                        struct ui_target *t, struct pt_error *err)
{
    t->pid = o->pid;
    if (o->command != NULL) {
        t->spawn = spawn_open(o->command, err);
        if (t->spawn == NULL) {
            return -1;
        }
        t->pid = t->spawn->pid;
    }
    struct live_opts lo = {
        .pid = t->pid,
        .rate_hz = o->rate_hz,
        .window_s = window,
        .period_s = o->delay,
        .blocking = o->blocking,
        .mode = o->sample_mode,
        .active_only = o->active_only,
        .no_gc_frames = o->no_gc_frames,
        .opcodes = o->opcodes,
        .native = o->native,
        .wait_for_frame = o->command != NULL,
        .wake_fd = wake_fd,
        .replay = o->replay,
    };
    t->live = live_open(&lo, err);
    return t->live != NULL ? 0 : -1;
}

int liveview_run(const struct cli_options *opts)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "pytop: the live view needs a terminal; for a file or a pipe use "
                        "--dump (one snapshot) or -b (batch mode)\n");
        return CLI_EXIT_USAGE;
    }
    setlocale(LC_ALL, "");
    int wake[2];
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "pytop: pipe: %s\n", strerror(errno));
        return CLI_EXIT_TARGET;
    }
    double window = first_window(opts);
    struct ui_target t = {0};
    struct pt_error err = {0};
    bool failed = false;
    /* The terminal first: a command is started only once it can be shown. */
    int status = ui_open(opts, window, wake);
    if (status == CLI_EXIT_OK) {
        if (start_target(opts, window, wake[1], &t, &err) == 0) {
            ui_show(&t);
        } else {
            failed = true;
        }
    }
    if (ui_close()) {
        status = CLI_EXIT_TARGET;
    }
    live_close(t.live);
    spawn_close(t.spawn, SPAWN_GRACE_S);
    close(wake[0]);
    close(wake[1]);
    if (failed) {
        fprintf(stderr, "pytop: %s\n", err.msg);
        status = CLI_EXIT_TARGET;
    }
    return status;
}
