/* export: samples (struct rec_sample, from a recording or taken live) written in the formats
 * other profilers read (DESIGN.md, Recordings and exports): collapsed stacks, speedscope,
 * pprof (gzipped profile.proto), Chrome's Trace Event Format. */
#ifndef PYTOP_CORE_EXPORT_H
#define PYTOP_CORE_EXPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/record/recsample.h"
#include "core/sampler/sampler.h"

struct pt_error;

enum export_format {
    EXPORT_COLLAPSED,
    EXPORT_SPEEDSCOPE,
    EXPORT_PPROF,
    EXPORT_CHROME,
    EXPORT_FORMAT_COUNT
};

/* "collapsed", "speedscope", "pprof", "chrome". */
const char *export_format_name(enum export_format f);
/* The format named NAME; -1 for none. */
int export_format_parse(const char *name);

struct export_opts {
    double from;               /* samples with t in [FROM, TO] only (seconds from the start) */
    double to;                 /* INFINITY: to the end */
    enum sampler_mode mode;    /* which thread-samples count, as the statistics do */
    pid_t thread;              /* one thread only (kernel tid); 0 every thread */
    double period_s;           /* the nominal time between samples (1 / rate); 0 unknown */
    const struct rec_header *header; /* the recording's (names the profile); may be NULL */
};

/* What the formats hold (DESIGN.md, Recordings and exports). Every format counts the same
 * thread-samples: a sample that failed, a thread whose stack was not read (not_read), and one
 * OPTS does not select are left out; <shim> frames are left out as the statistics leave them.
 * Each thread-sample stands for the time from its sample to the next sample of the recording
 * (counted or not), at most four periods (0.1 s when the period is unknown); those of the last
 * sample for one period (or the gap before them). That time is speedscope's weight, pprof's
 * wall/nanoseconds and the length of chrome's events.
 * - collapsed: one line per distinct (thread, stack), sorted, outermost frame first:
 *   thread TID "NAME";FUNCTION (FILE:LINE);...;<native>;... COUNT
 *   (';', '\', control characters and bytes that are not UTF-8 in names as \xNN; '?' for an
 *   unknown function, file or line; a thread with no name as thread TID ?; TID the thread_id
 *   in hex when the kernel tid is not known).
 * - speedscope: shared frames (function, line), one "sampled" profile per thread in seconds,
 *   consecutive thread-samples with one stack as one sample of their summed weight.
 * - pprof: gzipped profile.proto, sample types samples/count and wall/nanoseconds, one Sample
 *   per (thread, stack) with labels thread (name) and tid, one Location per frame.
 * - chrome: Trace Event Format, a thread_name event and nested "X" events per thread, one per
 *   function call as far as consecutive samples tell (ts and dur in microseconds from the
 *   start). */
struct exporter;

/* Errors: PT_E_NOMEM. */
struct exporter *exporter_new(enum export_format f, const struct export_opts *opts,
                              struct pt_error *err);
void exporter_free(struct exporter *x);
/* Counts S's thread-samples that OPTS selects. Returns 0, or -1 (PT_E_NOMEM, PT_E_LIMIT). */
int exporter_add(struct exporter *x, const struct rec_sample *s, struct pt_error *err);
/* A rec_sample_fn over exporter_add() (CTX is the exporter): returns -1 on failure, and the
 * exporter keeps the error for exporter_finish(). */
int exporter_add_fn(void *ctx, const struct rec_sample *s);
/* Writes the whole profile to OUT, once. Returns 0, or -1 (PT_E_IO, PT_E_NOMEM; or the error
 * an earlier exporter_add() failed with, nothing written). */
int exporter_finish(struct exporter *x, FILE *out, struct pt_error *err);

#endif
