/* sampler_table: the sampler's tables of threads, functions and (thread, function) pairs. */
#include "config.h"

#include "core/sampler/sampler_table.h"

#include <stdlib.h>
#include <string.h>

#include "core/model/snapshot.h"

enum { ENTRIES_MIN_CAP = 64, INDEX_MIN_SLOTS = 128 };

/* One slot of an index: the entry's number plus one (0: empty), and the entry's hash. */
struct sampler_table_hslot {
    uint32_t entry1;
    uint32_t hash;
};

struct thread_key {
    int64_t interp_id;
    pid_t tid;
    uint64_t thread_id;
};

struct pair_key {
    uint32_t thread;
    uint32_t func;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

/* A string's bytes eight at a time, then its length, so "ab" and "ab\0" differ. NULL (an
 * unknown string) hashes apart from every known one by the length it cannot have. */
static uint64_t hash_bytes(uint64_t h, const char *p, size_t len)
{
    if (p == NULL) {
        return mix(h, UINT64_MAX);
    }
    size_t left = len;
    while (left >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix(h, w);
        p += 8;
        left -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, left);
    return mix(mix(h, w), (uint64_t)len);
}

static uint32_t fold(uint64_t h)
{
    h = mix(h, 0x2545F4914F6CDD1Dull);
    return (uint32_t)(h ^ (h >> 32));
}

/* ---- the index ---- */

static bool index_grow(struct sampler_table_index *x)
{
    size_t slots = x->slots == NULL ? INDEX_MIN_SLOTS : (x->mask + 1) * 2;
    struct sampler_table_hslot *fresh = calloc(slots, sizeof *fresh);
    if (fresh == NULL) {
        return false;
    }
    size_t mask = slots - 1;
    if (x->slots != NULL) {
        for (size_t i = 0; i <= x->mask; i++) {
            if (x->slots[i].entry1 == 0) {
                continue;
            }
            size_t j = x->slots[i].hash & mask;
            while (fresh[j].entry1 != 0) {
                j = (j + 1) & mask;
            }
            fresh[j] = x->slots[i];
        }
    }
    free(x->slots);
    x->slots = fresh;
    x->mask = mask;
    return true;
}

/* The entry with HASH that EQ finds equal to KEY, or NONE. */
static uint32_t index_find(const struct sampler_table *t, const struct sampler_table_index *x,
                           uint32_t hash,
                           bool (*eq)(const struct sampler_table *, uint32_t, const void *),
                           const void *key)
{
    if (x->slots == NULL) {
        return SAMPLER_TABLE_NONE;
    }
    for (size_t i = hash & x->mask; x->slots[i].entry1 != 0; i = (i + 1) & x->mask) {
        if (x->slots[i].hash == hash && eq(t, x->slots[i].entry1 - 1, key)) {
            return x->slots[i].entry1 - 1;
        }
    }
    return SAMPLER_TABLE_NONE;
}

/* Adds ENTRY; the index keeps at least half its slots empty, so probes stay short. */
static bool index_insert(struct sampler_table_index *x, uint32_t hash, uint32_t entry)
{
    if ((x->slots == NULL || (x->used + 1) * 2 > x->mask + 1) && !index_grow(x)) {
        return false;
    }
    size_t i = hash & x->mask;
    while (x->slots[i].entry1 != 0) {
        i = (i + 1) & x->mask;
    }
    x->slots[i].entry1 = entry + 1;
    x->slots[i].hash = hash;
    x->used++;
    return true;
}

/* Removes ENTRY and shifts later members of its probe run back, so no tombstones build up. */
static void index_remove(struct sampler_table_index *x, uint32_t hash, uint32_t entry)
{
    if (x->slots == NULL) {
        return;
    }
    size_t i = hash & x->mask;
    while (x->slots[i].entry1 != entry + 1) {
        if (x->slots[i].entry1 == 0) {
            return;
        }
        i = (i + 1) & x->mask;
    }
    for (size_t j = (i + 1) & x->mask; x->slots[j].entry1 != 0; j = (j + 1) & x->mask) {
        size_t home = x->slots[j].hash & x->mask;
        /* J may fill the hole at I only if its home is not in (I, J] (cyclically). */
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            x->slots[i] = x->slots[j];
            i = j;
        }
    }
    x->slots[i].entry1 = 0;
    x->used--;
}

/* ---- entries ---- */

static void entries_init(struct sampler_table_entries *e, size_t size, size_t max)
{
    memset(e, 0, sizeof *e);
    e->size = size;
    e->max = max < SAMPLER_TABLE_NONE ? (uint32_t)max : SAMPLER_TABLE_NONE - 1;
}

static bool entries_grow(struct sampler_table_entries *e)
{
    uint32_t cap = e->cap < ENTRIES_MIN_CAP ? ENTRIES_MIN_CAP : e->cap * 2;
    if (cap > e->max) {
        cap = e->max;
    }
    void *items = realloc(e->items, (size_t)cap * e->size);
    if (items == NULL) {
        return false;
    }
    e->items = items;
    uint32_t *free_list = realloc(e->free_list, (size_t)cap * sizeof *free_list);
    if (free_list == NULL) {
        return false;
    }
    e->free_list = free_list;
    e->cap = cap;
    return true;
}

/* A zeroed entry not yet in the index, or NONE when the table is full or memory ran out. */
static uint32_t entries_take(struct sampler_table_entries *e)
{
    if (e->live >= e->max) {
        return SAMPLER_TABLE_NONE;
    }
    uint32_t i;
    if (e->n_free > 0) {
        i = e->free_list[--e->n_free];
    } else {
        if (e->n == e->cap && !entries_grow(e)) {
            return SAMPLER_TABLE_NONE;
        }
        i = e->n++;
    }
    memset((char *)e->items + (size_t)i * e->size, 0, e->size);
    e->live++;
    return i;
}

static void entries_release(struct sampler_table_entries *e, uint32_t i)
{
    e->free_list[e->n_free++] = i;
    e->live--;
}

static void entries_clear(struct sampler_table_entries *e)
{
    e->n = 0;
    e->live = 0;
    e->n_free = 0;
    if (e->index.slots != NULL) {
        memset(e->index.slots, 0, (e->index.mask + 1) * sizeof *e->index.slots);
    }
    e->index.used = 0;
}

static void entries_free(struct sampler_table_entries *e)
{
    free(e->items);
    free(e->free_list);
    free(e->index.slots);
    memset(e, 0, sizeof *e);
}

/* ---- names ---- */

/* A copy of a target string within the name budget; NULL for an unknown string, or when the
 * budget or memory ran out (the name is then unknown: never a guess). */
static char *name_dup(struct sampler_table *t, const char *p, size_t len)
{
    if (p == NULL || len > t->limits.name_bytes - t->name_bytes) {
        return NULL;
    }
    char *copy = malloc(len > 0 ? len : 1);
    if (copy != NULL) {
        memcpy(copy, p, len);
        t->name_bytes += len;
    }
    return copy;
}

static void name_free(struct sampler_table *t, char *p, size_t len)
{
    if (p != NULL) {
        t->name_bytes -= len;
        free(p);
    }
}

static bool same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return alen == blen && memcmp(a, b, alen) == 0;
}

/* ---- the tables ---- */

void sampler_table_init(struct sampler_table *t, const struct sampler_table_limits *limits)
{
    memset(t, 0, sizeof *t);
    t->limits = *limits;
    entries_init(&t->threads, sizeof(struct sampler_table_thread), limits->threads);
    entries_init(&t->funcs, sizeof(struct sampler_table_func), limits->funcs);
    entries_init(&t->pairs, sizeof(struct sampler_table_pair), limits->pairs);
}

void sampler_table_clear(struct sampler_table *t)
{
    for (uint32_t i = 0; i < t->threads.n; i++) {
        struct sampler_table_thread *th = sampler_table_thread_at(t, i);
        if (th->used) {
            name_free(t, th->name, th->name_len);
            free(th->hints);
        }
    }
    for (uint32_t i = 0; i < t->funcs.n; i++) {
        struct sampler_table_func *f = sampler_table_func_at(t, i);
        if (f->used) {
            name_free(t, f->function, f->function_len);
            name_free(t, f->file, f->file_len);
        }
    }
    entries_clear(&t->threads);
    entries_clear(&t->funcs);
    entries_clear(&t->pairs);
}

void sampler_table_free(struct sampler_table *t)
{
    sampler_table_clear(t);
    entries_free(&t->threads);
    entries_free(&t->funcs);
    entries_free(&t->pairs);
}

static uint32_t thread_hash(const struct thread_key *k)
{
    return fold(mix(mix(mix(0, (uint64_t)k->interp_id), (uint64_t)k->tid), k->thread_id));
}

static bool thread_eq(const struct sampler_table *t, uint32_t i, const void *key)
{
    const struct thread_key *k = key;
    const struct sampler_table_thread *th = sampler_table_thread_at(t, i);
    return th->tid == k->tid && th->thread_id == k->thread_id && th->interp_id == k->interp_id;
}

uint32_t sampler_table_find_thread(const struct sampler_table *t, int64_t interp_id, pid_t tid,
                                   uint64_t thread_id)
{
    struct thread_key k = {interp_id, tid, thread_id};
    return index_find(t, &t->threads.index, thread_hash(&k), thread_eq, &k);
}

static void thread_rename(struct sampler_table *t, struct sampler_table_thread *th,
                          const char *name, size_t len)
{
    /* A name that could not be read this time is still the name last read. */
    if (name == NULL || same_bytes(th->name, th->name_len, name, len)) {
        return;
    }
    name_free(t, th->name, th->name_len);
    th->name = name_dup(t, name, len);
    th->name_len = th->name != NULL ? len : 0;
}

uint32_t sampler_table_thread(struct sampler_table *t, int64_t interp_id, pid_t tid,
                              uint64_t thread_id, const char *name, size_t name_len)
{
    struct thread_key k = {interp_id, tid, thread_id};
    uint32_t hash = thread_hash(&k);
    uint32_t i = index_find(t, &t->threads.index, hash, thread_eq, &k);
    if (i == SAMPLER_TABLE_NONE) {
        i = entries_take(&t->threads);
        if (i == SAMPLER_TABLE_NONE) {
            return i;
        }
        if (!index_insert(&t->threads.index, hash, i)) {
            entries_release(&t->threads, i);
            return SAMPLER_TABLE_NONE;
        }
        struct sampler_table_thread *th = sampler_table_thread_at(t, i);
        th->used = true;
        th->hash = hash;
        th->interp_id = interp_id;
        th->tid = tid;
        th->thread_id = thread_id;
        th->newest.bucket = INT64_MIN;
    }
    thread_rename(t, sampler_table_thread_at(t, i), name, name_len);
    return i;
}

static uint32_t func_hash(const struct sampler_func_key *f)
{
    uint64_t h = hash_bytes(0, f->function, f->function_len);
    h = hash_bytes(h, f->file, f->file_len);
    return fold(mix(h, (uint64_t)(int64_t)f->first_line));
}

static bool func_eq(const struct sampler_table *t, uint32_t i, const void *key)
{
    const struct sampler_func_key *f = key;
    const struct sampler_table_func *e = sampler_table_func_at(t, i);
    return e->first_line == f->first_line &&
           same_bytes(e->function, e->function_len, f->function, f->function_len) &&
           same_bytes(e->file, e->file_len, f->file, f->file_len);
}

bool sampler_table_func_is(const struct sampler_table *t, uint32_t i,
                           const struct sampler_func_key *k)
{
    return i < t->funcs.n && sampler_table_func_at(t, i)->used && func_eq(t, i, k);
}

struct sampler_table_hint *sampler_table_thread_hints(struct sampler_table *t, uint32_t i,
                                                      size_t depth, size_t *n)
{
    struct sampler_table_thread *th = sampler_table_thread_at(t, i);
    size_t want = depth < SAMPLER_TABLE_HINTS ? depth : SAMPLER_TABLE_HINTS;
    if (th->hints == NULL || th->n_hints < want) {
        size_t ncap = th->n_hints ? th->n_hints : 16;
        while (ncap < want) {
            ncap *= 2;
        }
        ncap = ncap < SAMPLER_TABLE_HINTS ? ncap : SAMPLER_TABLE_HINTS;
        struct sampler_table_hint *fresh = realloc(th->hints, ncap * sizeof *fresh);
        if (fresh == NULL) {
            *n = th->n_hints;
            return th->hints;
        }
        for (size_t k = th->n_hints; k < ncap; k++) {
            fresh[k] = (struct sampler_table_hint){0, 0, SAMPLER_TABLE_NONE, SAMPLER_TABLE_NONE};
        }
        th->hints = fresh;
        th->n_hints = (uint32_t)ncap;
    }
    *n = th->n_hints;
    return th->hints;
}

uint32_t sampler_table_func(struct sampler_table *t, const struct sampler_func_key *f)
{
    uint32_t hash = func_hash(f);
    uint32_t i = index_find(t, &t->funcs.index, hash, func_eq, f);
    if (i != SAMPLER_TABLE_NONE) {
        return i;
    }
    i = entries_take(&t->funcs);
    if (i == SAMPLER_TABLE_NONE) {
        return i;
    }
    struct sampler_table_func *e = sampler_table_func_at(t, i);
    e->function = name_dup(t, f->function, f->function_len);
    e->file = name_dup(t, f->file, f->file_len);
    /* A name that could not be kept would merge with the unknown one: refuse the entry. */
    if ((e->function == NULL && f->function != NULL) || (e->file == NULL && f->file != NULL) ||
        !index_insert(&t->funcs.index, hash, i)) {
        name_free(t, e->function, f->function_len);
        name_free(t, e->file, f->file_len);
        entries_release(&t->funcs, i);
        return SAMPLER_TABLE_NONE;
    }
    e->used = true;
    e->hash = hash;
    e->function_len = f->function_len;
    e->file_len = f->file_len;
    e->first_line = f->first_line;
    e->unreadable = f->unreadable;
    e->serial = ++t->next_func_serial;
    return i;
}

static uint32_t pair_hash(const struct pair_key *k)
{
    return fold(mix(mix(0, k->thread), k->func));
}

static bool pair_eq(const struct sampler_table *t, uint32_t i, const void *key)
{
    const struct pair_key *k = key;
    const struct sampler_table_pair *p = sampler_table_pair_at(t, i);
    return p->thread == k->thread && p->func == k->func;
}

uint32_t sampler_table_pair(struct sampler_table *t, uint32_t thread, uint32_t func)
{
    struct pair_key k = {thread, func};
    uint32_t hash = pair_hash(&k);
    uint32_t i = index_find(t, &t->pairs.index, hash, pair_eq, &k);
    if (i != SAMPLER_TABLE_NONE) {
        return i;
    }
    i = entries_take(&t->pairs);
    if (i == SAMPLER_TABLE_NONE) {
        return i;
    }
    if (!index_insert(&t->pairs.index, hash, i)) {
        entries_release(&t->pairs, i);
        return SAMPLER_TABLE_NONE;
    }
    struct sampler_table_pair *p = sampler_table_pair_at(t, i);
    p->used = true;
    p->hash = hash;
    p->thread = thread;
    p->func = func;
    p->newest.bucket = INT64_MIN;
    return i;
}

void sampler_table_drop_thread(struct sampler_table *t, uint32_t i)
{
    struct sampler_table_thread *th = sampler_table_thread_at(t, i);
    index_remove(&t->threads.index, th->hash, i);
    name_free(t, th->name, th->name_len);
    free(th->hints);
    th->used = false;
    th->name = NULL;
    th->hints = NULL;
    th->n_hints = 0;
    entries_release(&t->threads, i);
}

void sampler_table_drop_func(struct sampler_table *t, uint32_t i)
{
    struct sampler_table_func *f = sampler_table_func_at(t, i);
    index_remove(&t->funcs.index, f->hash, i);
    name_free(t, f->function, f->function_len);
    name_free(t, f->file, f->file_len);
    f->used = false;
    f->function = NULL;
    f->file = NULL;
    entries_release(&t->funcs, i);
}

void sampler_table_drop_pair(struct sampler_table *t, uint32_t i)
{
    struct sampler_table_pair *p = sampler_table_pair_at(t, i);
    index_remove(&t->pairs.index, p->hash, i);
    p->used = false;
    entries_release(&t->pairs, i);
}
