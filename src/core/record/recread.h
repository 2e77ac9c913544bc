/* recread: reads a .pyrec recording (doc/recording.md) back, treating it as hostile: the
 * chunks' headers are indexed when it is opened, a chunk is decompressed only when asked for,
 * and a file cut short (pytop killed while writing) is read up to its last complete chunk. */
#ifndef PYTOP_CORE_RECREAD_H
#define PYTOP_CORE_RECREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model/snapshot.h"
#include "core/record/recsample.h"

struct pt_error;

/* What the index says of one chunk. */
struct recread_chunk {
    uint64_t offset;    /* of its header in the file */
    uint32_t flags;     /* RECFORMAT_HAS_* */
    uint32_t packed;    /* bytes compressed */
    uint32_t raw;       /* bytes decompressed */
    uint32_t samples;
    double t_first;     /* seconds from the recording's start */
    double t_last;
};

struct recreader;

/* True when HEAD (a file's first N bytes) starts as a .pyrec does. */
bool recread_sniff(const void *head, size_t n);

/* Opens PATH and indexes its chunks. Errors: PT_E_IO, PT_E_FORMAT (not a recording, a version
 * this pytop does not read, a damaged header), PT_E_NOMEM. */
struct recreader *recreader_open(const char *path, struct pt_error *err);
void recreader_close(struct recreader *r);

const struct rec_header *recreader_header(const struct recreader *r);
/* Seconds from the start to the last sample of the last complete chunk. */
double recreader_duration(const struct recreader *r);
const struct recread_chunk *recreader_chunks(const struct recreader *r, size_t *n);
/* What is wrong with the file, as one sentence ("" when nothing): where it was cut short or
 * corrupt; what comes before that is read. */
const char *recreader_damage(const struct recreader *r);

/* Calls FN for every sample (failed ones included) with FROM <= t <= TO, in time order. A chunk
 * found corrupt stops the scan: -1 with PT_E_FORMAT (and the damage noted). Returns 0, FN's
 * non-zero, or -1. */
int recreader_scan(struct recreader *r, double from, double to, rec_sample_fn fn, void *ctx,
                   struct pt_error *err);
/* Calls FN once, with the last successful sample at or before T (or the first, for a T before
 * it). Returns 0, FN's value, or -1 (PT_E_FORMAT; PT_E_LIMIT: the recording holds no sample). */
int recreader_sample_at(struct recreader *r, double t, rec_sample_fn fn, void *ctx,
                        struct pt_error *err);
/* The last full snapshot taken at or before T (or the first one after, for a T before any),
 * and its time in *WHEN. NULL: PT_E_LIMIT (the recording holds none), PT_E_FORMAT. */
struct snapshot *recreader_snapshot_at(struct recreader *r, double t, double *when,
                                       struct pt_error *err);

#endif
