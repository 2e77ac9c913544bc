/* waits: what each thread of a snapshot waits for, once per snapshot: the GIL, a lock (which,
 * through which variable, owned by whom), a descriptor, a sleep; and the threads that wait for
 * each other in a cycle. */
#ifndef PYTOP_CORE_WAITS_H
#define PYTOP_CORE_WAITS_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct py_layout;
struct runtime;
struct snapshot;
struct snap_thread;
struct frames_raw;
struct pt_error;

/* One thread of an interpreter as the walk left it: its Python frames, newest first. */
struct waits_thread {
    struct snap_thread *out;
    const struct frames_raw *frames;
    size_t n_frames;
};

/* What is kept from one snapshot to the next (how long each thread has waited); NULL when out
 * of memory. RT (may be NULL) gives where the GIL's globals are, where the GIL is no struct
 * (before 3.7); it is not kept. */
struct waits *waits_new(const struct py_layout *L, const struct runtime *rt);
void waits_free(struct waits *w);

/* Reads the waits of one interpreter's N threads (TS) into their snapshot threads; GIL is the
 * address of the last_holder field of the GIL state they take (0: unknown; before 3.7 the GIL's
 * globals tell it). Never fails: what cannot be read is SNAP_WAIT_UNKNOWN with its reason. */
void waits_read_interp(struct waits *w, struct proc *p, struct snapshot *s, uint64_t gil,
                       const struct waits_thread *ts, size_t n);

/* After every interpreter: owners named by thread ident become tids, the time each thread has
 * waited the same way, and S's deadlock cycles. */
void waits_finish(struct waits *w, struct snapshot *s);

#endif
