/* snapshot_write: a snapshot written out: the JSON document and the traceback-like text dump. */
#ifndef PYTOP_CORE_SNAPSHOT_WRITE_H
#define PYTOP_CORE_SNAPSHOT_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/model/snapshot.h"

struct pt_error;

/* Source lines for the text writer. Given a file name as the target sees it and a 1-based line
 * number, returns the line's text (without trailing newline) in a buffer the callback owns, or
 * NULL when unavailable. CTX is passed through. May be NULL (no source lines). */
struct snapshot_source {
    const char *(*line)(void *ctx, const char *file, size_t file_len, int line, size_t *len);
    void *ctx;
};

/* Writes S as one JSON document (no trailing newline unless NEWLINE). Errors: PT_E_IO. */
int snapshot_write_json(const struct snapshot *s, FILE *out, bool newline, struct pt_error *err);

struct strbuf;
/* The writer of one JSON document, as the callbacks below see it. */
struct snapshot_json_out;

/* Members another module adds to the document (batch mode adds the sampler's statistics; the
 * snapshot knows nothing of them). Each callback appends zero or more members, each beginning
 * with a comma (,"key":value), to snapshot_json_buf(W), and may call snapshot_json_flush(W)
 * between members so that a long list is written out as it goes. Any callback may be NULL. */
struct snapshot_json_extra {
    void (*head)(void *ctx, struct snapshot_json_out *w);   /* top level, after "python" */
    void (*thread)(void *ctx, struct snapshot_json_out *w, const struct snap_interp *in,
                   const struct snap_thread *t);            /* in each thread, after "in_gc" */
    void (*tail)(void *ctx, struct snapshot_json_out *w);   /* top level, after "warnings" */
    /* more entries of "warnings", after the snapshot's own: through
     * snapshot_json_add_warning() only */
    void (*warnings)(void *ctx, struct snapshot_json_out *w);
    void *ctx;
};

/* Like snapshot_write_json, with EXTRA's members (EXTRA may be NULL). Errors: PT_E_IO,
 * PT_E_NOMEM. */
int snapshot_write_json_extra(const struct snapshot *s, FILE *out, bool newline,
                              const struct snapshot_json_extra *extra, struct pt_error *err);
/* The buffer the document is built in; valid during the callback. */
struct strbuf *snapshot_json_buf(struct snapshot_json_out *w);
/* Writes out what the buffer holds once it is large; errors are reported at the end. */
void snapshot_json_flush(struct snapshot_json_out *w);
/* Adds TEXT (LEN bytes) to the "warnings" array; only from the WARNINGS callback. */
void snapshot_json_add_warning(struct snapshot_json_out *w, const char *text, size_t len);

/* Writes S as the traceback-like text dump. Errors: PT_E_IO. */
int snapshot_write_text(const struct snapshot *s, FILE *out, const struct snapshot_source *src,
                        struct pt_error *err);

/* The parts of the text dump, for a writer that puts more between them (the incident report):
 * the header names the process (pid, Python, command line, start) and when the snapshot was
 * taken; the body holds the threads, GC, tasks and warnings. */
enum snapshot_text_parts {
    SNAPSHOT_TEXT_HEADER = 1,
    SNAPSHOT_TEXT_BODY = 2,
    SNAPSHOT_TEXT_ALL = 3,
};
/* Writes the PARTS of S's text dump, as snapshot_write_text() does. Errors: PT_E_IO,
 * PT_E_NOMEM. */
int snapshot_write_text_parts(const struct snapshot *s, FILE *out,
                              const struct snapshot_source *src, enum snapshot_text_parts parts,
                              struct pt_error *err);

#endif
