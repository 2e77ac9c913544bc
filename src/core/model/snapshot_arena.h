/* snapshot_arena: the memory a snapshot is built in: everything allocated here lives until snapshot_free(). */
#ifndef PYTOP_CORE_SNAPSHOT_ARENA_H
#define PYTOP_CORE_SNAPSHOT_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/model/snapshot.h"

/* Arena allocation: memory lives until snapshot_free(). NULL on out of memory. Zeroed, and
 * aligned for any type. */
void *snapshot_alloc(struct snapshot *s, size_t size);
/* Like snapshot_alloc for an array of N elements of SIZE bytes; NULL also when N * SIZE
 * overflows. */
void *snapshot_alloc_array(struct snapshot *s, size_t n, size_t size);
/* Makes the malloc'd BLOCK part of S, freed by snapshot_free(): memory built outside the arena
 * joins it without a copy. False (BLOCK still the caller's) on out of memory. */
bool snapshot_adopt(struct snapshot *s, void *block);
/* Copies LEN bytes into the arena; the result's ptr is NULL on out of memory. */
struct snap_str snapshot_strdup(struct snapshot *s, const char *bytes, size_t len);

#endif
