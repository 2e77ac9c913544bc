/* gcwatch: which thread runs a collection where the interpreter does not mark it (before 3.15),
 * told exactly from the GIL's switch count and the GC's collection counts across walks. */
#include "config.h"

#include "core/walk/gcwatch.h"

#include <string.h>

/*
 * What the target guarantees (3.8-3.14; Python/ceval_gil.c, Modules/gcmodule.c, Python/gc.c):
 *  G1 A collection sets `collecting` to 1 while its thread holds the GIL, and only when it is 0
 *     (collections never overlap); it sets it back to 0 at its end.
 *  G2 take_gil(T), under the GIL's mutex and after setting `locked`: if T is not `last_holder`,
 *     it stores last_holder = T, then increments switch_number, then returns. drop_gil(T) stores
 *     last_holder = T (T holds the GIL then). Nothing else writes them while the process runs,
 *     and switch_number never decreases.
 *  G3 Each collection adds one to a generation's `collections` before it ends; the counts never
 *     decrease.
 * Walks are apart in time; within one system call the values are read in no known order.
 *
 * Start. Walks A < B < C < D (consecutive head batches), then L (D's late read): C read
 * collecting = 0, D read 1, and A's switch_number equals L's. Then the collection D saw was
 * started by the thread state B read as last_holder.
 *   By G1 that collection began at a time t after C's read of the flag (so after all of A and
 *   B), by a thread T holding the GIL at t. No increment happened between A's and L's reads of
 *   switch_number (both gave one value, and it never decreases; 64 bits do not wrap). So by G2
 *   every store that changed last_holder in that span belongs to a take whose increment comes
 *   after L's read: there is at most one such take (it keeps the mutex until its increment),
 *   call its store u. T holds
 *   the GIL at t and that take only stores u after setting `locked`, so after T released it:
 *   t < u. Hence last_holder did not change from A's read of switch_number until t; at t it is
 *   T (T took the GIL and set it, or it was T already; while T holds the GIL no one else
 *   stores it). B's read lies in between: it read T.
 * Carry. Once the start is proven, with the counts B read, a later walk that reads
 * collecting = 1 and, in its late read, the same counts, sees the same collection: had that one
 * ended before the flag was read, by G3 it would have added to the counts after B's read and
 * before the late read.
 * The collector's thread state lives as long as its collection, so the state at that address
 * when the walk reports is the collector (unwind.c names it only when it is one of the
 * interpreter's threads, alone on its OS thread).
 * Not covered: a thread that swaps thread states on one OS thread without passing through
 * take_gil (PyThreadState_Swap before 3.12): last_holder then names the state that took the
 * GIL on that OS thread, which may not be the one collecting.
 */

void gcwatch_reset(struct gcwatch *w)
{
    memset(w, 0, sizeof *w);
}

/* The start condition of the proof above, but for the switch count of the late read. */
static bool may_have_seen_start(const struct gcwatch *w)
{
    return w->n_seen == 3 && w->seen[2].collecting == 0 && w->seen[1].holder != 0;
}

bool gcwatch_wants_late(const struct gcwatch *w, const struct gcwatch_head *head)
{
    return head->collecting != 0 && (may_have_seen_start(w) || (w->collector != 0 && w->base >= 0));
}

uint64_t gcwatch_update(struct gcwatch *w, const struct gcwatch_head *head,
                        const struct gcwatch_late *late)
{
    const struct gcwatch_head *a = &w->seen[0];
    const struct gcwatch_head *b = &w->seen[1];
    bool unproven = false;
    if (head->collecting == 0) {
        w->collector = 0;
    } else if (late == NULL || !late->ok) {
        /* Nothing proven by this walk, nothing lost: a later walk that reads the same counts
         * still sees the collection of the carried start (Carry above holds across it). */
        unproven = true;
    } else if (may_have_seen_start(w) && a->switches == late->switches) {
        w->collector = b->holder;
        w->base = b->collections;
    } else if (w->collector == 0 || w->base < 0 || late->collections != w->base) {
        w->collector = 0;
    }
    memmove(&w->seen[0], &w->seen[1], 2 * sizeof w->seen[0]);
    w->seen[2] = *head;
    w->n_seen += w->n_seen < 3;
    return unproven ? 0 : w->collector;
}
