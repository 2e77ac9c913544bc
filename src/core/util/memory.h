/* memory: how pytop asks its allocator to treat memory it frees, and growing arrays. */
#ifndef PYTOP_CORE_MEMORY_H
#define PYTOP_CORE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

/* Keeps the memory pytop frees (up to 4 MiB free at a heap's top, and blocks below 1 MiB in
 * the heap) for its next allocations instead of giving it back to the kernel. Each refresh builds a snapshot of the size the last one freed
 * (megabytes with thousands of tasks); pages handed back and taken again cost a page fault
 * each (several microseconds under a hypervisor), which doubled the time of a warm snapshot of
 * 10 000 tasks. Called once, first thing, by programs that take snapshots repeatedly. Returns
 * whether the C library took the setting (false where it has none: nothing changes). */
bool memory_keep_freed(void);

/* Makes the array *BUF (*CAP elements of SIZE bytes) hold at least NEED elements: doubled, or
 * FIRST elements to begin with, or NEED when that is more. False when out of memory (*BUF and
 * *CAP unchanged). */
bool memory_grow(void **buf, size_t *cap, size_t need, size_t size, size_t first);

#endif
