/* record: pytop --record FILE: every sample of the batch loop into a .pyrec recording, with a
 * full snapshot once per interval, and a progress line on a terminal. */
#ifndef PYTOP_RECORD_H
#define PYTOP_RECORD_H

#include <stdbool.h>

struct cli_options;
struct sampler;
struct snapshot;
struct pt_error;
struct recording_app;

/* Takes a first snapshot with SAMPLER (its identity goes into the header), opens OPTS->record
 * (a new 0600 file; --force may replace one) and hooks the sampler so that each sample is
 * recorded from then on; START (clock_now()) is the recording's time 0. Returns NULL after
 * saying why on stderr. */
struct recording_app *record_start(const struct cli_options *o, struct sampler *sampler,
                                   double start);
/* The interval ending at NOW: its snapshot SNAP (NULL when none could be read) and, on a
 * terminal, the progress line. Returns 0, or -1 after saying why on stderr. */
int record_interval(struct recording_app *r, const struct snapshot *snap, double now);
/* The target exec()ed PROGRAM at NOW. */
void record_exec(struct recording_app *r, const char *program, double now);
/* Ends the recording at NOW and says what it holds (one line on stderr); frees R. Returns 0,
 * or -1 when the file is not whole. */
int record_finish(struct recording_app *r, double now);

#endif
