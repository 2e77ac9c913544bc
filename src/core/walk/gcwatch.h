/* gcwatch: which thread runs a collection where the interpreter does not mark it (before 3.15),
 * told exactly from the GIL's switch count and the GC's collection counts across walks. */
#ifndef PYTOP_CORE_GCWATCH_H
#define PYTOP_CORE_GCWATCH_H

#include <stdbool.h>
#include <stdint.h>

/* What one walk's head batch read of the main interpreter, all in one system call (in no
 * known order within it). */
struct gcwatch_head {
    uint64_t collecting; /* the GC's collecting flag */
    uint64_t holder;     /* the GIL's last_holder */
    uint64_t switches;   /* the GIL's switch_number */
    int64_t collections; /* the total of the generations' collection counts; -1 unknown */
};

/* What the same walk read again, in a later system call, while CURRENT.collecting was set. */
struct gcwatch_late {
    bool ok;
    uint64_t switches;
    int64_t collections;
};

/* The last walks' reads and what they proved. Zeroed: nothing known. */
struct gcwatch {
    struct gcwatch_head seen[3]; /* the last three walks', oldest first */
    unsigned n_seen;             /* how many of SEEN hold consecutive walks (at most 3) */
    uint64_t collector;          /* the thread state running the collection seen; 0 unknown */
    int64_t base;                /* the collection counts read before that collection began */
};

/* Forgets everything: a walk read nothing, or read another interpreter. */
void gcwatch_reset(struct gcwatch *w);

/* Whether a late read could prove anything about the collection HEAD saw running (it may be
 * one whose start the last walks saw, or the one already proven): if not, it costs nothing. */
bool gcwatch_wants_late(const struct gcwatch *w, const struct gcwatch_head *head);

/* Adds this walk's reads (LATE only when HEAD->collecting) and returns the thread state that
 * runs the collection in progress, when the reads prove it; 0 when none runs or it cannot be
 * told. */
uint64_t gcwatch_update(struct gcwatch *w, const struct gcwatch_head *head,
                        const struct gcwatch_late *late);

#endif
