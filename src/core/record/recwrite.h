/* recwrite: writes a .pyrec recording (doc/recording.md): compact samples, deduplicated in
 * per-chunk tables, each thread-sample a delta to that thread's previous one; a full snapshot
 * once per interval; zstd chunks, each complete on disk before the next begins. */
#ifndef PYTOP_CORE_RECWRITE_H
#define PYTOP_CORE_RECWRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model/snapshot.h"
#include "core/record/recsample.h"

struct sample;
struct py_layout;
struct pt_error;

struct recwriter;

/* H from snapshot S (the target, its Python, when it started and when S was taken, which is
 * time 0), RATE and INTERVAL; H points into S. */
void recwriter_header_from(struct rec_header *h, const struct snapshot *s, double rate,
                           double interval);

/* Writes to FD (which the writer closes) a recording whose header H says (its strings are
 * copied; format and recorder are the writer's own). Errors: PT_E_NOMEM, PT_E_IO. */
struct recwriter *recwriter_open(int fd, const struct rec_header *h, struct pt_error *err);

/* Whether frames keep their instruction's offset (--opcodes: the heat view's instructions),
 * else only their line: the frames of one line are then one, and a busy loop costs fewer bytes.
 * Off until set; set before the first sample. */
void recwriter_set_offsets(struct recwriter *w, bool on);

/* Adds SMP, taken at T seconds from the start; ON_CPU[i] (NULL: unknown) the i-th thread's
 * state; L the layout that reads its code objects' line tables. Returns 0, or -1 (PT_E_IO,
 * PT_E_NOMEM, PT_E_LIMIT): the recording then stops taking more. */
int recwriter_sample(struct recwriter *w, double t, const struct sample *smp,
                     const enum snap_bool *on_cpu, const struct py_layout *L,
                     struct pt_error *err);
/* A sample that failed at T, and why. */
int recwriter_error(struct recwriter *w, double t, const char *why, struct pt_error *err);
/* The full snapshot taken at T. */
int recwriter_snapshot(struct recwriter *w, double t, const struct snapshot *s,
                       struct pt_error *err);
/* The target exec()ed PROGRAM at T. */
int recwriter_exec(struct recwriter *w, double t, const char *program, struct pt_error *err);

/* Bytes written to the file so far (whole chunks), and samples recorded. */
uint64_t recwriter_bytes(const struct recwriter *w);
uint64_t recwriter_samples(const struct recwriter *w);

/* Writes what is pending, marks the end at T, and closes the file. Returns 0, or -1 when some
 * write failed (the file then ends at its last complete chunk). Frees W. */
int recwriter_close(struct recwriter *w, double t, struct pt_error *err);

#endif
