/* recording: any recording pytop reads, behind one interface: its own .pyrec (recread.h) or
 * CPython 3.15's profiling.sampling --binary files (cpyrec.h); and a moment of one as a
 * snapshot. */
#ifndef PYTOP_CORE_RECORDING_H
#define PYTOP_CORE_RECORDING_H

#include <stdbool.h>
#include <stddef.h>

#include "core/model/snapshot.h"
#include "core/record/recsample.h"

struct pt_error;
struct recording;

/* Opens PATH, whichever format it is in. Errors: PT_E_IO, PT_E_FORMAT (a file of neither
 * format, or damaged at its start), PT_E_NOMEM. */
struct recording *recording_open(const char *path, struct pt_error *err);
void recording_close(struct recording *r);

const struct rec_header *recording_header(const struct recording *r);
double recording_duration(const struct recording *r);
/* Why part of the file could not be read ("" when all of it could). */
const char *recording_damage(const struct recording *r);

struct recread_chunk;
/* A pytop recording's chunk index (what each span holds), or NULL for another kind of file. */
const struct recread_chunk *recording_chunks(const struct recording *r, size_t *n);

/* As recreader_scan(). */
int recording_scan(struct recording *r, double from, double to, rec_sample_fn fn, void *ctx,
                   struct pt_error *err);

/* The recording at T as a snapshot: the full snapshot taken last at or before T (what the GC,
 * the tasks, names and waits were), its threads' status and stacks replaced by the last sample
 * at or before T (exactly what was recorded), its time that sample's. A file without snapshots
 * (CPython's) gives the sample's threads alone, with a warning that says what the file does not
 * hold. Errors: PT_E_LIMIT (no sample), PT_E_FORMAT, PT_E_NOMEM. */
struct snapshot *recording_snapshot_at(struct recording *r, double t, struct pt_error *err);

#endif
