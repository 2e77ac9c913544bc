/* threadnames: the threading module's names of a target's threads, read and cached. */
#ifndef PYTOP_CORE_THREADNAMES_H
#define PYTOP_CORE_THREADNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct py_layout;
struct pt_error;

struct threadnames;

/* NULL on out of memory. */
struct threadnames *threadnames_new(void);
void threadnames_free(struct threadnames *t);

/* Makes sure the names of interpreter INTERP (whose sys.modules dict is at MODULES) are known
 * for the thread idents IDENTS[0..N): re-reads threading._active when one of them is missing
 * or the names are older than MAX_AGE seconds (NOW is a monotonic time in seconds). Errors:
 * those of the reads; the previous names stay. Returns 0 when threading is not imported. */
int threadnames_update(struct threadnames *t, struct proc *p, const struct py_layout *L,
                       uint64_t interp, uint64_t modules, const uint64_t *idents, size_t n,
                       double now, double max_age, struct pt_error *err);

/* The name of thread IDENT of INTERP, and its length; NULL when unknown. Valid until the next
 * threadnames_update(). */
const char *threadnames_get(const struct threadnames *t, uint64_t interp, uint64_t ident,
                            size_t *len);

/* Whether threading has thread IDENT of INTERP but its name could not be read as a str (not a
 * str, or a corrupt one). */
bool threadnames_is_unreadable(const struct threadnames *t, uint64_t interp, uint64_t ident);

#endif
