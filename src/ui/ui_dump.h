/* ui_dump: the `d` key: the incident report written to a new text file in the current
 * directory. */
#ifndef PYTOP_UI_UI_DUMP_H
#define PYTOP_UI_UI_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct cli_options;
struct live_frame;
struct report_opts;
struct sampler_heat;
struct sampler_stats;
struct snapshot;
struct snapshot_source;
struct pt_error;

/* Writes the report of S (report_write_text(): its statistics ST, may be NULL; source lines
 * from SRC, may be NULL; the asyncio trees of TASKS, read at the same refresh, may be NULL;
 * what OPTS add) to a new file pytop-PID-YYYYmmdd-HHMMSS.txt (the snapshot's local time; -2,
 * -3... appended when taken), created exclusively with mode 0600, and puts its name in NAME.
 * Errors: PT_E_IO, PT_E_NOMEM. */
/* Creates a file named after process PID at time WHEN (0: now), pytop-PID-YYYYmmdd-HHMMSS
 * SUFFIX.EXT (or with -2, -3... when that exists), that did not exist: mode 0600, never through
 * a symbolic link. Returns its fd, with its name in NAME; -1: PT_E_IO. */
int ui_dump_create(pid_t pid, double when, const char *suffix, const char *ext, char *name,
                   size_t size, struct pt_error *err);

int ui_dump_write(const struct snapshot *s, const struct snapshot *tasks,
                  const struct sampler_stats *st, const struct snapshot_source *src,
                  const struct report_opts *opts, char *name, size_t size, struct pt_error *err);

/* The `d` key on the picture F (it has a snapshot): its report, with F's statistics and task
 * graph, "Dumped by" the settings OPTS with the refresh DELAY and the statistics' window of F
 * (else WINDOW), on the FROZEN picture or the current one, written as ui_dump_write() does. */
int ui_dump_frame(const struct live_frame *f, const struct cli_options *opts, double window,
                  double delay, bool frozen, const struct snapshot_source *src, char *name,
                  size_t size, struct pt_error *err);

/* The `d` key in the source heat view: the annotated source of H (heat_write_text(), lines from
 * SRC) with the process F shows (may be NULL), to a new file pytop-PID-YYYYmmdd-HHMMSS-source.txt
 * made as ui_dump_write() makes its own; its name in NAME. Errors: PT_E_IO. */
int ui_dump_heat(const struct live_frame *f, pid_t pid, const struct sampler_heat *h,
                 const struct snapshot_source *src, char *name, size_t size, struct pt_error *err);

#endif
