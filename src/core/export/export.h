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

struct exporter;

/* Errors: PT_E_NOMEM. */
struct exporter *exporter_new(enum export_format f, const struct export_opts *opts,
                              struct pt_error *err);
void exporter_free(struct exporter *x);
/* Counts S's thread-samples that OPTS selects. Returns 0, or -1 (PT_E_NOMEM, PT_E_LIMIT). */
int exporter_add(struct exporter *x, const struct rec_sample *s, struct pt_error *err);
/* A rec_sample_fn over exporter_add() (CTX is the exporter). */
int exporter_add_fn(void *ctx, const struct rec_sample *s);
/* Writes the whole profile to OUT. Returns 0, or -1 (PT_E_IO, PT_E_NOMEM). */
int exporter_finish(struct exporter *x, FILE *out, struct pt_error *err);

#endif
