/* source: lines of the target's source files, read through its root and cached. */
#ifndef PYTOP_CORE_SOURCE_H
#define PYTOP_CORE_SOURCE_H

#include <stddef.h>

#include "core/write/snapshot_write.h"

struct proc;

struct source_cache;

/* Reads files as process P sees them (P must outlive the cache). NULL on out of memory. */
struct source_cache *source_cache_new(struct proc *p);
void source_cache_free(struct source_cache *c);

/* Line LINE (1-based) of FILE[0..FILE_LEN), without its newline (nor a carriage return before
 * it), and its length in *LEN; NULL when the file cannot be read or is shorter. Valid until the
 * next call. Files larger than LIMIT_SOURCE_FILE are not read; lines are cut at 64 KiB. */
const char *source_cache_line(struct source_cache *c, const char *file, size_t file_len,
                              int line, size_t *len);

/* The writers' source of lines (snapshot_source) served by C; no lines when C is NULL. */
struct snapshot_source source_cache_lines(struct source_cache *c);

#endif
