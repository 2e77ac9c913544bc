/* report: the incident dump: the target, how pytop took it, the window's statistics, the
 * snapshot. */
#ifndef PYTOP_CORE_REPORT_H
#define PYTOP_CORE_REPORT_H

#include <stddef.h>
#include <stdio.h>

struct pt_error;
struct sampler_stats;
struct snapshot;
struct snapshot_source;

/* What the report says besides the snapshot and the statistics. Any string may be NULL. */
struct report_opts {
    const char *by;       /* pytop's settings and how the dump was taken, after its version on
                           * the "Dumped by:" line ("--rate 100 --window 10 (live view, d)") */
    const char *note;     /* a "Note:" line below it (--at-exit: which snapshot this is) */
    const char *window;   /* the statistics' window in words; NULL: from the statistics ("10 s",
                           * "since the last reset") */
    const char *no_stats; /* why there are none, when the statistics are NULL */
    size_t top_functions; /* rows of the functions table */
};

/* Writes the text report: SNAP's header (process, Python, command line, start, time taken),
 * "Dumped by: pytop VERSION BY", the note, the statistics ST over their window (or, ST NULL,
 * "Statistics: none: NO_STATS"), then SNAP's threads (with source lines from SRC, may be NULL),
 * GC, tasks and warnings, and the asyncio trees of TASKS when the task graph was read apart
 * (may be NULL). Errors: PT_E_IO, PT_E_NOMEM. */
int report_write_text(const struct snapshot *snap, const struct snapshot *tasks,
                      const struct sampler_stats *st, FILE *out, const struct snapshot_source *src,
                      const struct report_opts *opts, struct pt_error *err);

#endif
