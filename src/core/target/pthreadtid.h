/* pthreadtid: kernel thread ids of threads whose thread states hold none (before 3.11). */
#ifndef PYTOP_CORE_PTHREADTID_H
#define PYTOP_CORE_PTHREADTID_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc;
struct pthreadtid;

/* Out of memory gives NULL; pthreadtid_fill() then finds nothing. */
struct pthreadtid *pthreadtid_new(void);
void pthreadtid_free(struct pthreadtid *t);

/* Fills TIDS[i] with the kernel id of the thread whose pthread_t is IDENTS[i] (0 where it
 * cannot be known), reading each thread's struct pthread in one batch. glibc keeps the tid at
 * an offset found once from MAIN_IDENT, the main thread's ident (its tid is the pid). An id is
 * trusted when the last call confirmed the same (ident, tid) pair, or the process lists it
 * among its threads now; the listing is read at most once per call, only for a new pair. PRE
 * (NULL: none) holds what was read ahead at IDENTS[i] + pthreadtid_offset(), 0 where not. */
void pthreadtid_fill(struct pthreadtid *t, struct proc *p, uint64_t main_ident,
                     const uint64_t *idents, const uint32_t *pre, pid_t *tids, size_t n);

/* Where struct pthread keeps the tid (added to a thread's ident), for reading it ahead with
 * other reads; 0 while not known. The value read there goes to pthreadtid_fill() as PRE[i]
 * (0: read it). */
uint64_t pthreadtid_offset(const struct pthreadtid *t);

#endif
