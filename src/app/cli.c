/* cli: the command line: parse options, run the requested mode, map errors to exit statuses. */
#include "config.h"

#include "app/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/batch.h"
#include "app/dump.h"
#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "app/liveview.h"
#include "app/record.h"
#include "app/replay.h"
#include "core/export/export.h"

enum {
    OPT_DUMP = 256,
    OPT_JSON,
    OPT_BLOCKING,
    OPT_FILTER,
    OPT_NO_COLOR,
    OPT_FORCE,
    OPT_WINDOW,
    OPT_AT_EXIT,
    OPT_MODE,
    OPT_ACTIVE_ONLY,
    OPT_NO_GC_FRAMES,
    OPT_OPCODES,
    OPT_NATIVE,
    OPT_RECORD,
    OPT_REPLAY,
    OPT_EXPORT,
    OPT_FROM,
    OPT_TO,
    OPT_AT,
    OPT_THREAD,
};

static const char USAGE[] =
    "Usage: pytop -p PID                     live view of a running Python process\n"
    "       pytop [options] -- CMD [ARGS...] start CMD and show it live (or --dump, -b)\n"
    "       pytop -p PID --dump [--json]     one snapshot to stdout, then exit\n"
    "       pytop -p PID -b [-n N] [-d SECS] a snapshot every SECS, N times\n"
    "       pytop --dump --at-exit -- CMD    the last snapshot before CMD ends\n"
    "       pytop -p PID --record FILE [-r HZ] [-d SECS] [-n N]\n"
    "                                        record every sample (and a snapshot every SECS)\n"
    "       pytop --replay FILE --dump [--json] [--at SECS]\n"
    "       pytop --replay FILE -b [--json] [-d SECS]\n"
    "       pytop --replay FILE --export FORMAT [-o OUT] [--from SECS] [--to SECS]\n"
    "                                        [--mode M] [--thread TID]\n"
    "       pytop -p PID --export FORMAT -d SECS -o OUT\n"
    "                                        FORMAT: collapsed, speedscope, pprof, chrome\n"
    "\n"
    "Options:\n"
    "  -p, --pid PID         the process to inspect\n"
    "      --dump            print one snapshot (text, like a traceback) and exit\n"
    "      --at-exit         --dump: wait for the target to end, dump the last snapshot\n"
    "      --window SECS     how far back the statistics reach (all: since the start);\n"
    "                        --dump samples that long first\n"
    "      --json            write snapshots as JSON\n"
    "  -o, --output FILE     where --dump and -b write (default: stdout); a new file of\n"
    "                        mode 0600, never an existing one nor through a symlink\n"
    "      --force           let -o replace an existing file (still never a symlink)\n"
    "  -b, --batch           batch mode\n"
    "  -n, --iterations N    batch mode: stop after N snapshots\n"
    "  -d, --delay SECS      refresh / batch interval (default 1.0)\n"
    "  -r, --rate HZ         sampling rate (default 100; 1k, 10khz, max)\n"
    "      --mode M          which thread-samples the statistics count: wall (all,\n"
    "                        the default), cpu (on a CPU), gil (holding the GIL),\n"
    "                        exception (raising or handling one)\n"
    "      --active-only     read only the thread holding the GIL (and its stack)\n"
    "      --opcodes         the instruction each frame is at ([LOAD_ATTR]), and the\n"
    "                        source heat view's per instruction\n"
    "      --native          <native> frames where C code called into Python (3.12+)\n"
    "      --no-gc-frames    no <GC> frame above the call that started a collection\n"
    "      --blocking        pause the target while each sample is read\n"
    "      --record FILE     write every sample to FILE (a new .pyrec, mode 0600)\n"
    "      --replay FILE     read a recording (pytop's, or CPython 3.15's --binary)\n"
    "      --export FORMAT   write the samples as a profile other tools read\n"
    "      --at SECS         --replay --dump: the moment, seconds from the start\n"
    "      --from, --to SECS --export: the span, seconds from the start\n"
    "      --thread TID      --export: one thread only\n"
    "      --filter TEXT     start with this filter\n"
    "      --no-color        no colours (NO_COLOR is honoured too)\n"
    "  -h, --help            this help\n"
    "  -V, --version         print the version\n"
    "\n"
    "Live view: Tab or 1-4 switch views, h lists every key. Enter on a function\n"
    "(Functions) or a frame (Threads, after Right) opens its source heat view: each\n"
    "line's share of the samples, and with o or --opcodes its instructions'.\n"
    "\n"
    "Exit status: 0 success, 1 the target could not be inspected, 2 bad usage.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pytop: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (try 'pytop --help')\n");
    va_end(ap);
    return -1;
}

static int parse_pid(const char *s, pid_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v <= 0 || v > INT_MAX) {
        return -1;
    }
    *out = (pid_t)v;
    return 0;
}

static int parse_positive(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v <= 0) {
        return -1;
    }
    *out = v;
    return 0;
}

/* "100", "1k", "10khz", "2.5kHz", "max". */
static int parse_rate(const char *s, double *out)
{
    char *end;
    if (strcmp(s, "max") == 0) {
        *out = 0;
        return 0;
    }
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || !isfinite(v) || v <= 0) {
        return -1;
    }
    if (*end == 'k' || *end == 'K') {
        v *= 1000;
        end++;
    }
    if (strcasecmp(end, "hz") == 0) {
        end += 2;
    }
    if (*end != '\0' || v > 1e6) {
        return -1;
    }
    *out = v;
    return 0;
}

/* "10", "0.5", "all" (INFINITY): at most a day. */
static int parse_window(const char *s, double *out)
{
    if (strcmp(s, "all") == 0) {
        *out = INFINITY;
        return 0;
    }
    return parse_positive(s, out) < 0 || *out > 86400 ? -1 : 0;
}

static int check_modes(int argc, char **argv, struct cli_options *o);

static int parse_option(int c, const char *arg, struct cli_options *o)
{
    long n;
    char *end;
    switch (c) {
    case 'p':
        return parse_pid(arg, &o->pid) < 0 ? usage_error("bad PID '%s'", arg) : 0;
    case OPT_DUMP:
        o->mode = CLI_MODE_DUMP;
        return 0;
    case OPT_JSON:
        o->json = true;
        return 0;
    case 'o':
        o->output = arg;
        return 0;
    case 'b':
        o->mode = CLI_MODE_BATCH;
        return 0;
    case 'n':
        errno = 0;
        n = strtol(arg, &end, 10);
        if (errno != 0 || end == arg || *end != '\0' || n <= 0 || n > INT_MAX) {
            return usage_error("bad iteration count '%s'", arg);
        }
        o->iterations = (int)n;
        return 0;
    case 'd':
        return parse_positive(arg, &o->delay) < 0 ? usage_error("bad delay '%s'", arg) : 0;
    case 'r':
        return parse_rate(arg, &o->rate_hz) < 0 ? usage_error("bad rate '%s'", arg) : 0;
    case OPT_BLOCKING:
        o->blocking = true;
        return 0;
    case OPT_FILTER:
        o->filter = arg;
        return 0;
    case OPT_NO_COLOR:
        o->no_color = true;
        return 0;
    case OPT_FORCE:
        o->force = true;
        return 0;
    case OPT_WINDOW:
        return parse_window(arg, &o->window_s) < 0
                   ? usage_error("bad window '%s' (seconds, at most 86400, or 'all')", arg)
                   : 0;
    case OPT_AT_EXIT:
        o->at_exit = true;
        return 0;
    case OPT_MODE: {
        int m = sampler_mode_parse(arg);
        if (m < 0) {
            return usage_error("bad mode '%s' (wall, cpu, gil or exception)", arg);
        }
        o->sample_mode = (enum sampler_mode)m;
        return 0;
    }
    case OPT_ACTIVE_ONLY:
        o->active_only = true;
        return 0;
    case OPT_NO_GC_FRAMES:
        o->no_gc_frames = true;
        return 0;
    case OPT_OPCODES:
        o->opcodes = true;
        return 0;
    case OPT_NATIVE:
        o->native = true;
        return 0;
    case OPT_RECORD:
        o->record = arg;
        return 0;
    case OPT_REPLAY:
        o->replay = arg;
        return 0;
    case OPT_EXPORT:
        if ((o->export_format = export_format_parse(arg)) < 0) {
            return usage_error("bad export format '%s' (collapsed, speedscope, pprof or chrome)",
                               arg);
        }
        return 0;
    case OPT_FROM:
    case OPT_TO:
    case OPT_AT: {
        double v;
        if (parse_positive(arg, &v) < 0 && strcmp(arg, "0") != 0) {
            return usage_error("bad time '%s' (seconds from the recording's start)", arg);
        }
        v = strcmp(arg, "0") == 0 ? 0 : v;
        *(c == OPT_FROM ? &o->from : c == OPT_TO ? &o->to : &o->at) = v;
        return 0;
    }
    case OPT_THREAD:
        return parse_pid(arg, &o->thread) < 0 ? usage_error("bad thread id '%s'", arg) : 0;
    case 'h':
        o->mode = CLI_MODE_HELP;
        return 0;
    case 'V':
        o->mode = CLI_MODE_VERSION;
        return 0;
    default:
        return -1;
    }
}

int cli_parse(int argc, char **argv, struct cli_options *o)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"dump", no_argument, NULL, OPT_DUMP},
        {"json", no_argument, NULL, OPT_JSON},
        {"output", required_argument, NULL, 'o'},
        {"batch", no_argument, NULL, 'b'},
        {"iterations", required_argument, NULL, 'n'},
        {"delay", required_argument, NULL, 'd'},
        {"rate", required_argument, NULL, 'r'},
        {"blocking", no_argument, NULL, OPT_BLOCKING},
        {"filter", required_argument, NULL, OPT_FILTER},
        {"no-color", no_argument, NULL, OPT_NO_COLOR},
        {"force", no_argument, NULL, OPT_FORCE},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"at-exit", no_argument, NULL, OPT_AT_EXIT},
        {"mode", required_argument, NULL, OPT_MODE},
        {"active-only", no_argument, NULL, OPT_ACTIVE_ONLY},
        {"no-gc-frames", no_argument, NULL, OPT_NO_GC_FRAMES},
        {"opcodes", no_argument, NULL, OPT_OPCODES},
        {"native", no_argument, NULL, OPT_NATIVE},
        {"record", required_argument, NULL, OPT_RECORD},
        {"replay", required_argument, NULL, OPT_REPLAY},
        {"export", required_argument, NULL, OPT_EXPORT},
        {"from", required_argument, NULL, OPT_FROM},
        {"to", required_argument, NULL, OPT_TO},
        {"at", required_argument, NULL, OPT_AT},
        {"thread", required_argument, NULL, OPT_THREAD},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->mode = CLI_MODE_LIVE;
    o->delay = 1.0;
    o->rate_hz = 100;
    o->no_color = getenv("NO_COLOR") != NULL && getenv("NO_COLOR")[0] != '\0';
    o->export_format = -1;
    o->to = INFINITY;
    o->at = NAN;
    opterr = 0;
    int c;
    /* '+': stop at the first non-option, so a command's own options are left alone. */
    while ((c = getopt_long(argc, argv, "+p:o:bn:d:r:hV", longopts, NULL)) != -1) {
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            return usage_error("unknown option or missing value: '%s'", bad);
        }
        if (parse_option(c, optarg, o) < 0) {
            return -1;
        }
    }
    if (o->mode == CLI_MODE_HELP || o->mode == CLI_MODE_VERSION) {
        return 0;
    }
    return check_modes(argc, argv, o);
}

/* What a recording's options say, once they are all read: the mode they make, and the
 * combinations that make no sense. */
static int check_recording(struct cli_options *o)
{
    if (o->record != NULL && (o->replay != NULL || o->mode != CLI_MODE_LIVE ||
                              o->export_format >= 0)) {
        return usage_error("--record goes with -p PID or a command, alone");
    }
    if (o->record != NULL) {
        o->mode = CLI_MODE_RECORD;
        return 0;
    }
    if (o->export_format >= 0) {
        if (o->mode != CLI_MODE_LIVE) {
            return usage_error("--export is a mode of its own: not with --dump or -b");
        }
        o->mode = CLI_MODE_EXPORT;
    }
    if (!isnan(o->at) && (o->replay == NULL || o->mode != CLI_MODE_DUMP)) {
        return usage_error("--at goes with --replay FILE --dump");
    }
    if ((o->from != 0 || !isinf(o->to) || o->thread != 0) && o->mode != CLI_MODE_EXPORT) {
        return usage_error("--from, --to and --thread go with --export");
    }
    if (o->mode == CLI_MODE_EXPORT && o->replay == NULL && !(o->delay > 0 && o->output != NULL)) {
        return usage_error("--export from a process needs -d SECS and -o OUT");
    }
    return 0;
}

static int check_modes(int argc, char **argv, struct cli_options *o)
{
    if (check_recording(o) < 0) {
        return -1;
    }
    if (o->replay != NULL) {
        if (optind < argc || o->pid != 0) {
            return usage_error("--replay reads a file: no -p PID or command with it");
        }
        if (o->json && o->mode == CLI_MODE_LIVE) {
            return usage_error("--json goes with --dump or -b");
        }
        return 0;
    }
    if (optind < argc) {
        if (o->pid != 0) {
            return usage_error("give either -p PID or a command, not both");
        }
        o->command = &argv[optind];
    } else if (o->pid == 0) {
        return usage_error("no process given: use -p PID or -- COMMAND");
    }
    if (o->json && o->mode == CLI_MODE_LIVE) {
        return usage_error("--json goes with --dump or -b");
    }
    /* An option that would change nothing is a mistake worth saying: the user meant something
     * else (-n without -b would otherwise run the live view or one dump). */
    if (o->iterations > 0 && o->mode != CLI_MODE_BATCH && o->mode != CLI_MODE_RECORD) {
        return usage_error("-n goes with -b (batch mode)");
    }
    if (o->output != NULL && (o->mode == CLI_MODE_LIVE || o->mode == CLI_MODE_RECORD)) {
        return usage_error("-o goes with --dump or -b (the live view's d key names its own file)");
    }
    if (o->force && o->record == NULL && (o->output == NULL || strcmp(o->output, "-") == 0)) {
        return usage_error("--force goes with -o FILE");
    }
    if (o->at_exit && o->mode != CLI_MODE_DUMP) {
        return usage_error("--at-exit goes with --dump");
    }
    /* A plain --dump takes no samples: nothing for a mode to count. */
    bool samples = o->mode != CLI_MODE_DUMP || o->at_exit || o->window_s > 0;
    if ((o->sample_mode != SAMPLER_MODE_WALL || o->active_only) && !samples) {
        return usage_error("%s goes with the live view, -b, or --dump with --window or --at-exit "
                           "(a plain --dump takes no samples)",
                           o->active_only ? "--active-only" : "--mode");
    }
    return 0;
}

/* Why reading process PID was refused, named from what can be told here (proc_access_facts()),
 * into BUF; says so when the cause is not known rather than guess one. */
static const char *permission_hint(pid_t pid, char *buf, size_t size)
{
    struct proc_access a;
    proc_access_facts(pid, &a);
    if (a.ptrace_scope == 3) {
        return "kernel.yama.ptrace_scope is 3: no process may read another's memory, root "
               "included, until the next boot";
    }
    if (a.ptrace_cap == 1) {
        if (a.same_userns == 0) {
            snprintf(buf, size,
                     "process %d is in another user namespace, where pytop's CAP_SYS_PTRACE does "
                     "not count (pytop runs inside a container or namespace that the process is "
                     "not in): run pytop in the process's namespace, or on the host",
                     (int)pid);
        } else if (a.lsm[0] != '\0') {
            snprintf(buf, size,
                     "pytop has CAP_SYS_PTRACE, so a security module refused it: pytop runs "
                     "confined as '%s' (AppArmor or SELinux); its policy must allow ptrace read "
                     "of the process (see the kernel log)",
                     a.lsm);
        } else {
            snprintf(buf, size,
                     "the cause is not known: pytop has CAP_SYS_PTRACE%s; a security module "
                     "(SELinux, AppArmor, Landlock) or a protected process may refuse it: see "
                     "the kernel log (dmesg)",
                     a.same_userns == 1 ? " in the process's user namespace" : "");
        }
        return buf;
    }
    if (geteuid() == 0 && a.ptrace_cap == 0) {
        return "pytop runs as root but lacks CAP_SYS_PTRACE (in a container: docker run "
               "--cap-add SYS_PTRACE, or kubectl's securityContext capabilities)";
    }
    if (a.same_user == 0) {
        return "the process belongs to another user: run pytop as that user, or as root";
    }
    if (a.dumpable == 0) {
        snprintf(buf, size,
                 "process %d is not dumpable (it called prctl(PR_SET_DUMPABLE, 0), or runs a "
                 "setuid, setgid or file-capability program): only CAP_SYS_PTRACE may read it: "
                 "run pytop as root",
                 (int)pid);
        return buf;
    }
    if (a.ptrace_scope == 2) {
        return "kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may read another process: "
               "run pytop as root";
    }
    if (a.ptrace_scope == 1) {
        return "kernel.yama.ptrace_scope is 1: only a process's ancestors may read it: start it "
               "with 'pytop -- CMD', run pytop as root, or "
               "'sudo sysctl kernel.yama.ptrace_scope=0'";
    }
    if (a.lsm[0] != '\0') {
        snprintf(buf, size,
                 "pytop runs confined as '%s' (AppArmor or SELinux), whose policy may refuse "
                 "it: see the kernel log, or run pytop as root",
                 a.lsm);
        return buf;
    }
    return "the cause is not known: run pytop as the process's user, or as root "
           "(CAP_SYS_PTRACE)";
}

/* The one-line hint that goes with an error that stops pytop, in BUF or static. */
static const char *hint_for(const struct pt_error *e, pid_t pid, char *buf, size_t size)
{
    switch (e->code) {
    case PT_E_PERM:
        return permission_hint(pid, buf, size);
    case PT_E_NOPROC:
        return "check the PID (ps -p PID, pgrep -f NAME); a process in a container has another "
               "PID inside it than outside";
    case PT_E_NOTPY:
        return "is it a Python process? pytop looks for the interpreter in the executable and "
               "in libpython";
    case PT_E_UNSUPPORTED:
        return "pytop supports CPython 2.7 and 3.6 to 3.15 with the GIL";
    default:
        return NULL;
    }
}

int cli_target_error(const struct pt_error *e, pid_t pid)
{
    char buf[512];
    const char *hint = hint_for(e, pid, buf, sizeof buf);
    fprintf(stderr, "pytop: %s\n", e->msg);
    if (hint != NULL) {
        fprintf(stderr, "pytop: hint: %s\n", hint);
    }
    return CLI_EXIT_TARGET;
}

/* Whether -o PATH may be written, said before the target is read: an existing file only with
 * --force, a symbolic link never. Returns 0, or CLI_EXIT_USAGE after saying why. */
static int check_output(const struct cli_options *o)
{
    struct stat st;
    if (o->output == NULL || strcmp(o->output, "-") == 0 || lstat(o->output, &st) < 0) {
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        fprintf(stderr,
                "pytop: %s is a symbolic link: pytop does not write through one (name the "
                "file itself)\n",
                o->output);
        return CLI_EXIT_USAGE;
    }
    if (!o->force) {
        fprintf(stderr, "pytop: %s exists: pytop does not overwrite it without --force\n",
                o->output);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

FILE *cli_open_output(const char *path, bool force)
{
    if (path == NULL || strcmp(path, "-") == 0) {
        return stdout;
    }
    /* The dump holds what the target was doing, source lines included: 0600, as the live view's
     * d key writes. O_NOFOLLOW: a symlink planted at PATH must not redirect a root pytop. */
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (force ? 0 : O_EXCL);
    int fd = open(path, flags, 0600);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (ftruncate(fd, 0) < 0 || fchmod(fd, 0600) < 0)) {
        int e = errno;
        close(fd);
        fd = -1;
        errno = e;
    }
    if (fd < 0) {
        const char *why = errno == EEXIST  ? "it exists (--force replaces it)"
                          : errno == ELOOP ? "it is a symbolic link"
                                           : strerror(errno);
        fprintf(stderr, "pytop: cannot write %s: %s\n", path, why);
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        fprintf(stderr, "pytop: cannot write %s: %s\n", path, strerror(errno));
        close(fd);
    }
    return f;
}

int cli_run(const struct cli_options *o)
{
    switch (o->mode) {
    case CLI_MODE_HELP:
        fputs(USAGE, stdout);
        return CLI_EXIT_OK;
    case CLI_MODE_VERSION:
        printf("pytop %s\n", PACKAGE_VERSION);
        return CLI_EXIT_OK;
    case CLI_MODE_DUMP:
        if (o->replay != NULL) {
            return check_output(o) != 0 ? CLI_EXIT_USAGE : replay_run(o);
        }
        return check_output(o) != 0 ? CLI_EXIT_USAGE : dump_run(o);
    case CLI_MODE_BATCH:
        if (o->replay != NULL) {
            return check_output(o) != 0 ? CLI_EXIT_USAGE : replay_run(o);
        }
        return check_output(o) != 0 ? CLI_EXIT_USAGE : batch_run(o);
    case CLI_MODE_RECORD:
        return batch_run(o);
    case CLI_MODE_EXPORT:
        return check_output(o) != 0 ? CLI_EXIT_USAGE : replay_run(o);
    case CLI_MODE_LIVE:
        if (o->replay != NULL) {
            return liveview_run(o);
        }
        break;
    }
    /* A target that cannot be inspected is reported before any screen is set up. */
    if (o->pid != 0) {
        struct pt_error err = {0};
        struct runtime rt;
        struct proc *p = proc_open(o->pid, &err);
        int rc = p == NULL || runtime_locate(p, &rt, &err) < 0 ? cli_target_error(&err, o->pid) : 0;
        proc_close(p);
        if (rc != 0) {
            return rc;
        }
    }
    return liveview_run(o);
}

/* SECS as an option value: "1", "0.25", "all". */
static void put_secs(char *buf, size_t size, double secs)
{
    if (isinf(secs)) {
        snprintf(buf, size, "all");
    } else {
        snprintf(buf, size, "%g", secs);
    }
}

void cli_settings_text(const struct cli_options *o, double window_s, double delay,
                       enum sampler_mode sample_mode, const char *how, char *buf, size_t size)
{
    char rate[32];
    char window[32];
    char every[32];
    if (o->rate_hz > 0) {
        snprintf(rate, sizeof rate, "%g", o->rate_hz);
    } else {
        snprintf(rate, sizeof rate, "max");
    }
    window[0] = '\0';
    if (window_s > 0) {
        memcpy(window, " --window ", 11);
        put_secs(window + 10, sizeof window - 10, window_s);
    }
    put_secs(every, sizeof every, delay);
    const char *mode = o->mode == CLI_MODE_DUMP    ? "--dump "
                       : o->mode == CLI_MODE_BATCH ? "-b "
                                                   : "";
    int n =
        snprintf(buf, size, "%s%s%s--rate %s%s --delay %s%s", mode, o->at_exit ? "--at-exit " : "",
                 o->json ? "--json " : "", rate, window, every, o->blocking ? " --blocking" : "");
    if (n >= 0 && (size_t)n < size && sample_mode != SAMPLER_MODE_WALL) {
        n += snprintf(buf + n, size - (size_t)n, " --mode %s", sampler_mode_name(sample_mode));
    }
    if (n >= 0 && (size_t)n < size && o->active_only) {
        n += snprintf(buf + n, size - (size_t)n, " --active-only");
    }
    if (n >= 0 && (size_t)n < size && o->native) {
        n += snprintf(buf + n, size - (size_t)n, " --native");
    }
    if (n >= 0 && (size_t)n < size && o->opcodes) {
        n += snprintf(buf + n, size - (size_t)n, " --opcodes");
    }
    if (n >= 0 && (size_t)n < size && o->no_gc_frames) {
        n += snprintf(buf + n, size - (size_t)n, " --no-gc-frames");
    }
    if (n >= 0 && (size_t)n < size && o->filter != NULL && o->filter[0] != '\0') {
        n += snprintf(buf + n, size - (size_t)n, " --filter '%s'", o->filter);
    }
    if (n >= 0 && (size_t)n < size && how != NULL) {
        snprintf(buf + n, size - (size_t)n, " (%s)", how);
    }
}
