/* cli: the command line: parse options, run the requested mode, map errors to exit statuses. */
#ifndef PYTOP_CLI_H
#define PYTOP_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_TARGET = 1, /* the target could not be inspected */
    CLI_EXIT_USAGE = 2,
};

enum cli_mode {
    CLI_MODE_LIVE,
    CLI_MODE_DUMP,
    CLI_MODE_BATCH,
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

#endif
