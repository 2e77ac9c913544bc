/* memory: how pytop asks its allocator to treat memory it frees. */
#include "config.h"

#include "core/util/memory.h"

#include <stdint.h>
#include <stdlib.h> /* for __GLIBC__ (features.h) */

#if defined(__GLIBC__)
#include <malloc.h>
#endif

enum {
    /* Blocks below this come from the heap, where freed memory is reused; glibc's default
     * starts at 128 KiB and moves with what is freed, so the blocks of a snapshot were mapped
     * and unmapped afresh each refresh. */
    MEMORY_MAP_ABOVE = 1 << 20,
    /* Free memory at the top of a heap is given back only beyond this: a refresh of 10 000
     * tasks takes about 4.5 MiB afresh. Larger settings (8 or 64 MiB) were a little faster
     * there but kept megabytes more of a 1 000-thread live view (RSS 32.6 -> 35.8 MiB). */
    MEMORY_KEEP_BYTES = 4 << 20,
};

bool memory_keep_freed(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    return mallopt(M_MMAP_THRESHOLD, MEMORY_MAP_ABOVE) == 1 &&
           mallopt(M_TRIM_THRESHOLD, MEMORY_KEEP_BYTES) == 1;
#else
    return false;
#endif
}

bool memory_grow(void **buf, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap) {
        return true;
    }
    size_t bigger = *cap == 0 ? first : *cap * 2;
    bigger = bigger < need ? need : bigger;
    if (size != 0 && bigger > SIZE_MAX / size) {
        return false;
    }
    void *grown = realloc(*buf, bigger * size);
    if (grown == NULL) {
        return false;
    }
    *buf = grown;
    *cap = bigger;
    return true;
}
