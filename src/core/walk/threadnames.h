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
 * for the threads IDENTS[0..N) running as kernel threads TIDS[0..N) (0: unknown): re-reads
 * threading._active when one of them is missing, its ident is listed for another kernel thread
 * (idents are reused), or the names are older than MAX_AGE seconds (NOW is a monotonic time in
 * seconds). Errors: those of the reads; the previous names stay. Returns 0 when threading is
 * not imported. */
int threadnames_update(struct threadnames *t, struct proc *p, const struct py_layout *L,
                       uint64_t interp, uint64_t modules, const uint64_t *idents,
                       const uint64_t *tids, size_t n, double now, double max_age,
                       struct pt_error *err);

/* The name of thread IDENT of INTERP running as kernel thread TID (0: unknown), and its length;
 * NULL when unknown, or when threading's Thread with that ident ran on another kernel thread
 * (an earlier thread's name). Valid until the next threadnames_update(). */
const char *threadnames_get(const struct threadnames *t, uint64_t interp, uint64_t ident,
                            uint64_t tid, size_t *len);

/* Whether threading has thread IDENT (kernel thread TID) of INTERP but its name could not be
 * read as a str (not a str, or a corrupt one). */
bool threadnames_is_unreadable(const struct threadnames *t, uint64_t interp, uint64_t ident,
                               uint64_t tid);

#endif
