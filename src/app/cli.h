/* cli: the command line: parse options, run the requested mode, map errors to exit statuses. */
#ifndef PYTOP_CLI_H
#define PYTOP_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/sampler/sampler.h"

enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_TARGET = 1, /* the target could not be inspected */
    CLI_EXIT_USAGE = 2,
};

enum cli_mode {
    CLI_MODE_LIVE,
    CLI_MODE_DUMP,
    CLI_MODE_BATCH,
    CLI_MODE_RECORD,   /* --record FILE: the batch loop into a recording */
    CLI_MODE_EXPORT,   /* --export FORMAT: samples into a profile (from --replay, or live) */
    CLI_MODE_HELP,
    CLI_MODE_VERSION,
};

struct cli_options {
    enum cli_mode mode;
    pid_t pid;
    bool json;
    const char *output;
    int iterations;     /* -n; 0 = forever */
    double delay;       /* -d seconds */
    double rate_hz;     /* -r; 0 = as fast as possible */
    bool blocking;
    const char *filter;
    bool no_color;
    bool force;         /* --force: -o may replace an existing file */
    char **command;     /* after --; NULL when attaching to -p */
    double window_s;    /* --window: how far back the statistics reach; INFINITY: since the
                         * last reset ("all"); 0: not given (each mode has its default) */
    bool at_exit;       /* --dump --at-exit: the last snapshot before the target ends */
    enum sampler_mode sample_mode; /* --mode */
    bool active_only;   /* --active-only */
    bool no_gc_frames;  /* --no-gc-frames */
    bool opcodes;       /* --opcodes */
    bool native;        /* --native */
    const char *record; /* --record FILE */
    const char *replay; /* --replay FILE: the recording the mode reads instead of a process */
    int export_format;  /* --export: enum export_format; -1 none */
    double from;        /* --from SECS (0 when not given) */
    double to;          /* --to SECS (INFINITY when not given) */
    double at;          /* --at SECS; NAN: the end */
    pid_t thread;       /* --thread TID; 0 every thread */
};

/* Parses ARGV into OPTS. Returns 0, or -1 after printing a one-line reason to stderr. */
int cli_parse(int argc, char **argv, struct cli_options *opts);

struct pt_error;

/* Prints E as the one-line reason the target could not be inspected, with a hint (permission,
 * not Python, unsupported version), on stderr. Returns CLI_EXIT_TARGET. */
int cli_target_error(const struct pt_error *e, pid_t pid);

/* Opens -o PATH for writing ("-" or NULL: stdout): a new file of mode 0600, never through a
 * symbolic link; with FORCE an existing file is also taken, emptied and made 0600. Prints why
 * it cannot and returns NULL. */
FILE *cli_open_output(const char *path, bool force);

/* Runs what OPTS ask for. Returns the process exit status. */
int cli_run(const struct cli_options *opts);

struct proc;
struct runtime;

/* pytop's settings as options, for a report to say how it was taken: "--dump --rate 100
 * --window 10 --delay 1" (the mode's options first: --dump, --at-exit, -b, --json; --window
 * only when WINDOW_S > 0), with --mode (unless wall), --active-only, --blocking and --filter
 * when set, then " (HOW)" when HOW is not NULL. WINDOW_S, DELAY and MODE are the settings in
 * force (the live view's keys change them). Into BUF, NUL-terminated, cut to SIZE. */
void cli_settings_text(const struct cli_options *opts, double window_s, double delay,
                       enum sampler_mode mode, const char *how, char *buf, size_t size);

#endif
