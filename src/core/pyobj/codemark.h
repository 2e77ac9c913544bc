/* codemark: whether the target's code marker may vouch for the code cache, checked as read. */
#ifndef PYTOP_CORE_CODEMARK_H
#define PYTOP_CORE_CODEMARK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/pyobj/code.h"
#include "core/layout/layout.h"

/* One unwinder's view of the main interpreter's code marker (L->code_marker). A counter of
 * co_versions (CODE_MARKER_NEXT_VERSION, CODE_MARKER_GLOBAL_NEXT_VERSION) is believed only
 * while it behaves like one: it never goes back, it stays above every co_version read after an
 * earlier value of it, and once 0 (worn out) it stays 0. A check that fails ends the belief for
 * the unwinder's life: its samples then check every code object again, as without a marker. */
struct codemark {
    enum layout_code_marker kind;
    uint64_t interp; /* the interpreter whose marker is read (the walk's first) */
    uint64_t epoch;  /* counts changes of INTERP: what was read under another is no
                      * longer vouched for (code_cache_distrust()) */
    bool broken;
    bool worn_out;        /* the counter read 0 */
    uint64_t last;        /* the last value read (0: none yet) */
    uint64_t max_version; /* the highest co_version read from the main interpreter */
    char why[96];         /* what check failed, once BROKEN */
};

void codemark_init(struct codemark *m, enum layout_code_marker kind);

/* Whether the next walk may find cached code objects vouched for: a marker that has not failed
 * a check nor worn out. A walk that will not (or may not) be vouched for reads its code
 * objects ahead with the head batch instead. */
bool codemark_is_vouching(const struct codemark *m);

/* Takes the marker's value RAW for a walk (READ: it was read, before any code object of the
 * walk) from the interpreter at INTERP, checks it, and returns the walk's generation for
 * code_cache_set_generation(): RAW itself (a counter widened to 64 bits), or
 * CODE_GENERATION_NONE when nothing vouches (no marker, not read, worn out, broken). Another
 * interpreter than the last walk's starts the checks afresh and counts a new epoch. */
uint64_t codemark_take(struct codemark *m, uint64_t interp, bool read, uint64_t raw);

/* The bound a cached entry's co_version must stay below to be vouched for under GENERATION
 * (code_cache_trust()): GENERATION for a counter of co_versions, 0 (no bound) otherwise. */
uint64_t codemark_version_below(const struct codemark *m, uint64_t generation);

/* Notes the co_version of a code object the main interpreter's walk read (after the marker). */
void codemark_saw_version(struct codemark *m, uint64_t version);

/* Ends the belief for good: a read found what the marker vouched for no longer so (WHY says
 * how; the code cache's contradicted count). */
void codemark_fail(struct codemark *m, const char *why);

#endif
