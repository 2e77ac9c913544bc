/* snapcopy: deep copies of a snapshot, in an arena of their own. */
#ifndef PYTOP_SNAPCOPY_H
#define PYTOP_SNAPCOPY_H

struct snapshot;
struct pt_error;

/* A copy of S that owns all it holds (strings, warnings, GC tables and asyncio tasks included);
 * what S shares (a coroutine stack several tasks point to, a string) is shared in the copy
 * too. Free it with snapshot_free(). Errors: PT_E_NOMEM. */
struct snapshot *snapcopy_all(const struct snapshot *s, struct pt_error *err);

#endif
