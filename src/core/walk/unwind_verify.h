/* unwind_verify: for unwind.c only: a snapshot's stacks checked against a later copy of what
 * their walk read, walked again while the copies differ, marked torn when they never agree. */
#ifndef PYTOP_CORE_UNWIND_VERIFY_H
#define PYTOP_CORE_UNWIND_VERIFY_H

#include <stddef.h>

struct thread_ctx;
struct unwind;

enum { UNWIND_VERIFY_RETRIES = 2 }; /* walks again of a stack whose copies differ, at most */

/* Reads again, with proc_read_now() and for all threads in as few system calls as can be, what
 * the walk of TS[0..N) used (each thread state's newest-frame pointer, and every frame header
 * it took: their links, kept with keep_links), and compares. A thread whose copies differ, or
 * whose walk frames.c found torn, is walked again from the later copy (every read from the
 * target itself), at most UNWIND_VERIFY_RETRIES times; one that never settles is marked torn
 * (T->fr.torn, its error saying why), its frames those of its last walk. Call right after
 * frames_walk(), before the frames are used. */
void unwind_verify_stacks(struct unwind *u, struct thread_ctx *ts, size_t n);

#endif
