/* sampler_table: the sampler's tables of threads, functions and (thread, function) pairs. */
#ifndef PYTOP_CORE_SAMPLER_TABLE_H
#define PYTOP_CORE_SAMPLER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model/snapshot.h"

enum {
    SAMPLER_TABLE_NONE = UINT32_MAX, /* no entry: the table is full, or memory ran out */
    SAMPLER_TABLE_HINTS = 1024,      /* frames of a thread's last stack remembered, outermost
                                      * first */
};

/* What identifies a function: (function, file, first line). NULL strings are unknown. */
struct sampler_func_key {
    const char *function;
    size_t function_len;
    const char *file;
    size_t file_len;
    int first_line;
    /* Not part of the identity (the name tells): why a frame pytop could not read was counted
     * under this name, SNAP_UNREADABLE_NONE for any other. */
    enum snap_unreadable unreadable;
};

/* What frame K (from the outermost) of a thread's last stack was counted as. CODE is the code
 * entry's serial (0: the frame came from a snapshot, matched by its strings); the hint is
 * trusted only while function FUNC is still the entry of serial FUNC_SERIAL. */
struct sampler_table_hint {
    uint64_t code;
    uint64_t func_serial;
    uint32_t func;
    uint32_t pair;
};

/* Where an entry's counts for the newest bucket sit, so that one sample adds to them in O(1). */
struct sampler_table_slot {
    int64_t bucket; /* absolute bucket number; INT64_MIN when none */
    uint32_t index; /* in that bucket's delta array */
};

/* Window counts live in the entries; an entry whose counts fall to zero is removed, so the
 * tables hold what the window holds and their indices stay put while an entry lives. */
struct sampler_table_thread {
    bool used;
    uint32_t hash;
    int64_t interp_id;
    pid_t tid;
    uint64_t thread_id;
    char *name; /* NULL: unknown */
    size_t name_len;
    uint64_t samples; /* matched the mode */
    uint64_t seen;    /* the entry lives while the window holds a sample that saw it */
    uint64_t gil;
    uint64_t cpu;
    uint64_t cpu_known; /* samples whose CPU state was read */
    uint64_t gc;
    uint64_t cpu_ns; /* CPU time the kernel counted for the thread in the window */
    struct sampler_table_slot newest;
    /* The function and pair entries of the last stack's frames, counted from the outermost.
     * Stacks mostly repeat, so checking the hint is cheaper than a lookup; a hint is only
     * trusted after a check. NULL until first needed; N_HINTS of them. */
    struct sampler_table_hint *hints;
    uint32_t n_hints;
};

struct sampler_table_func {
    bool used;
    uint32_t hash;
    char *function; /* NULL: unknown */
    size_t function_len;
    char *file; /* NULL: unknown */
    size_t file_len;
    int first_line;
    enum snap_unreadable unreadable; /* as the key's */
    uint64_t serial; /* never reused: tells a hint whether the entry is still its function */
    uint64_t own; /* sums over the function's pairs */
    uint64_t total;
    uint64_t own_state;
    uint64_t own_on_cpu;
    uint64_t stack_mark; /* the last stack that counted it in TOTAL */
};

struct sampler_table_pair {
    bool used;
    uint32_t hash;
    uint32_t thread;
    uint32_t func;
    uint64_t own;
    uint64_t total;
    uint64_t own_state;
    uint64_t own_on_cpu;
    struct sampler_table_slot newest;
};

/* An open-addressing index from a hash to an entry of one table. */
struct sampler_table_index {
    struct sampler_table_hslot *slots;
    size_t mask; /* slot count - 1; the count is a power of two */
    size_t used;
};

/* One table's entries: a dense array with holes kept on a free list. */
struct sampler_table_entries {
    size_t size;  /* bytes of one entry */
    uint32_t max; /* most live entries */
    void *items;
    uint32_t n; /* high-water mark: entries [0, n) exist, used or free */
    uint32_t cap;
    uint32_t live;
    uint32_t *free_list;
    uint32_t n_free;
    struct sampler_table_index index;
};

/* Bounds on live entries, and on the bytes of names they hold. */
struct sampler_table_limits {
    size_t threads;
    size_t funcs;
    size_t pairs;
    size_t name_bytes;
};

struct sampler_table {
    struct sampler_table_limits limits;
    struct sampler_table_entries threads;
    struct sampler_table_entries funcs;
    struct sampler_table_entries pairs;
    size_t name_bytes; /* bytes of thread, function and file names held */
    uint64_t next_func_serial;
};

/* Sets up empty tables (no memory is taken until the first entry). */
void sampler_table_init(struct sampler_table *t, const struct sampler_table_limits *limits);
/* Removes every entry; the memory stays for reuse. */
void sampler_table_clear(struct sampler_table *t);
void sampler_table_free(struct sampler_table *t);

static inline struct sampler_table_thread *sampler_table_thread_at(const struct sampler_table *t,
                                                                   uint32_t i)
{
    return &((struct sampler_table_thread *)t->threads.items)[i];
}

static inline struct sampler_table_func *sampler_table_func_at(const struct sampler_table *t,
                                                               uint32_t i)
{
    return &((struct sampler_table_func *)t->funcs.items)[i];
}

static inline struct sampler_table_pair *sampler_table_pair_at(const struct sampler_table *t,
                                                               uint32_t i)
{
    return &((struct sampler_table_pair *)t->pairs.items)[i];
}

/* The entry of the thread (INTERP_ID, TID, THREAD_ID), added with zero counts when new; its
 * name is updated when the thread renamed itself (NAME NULL: not known this time). NONE when
 * the table is full or memory ran out. */
uint32_t sampler_table_thread(struct sampler_table *t, int64_t interp_id, pid_t tid,
                              uint64_t thread_id, const char *name, size_t name_len);
/* The existing entry of the thread, or SAMPLER_TABLE_NONE. */
uint32_t sampler_table_find_thread(const struct sampler_table *t, int64_t interp_id, pid_t tid,
                                   uint64_t thread_id);
/* The entry of function K, added when new; or NONE. */
uint32_t sampler_table_func(struct sampler_table *t, const struct sampler_func_key *k);
/* The entry of the pair, added when new; or NONE. */
uint32_t sampler_table_pair(struct sampler_table *t, uint32_t thread, uint32_t func);

/* Whether entry I is in use and is function K. */
bool sampler_table_func_is(const struct sampler_table *t, uint32_t i,
                           const struct sampler_func_key *k);
/* Thread I's hints, at least DEPTH of them (at most SAMPLER_TABLE_HINTS; new ones unset: FUNC
 * NONE), grown on demand; NULL on out of memory. *N tells how many there are. */
struct sampler_table_hint *sampler_table_thread_hints(struct sampler_table *t, uint32_t i,
                                                      size_t depth, size_t *n);

/* Remove an entry whose counts fell to zero. */
void sampler_table_drop_thread(struct sampler_table *t, uint32_t i);
void sampler_table_drop_func(struct sampler_table *t, uint32_t i);
void sampler_table_drop_pair(struct sampler_table *t, uint32_t i);

#endif
