/* record: a recording taken while sampling: every sample the sampler takes (its hook), a full
 * snapshot once per interval, the exec()s it follows. Used by pytop --record FILE (the batch
 * loop, with a progress line) and by the live view's R key. */
#ifndef PYTOP_RECORD_H
#define PYTOP_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cli_options;
struct sampler;
struct snapshot;
struct pt_error;
struct recording_app;

/* Records into FD (taken; NAME says what it is) what SAMPLER samples from now on: takes a first
 * snapshot (the header's account of the target; recorded at once), then hooks the sampler.
 * RATE and INTERVAL go into the header; OFFSETS keeps each frame's instruction; START
 * (clock_now()) is time 0. NULL: ERR says why (FD closed). */
struct recording_app *record_start(int fd, const char *name, struct sampler *sampler, double rate,
                                   double interval, bool offsets, double start,
                                   struct pt_error *err);
/* The full snapshot SNAP taken at NOW (NULL: none could be read). Returns 0, or -1 once the
 * recording has stopped at an error (record_failure()). */
int record_interval(struct recording_app *r, const struct snapshot *snap, double now);
/* The target exec()ed PROGRAM at NOW. */
void record_exec(struct recording_app *r, const char *program, double now);
/* "0:00:41, 4093 samples (99.8/s), 0 failed, 1.2 MB" at NOW. */
void record_status(const struct recording_app *r, double now, char *buf, size_t size);
/* Bytes written so far and seconds recorded at NOW. */
void record_size(const struct recording_app *r, double now, uint64_t *bytes, double *secs);
/* Why the recording stopped before its end ("" while it goes on). */
const char *record_failure(const struct recording_app *r);
const char *record_name(const struct recording_app *r);
/* Unhooks the sampler, ends the file at NOW and frees R; its last status into SUMMARY. Returns
 * 0, or -1 when the file is not whole (ERR says why). */
int record_finish(struct recording_app *r, double now, char *summary, size_t size,
                  struct pt_error *err);

/* pytop --record FILE: OPTS->record opened as -o files are (new, 0600, no symlink). */
struct recording_app *record_open_cli(const struct cli_options *o, struct sampler *sampler,
                                      double start);
/* The progress line on a terminal (nothing elsewhere), after each interval. */
void record_progress_cli(const struct recording_app *r, double now);
/* Ends a --record, saying what it holds on stderr. Returns 0, or -1 when the file is not
 * whole. */
int record_finish_cli(struct recording_app *r, double now);

#endif
