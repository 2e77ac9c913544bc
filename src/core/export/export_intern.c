/* export_intern: the exporters' tables of functions, frames, stacks, (thread, stack) pairs and
 * threads, each an array with an open-addressing index over it. */
#include "config.h"

#include "core/export/export_int.h"

#include <stdlib.h>
#include <string.h>

#include "core/model/snapshot_words.h"

int export_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap) {
        return 0;
    }
    size_t ncap = *cap < 16 ? 16 : *cap;
    while (ncap < n) {
        ncap *= 2;
    }
    void **p = arr;
    void *grown = reallocarray(*p, ncap, elem);
    if (grown == NULL) {
        return -1;
    }
    *p = grown;
    *cap = ncap;
    return 0;
}

static uint32_t mix64(uint64_t v)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ULL;
    v ^= v >> 33;
    return (uint32_t)v;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ b[i]) * 0x100000001b3ULL;
    }
    return h;
}

static uint64_t hash_str(uint64_t h, struct snap_str s)
{
    if (s.ptr == NULL) {
        return (h ^ 0xff) * 0x100000001b3ULL;
    }
    h = hash_bytes(h, s.ptr, s.len);
    return (h ^ 0xfe) * 0x100000001b3ULL;
}

static bool str_eq(struct snap_str a, struct snap_str b)
{
    if (a.ptr == NULL || b.ptr == NULL) {
        return a.ptr == b.ptr;
    }
    return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0;
}

typedef bool (*index_eq)(const struct exporter *x, uint32_t idx, const void *key);

/* Makes room for one more entry, so that the slot a lookup finds stays valid for the insert. */
static int index_reserve(struct export_index *ix)
{
    size_t cap = ix->slots != NULL ? ix->mask + 1 : 0;
    if ((ix->used + 1) * 2 <= cap) {
        return 0;
    }
    size_t ncap = cap == 0 ? 64 : cap * 2;
    uint32_t *slots = calloc(ncap, sizeof *slots);
    uint32_t *hashes = malloc(ncap * sizeof *hashes);
    if (slots == NULL || hashes == NULL) {
        free(slots);
        free(hashes);
        return -1;
    }
    for (size_t i = 0; i < cap; i++) {
        if (ix->slots[i] == 0) {
            continue;
        }
        size_t j = ix->hashes[i] & (ncap - 1);
        while (slots[j] != 0) {
            j = (j + 1) & (ncap - 1);
        }
        slots[j] = ix->slots[i];
        hashes[j] = ix->hashes[i];
    }
    free(ix->slots);
    free(ix->hashes);
    ix->slots = slots;
    ix->hashes = hashes;
    ix->mask = ncap - 1;
    return 0;
}

/* The index of the entry EQ finds under HASH, or EXPORT_NONE with *POS the empty slot where
 * it goes. The index must have been reserved. */
static uint32_t index_lookup(const struct export_index *ix, uint32_t hash, index_eq eq,
                             const struct exporter *x, const void *key, size_t *pos)
{
    size_t i = hash & ix->mask;
    for (;;) {
        uint32_t v = ix->slots[i];
        if (v == 0) {
            *pos = i;
            return EXPORT_NONE;
        }
        if (ix->hashes[i] == hash && eq(x, v - 1, key)) {
            return v - 1;
        }
        i = (i + 1) & ix->mask;
    }
}

static void index_insert(struct export_index *ix, size_t pos, uint32_t hash, uint32_t idx)
{
    ix->slots[pos] = idx + 1;
    ix->hashes[pos] = hash;
    ix->used++;
}

static void index_free(struct export_index *ix)
{
    free(ix->slots);
    free(ix->hashes);
    memset(ix, 0, sizeof *ix);
}

static uint32_t nomem(struct pt_error *err, const char *what)
{
    pt_error_set(err, PT_E_NOMEM, 0, "no memory for the export's %s", what);
    return EXPORT_NONE;
}

static uint32_t too_many(struct pt_error *err, const char *what, size_t limit)
{
    pt_error_set(err, PT_E_LIMIT, 0, "more than %zu %s in one export", limit, what);
    return EXPORT_NONE;
}

int export_copy_str(struct exporter *x, struct snap_str s, struct snap_str *out,
                    struct pt_error *err)
{
    out->ptr = NULL;
    out->len = 0;
    if (s.ptr == NULL) {
        return 0;
    }
    if (s.len > EXPORT_MAX_NAME_BYTES - x->name_bytes) {
        too_many(err, "bytes of names", EXPORT_MAX_NAME_BYTES);
        return -1;
    }
    char *copy = malloc(s.len + 1);
    if (copy == NULL) {
        nomem(err, "names");
        return -1;
    }
    memcpy(copy, s.ptr, s.len);
    copy[s.len] = '\0';
    x->name_bytes += s.len;
    out->ptr = copy;
    out->len = s.len;
    return 0;
}

static void str_free(struct snap_str *s)
{
    free((char *)s->ptr);
    s->ptr = NULL;
    s->len = 0;
}

/* Functions: one per (function, file, first line, synthetic). */
static bool func_eq(const struct exporter *x, uint32_t idx, const void *key)
{
    const struct export_func *a = &x->funcs[idx];
    const struct export_func *b = key;
    return a->first_line == b->first_line && a->synthetic == b->synthetic &&
           str_eq(a->function, b->function) && str_eq(a->file, b->file);
}

static uint32_t intern_func(struct exporter *x, const struct export_func *key, struct pt_error *err)
{
    uint64_t h = hash_str(0xcbf29ce484222325ULL, key->function);
    h = hash_str(h, key->file);
    uint32_t hash = mix64(h ^ ((uint64_t)(uint32_t)key->first_line << 1) ^ key->synthetic);
    if (index_reserve(&x->func_index) < 0) {
        return nomem(err, "functions");
    }
    size_t pos;
    uint32_t found = index_lookup(&x->func_index, hash, func_eq, x, key, &pos);
    if (found != EXPORT_NONE) {
        return found;
    }
    if (x->n_funcs >= EXPORT_MAX_FUNCTIONS) {
        return too_many(err, "functions", EXPORT_MAX_FUNCTIONS);
    }
    if (export_grow(&x->funcs, &x->cap_funcs, x->n_funcs + 1, sizeof *x->funcs) < 0) {
        return nomem(err, "functions");
    }
    struct export_func *f = &x->funcs[x->n_funcs];
    memset(f, 0, sizeof *f);
    if (export_copy_str(x, key->function, &f->function, err) < 0 ||
        export_copy_str(x, key->name, &f->name, err) < 0 ||
        export_copy_str(x, key->file, &f->file, err) < 0) {
        str_free(&f->function);
        str_free(&f->name);
        str_free(&f->file);
        return EXPORT_NONE;
    }
    f->first_line = key->first_line;
    f->synthetic = key->synthetic;
    index_insert(&x->func_index, pos, hash, (uint32_t)x->n_funcs);
    return (uint32_t)x->n_funcs++;
}

static bool code_eq(const struct exporter *x, uint32_t idx, const void *key)
{
    return x->codes[idx].id == *(const uint32_t *)key;
}

uint32_t export_code_func(struct exporter *x, const struct rec_code *code, struct pt_error *err)
{
    uint32_t hash = mix64(code->id);
    if (index_reserve(&x->code_index) < 0) {
        return nomem(err, "code objects");
    }
    size_t pos;
    uint32_t found = index_lookup(&x->code_index, hash, code_eq, x, &code->id, &pos);
    if (found != EXPORT_NONE) {
        return x->codes[found].func;
    }
    struct export_func key = {
        .function = code->function.ptr != NULL ? code->function : code->name,
        .name = code->name,
        .file = code->file,
        .first_line = code->first_line < 0 ? -1 : code->first_line,
    };
    uint32_t func = intern_func(x, &key, err);
    if (func == EXPORT_NONE) {
        return EXPORT_NONE;
    }
    /* Many code objects can be one function (a file may name a new one for every frame):
     * they have a bound of their own. */
    if (x->n_codes >= EXPORT_MAX_FRAMES) {
        return too_many(err, "code objects", EXPORT_MAX_FRAMES);
    }
    if (export_grow(&x->codes, &x->cap_codes, x->n_codes + 1, sizeof *x->codes) < 0) {
        return nomem(err, "code objects");
    }
    x->codes[x->n_codes] = (struct export_code){.id = code->id, .func = func};
    index_insert(&x->code_index, pos, hash, (uint32_t)x->n_codes);
    x->n_codes++;
    return func;
}

uint32_t export_synthetic_func(struct exporter *x, enum snap_frame_kind kind,
                               enum snap_unreadable why, struct pt_error *err)
{
    /* A kind or reason this build does not know shares the last slot (and its label says
     * "unknown"). */
    size_t k = (unsigned)kind < 8 ? (size_t)kind : 7;
    size_t w = (unsigned)why < 8 ? (size_t)why : 7;
    if (kind != SNAP_FRAME_UNREADABLE) {
        w = 0;
    }
    if (x->synthetic[k][w] != EXPORT_NONE) {
        return x->synthetic[k][w];
    }
    const char *label =
        kind == SNAP_FRAME_UNREADABLE ? snapshot_unreadable_label(why) : snapshot_frame_label(kind);
    struct export_func key = {
        .function = {label, strlen(label)},
        .name = {label, strlen(label)},
        .first_line = -1,
        .synthetic = true,
    };
    uint32_t func = intern_func(x, &key, err);
    x->synthetic[k][w] = func;
    return func;
}

static bool frame_eq(const struct exporter *x, uint32_t idx, const void *key)
{
    const struct export_frame *a = &x->frames[idx];
    const struct export_frame *b = key;
    return a->func == b->func && a->line == b->line;
}

uint32_t export_frame_id(struct exporter *x, uint32_t func, int line, struct pt_error *err)
{
    struct export_frame key = {.func = func, .line = line < 0 ? -1 : line};
    uint32_t hash = mix64((uint64_t)func << 32 | (uint32_t)key.line);
    if (index_reserve(&x->frame_index) < 0) {
        return nomem(err, "frames");
    }
    size_t pos;
    uint32_t found = index_lookup(&x->frame_index, hash, frame_eq, x, &key, &pos);
    if (found != EXPORT_NONE) {
        return found;
    }
    if (x->n_frames >= EXPORT_MAX_FRAMES) {
        return too_many(err, "frames", EXPORT_MAX_FRAMES);
    }
    if (export_grow(&x->frames, &x->cap_frames, x->n_frames + 1, sizeof *x->frames) < 0) {
        return nomem(err, "frames");
    }
    x->frames[x->n_frames] = key;
    index_insert(&x->frame_index, pos, hash, (uint32_t)x->n_frames);
    return (uint32_t)x->n_frames++;
}

struct stack_key {
    const uint32_t *frames;
    size_t n;
};

static bool stack_eq(const struct exporter *x, uint32_t idx, const void *key)
{
    const struct stack_key *k = key;
    const struct export_stack *s = &x->stacks[idx];
    return s->len == k->n && memcmp(x->pool + s->off, k->frames, k->n * sizeof *k->frames) == 0;
}

uint32_t export_stack_id(struct exporter *x, const uint32_t *frames, size_t n, uint32_t hash,
                         struct pt_error *err)
{
    struct stack_key key = {frames, n};
    if (index_reserve(&x->stack_index) < 0) {
        return nomem(err, "stacks");
    }
    size_t pos;
    uint32_t found = index_lookup(&x->stack_index, hash, stack_eq, x, &key, &pos);
    if (found != EXPORT_NONE) {
        return found;
    }
    if (x->n_stacks >= EXPORT_MAX_STACKS) {
        return too_many(err, "stacks", EXPORT_MAX_STACKS);
    }
    if (n > EXPORT_MAX_STACK_WORDS - x->n_pool) {
        return too_many(err, "frames in stacks", EXPORT_MAX_STACK_WORDS);
    }
    if (export_grow(&x->stacks, &x->cap_stacks, x->n_stacks + 1, sizeof *x->stacks) < 0 ||
        export_grow(&x->pool, &x->cap_pool, x->n_pool + n, sizeof *x->pool) < 0) {
        return nomem(err, "stacks");
    }
    if (n > 0) {
        memcpy(x->pool + x->n_pool, frames, n * sizeof *frames);
    }
    x->stacks[x->n_stacks] = (struct export_stack){.off = (uint32_t)x->n_pool, .len = (uint32_t)n};
    x->n_pool += n;
    index_insert(&x->stack_index, pos, hash, (uint32_t)x->n_stacks);
    return (uint32_t)x->n_stacks++;
}

static bool pair_eq(const struct exporter *x, uint32_t idx, const void *key)
{
    const struct export_pair *a = &x->pairs[idx];
    const struct export_pair *b = key;
    return a->thread == b->thread && a->stack == b->stack;
}

uint32_t export_pair_id(struct exporter *x, uint32_t thread, uint32_t stack, struct pt_error *err)
{
    struct export_pair key = {.thread = thread, .stack = stack};
    uint32_t hash = mix64((uint64_t)thread << 32 | stack);
    if (index_reserve(&x->pair_index) < 0) {
        return nomem(err, "stacks");
    }
    size_t pos;
    uint32_t found = index_lookup(&x->pair_index, hash, pair_eq, x, &key, &pos);
    if (found != EXPORT_NONE) {
        return found;
    }
    if (x->n_pairs >= EXPORT_MAX_PAIRS) {
        return too_many(err, "(thread, stack) pairs", EXPORT_MAX_PAIRS);
    }
    if (export_grow(&x->pairs, &x->cap_pairs, x->n_pairs + 1, sizeof *x->pairs) < 0) {
        return nomem(err, "stacks");
    }
    x->pairs[x->n_pairs] = key;
    index_insert(&x->pair_index, pos, hash, (uint32_t)x->n_pairs);
    return (uint32_t)x->n_pairs++;
}

struct thread_key {
    pid_t tid;
    uint64_t thread_id;
};

static bool thread_eq(const struct exporter *x, uint32_t idx, const void *key)
{
    const struct export_thread *t = &x->threads[idx];
    const struct thread_key *k = key;
    return t->tid == k->tid && (k->tid != 0 || t->thread_id == k->thread_id);
}

uint32_t export_thread_id(struct exporter *x, pid_t tid, uint64_t thread_id, struct pt_error *err)
{
    struct thread_key key = {tid, thread_id};
    uint32_t hash = tid != 0 ? mix64((uint32_t)tid) : mix64(thread_id ^ (1ULL << 63));
    if (index_reserve(&x->thread_index) < 0) {
        return nomem(err, "threads");
    }
    size_t pos;
    uint32_t found = index_lookup(&x->thread_index, hash, thread_eq, x, &key, &pos);
    if (found != EXPORT_NONE) {
        return found;
    }
    if (x->n_threads >= EXPORT_MAX_THREADS) {
        return too_many(err, "threads", EXPORT_MAX_THREADS);
    }
    if (export_grow(&x->threads, &x->cap_threads, x->n_threads + 1, sizeof *x->threads) < 0) {
        return nomem(err, "threads");
    }
    struct export_thread *t = &x->threads[x->n_threads];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->thread_id = thread_id;
    t->last_stack = EXPORT_NONE;
    t->last_pair = EXPORT_NONE;
    index_insert(&x->thread_index, pos, hash, (uint32_t)x->n_threads);
    return (uint32_t)x->n_threads++;
}

void export_intern_free(struct exporter *x)
{
    for (size_t i = 0; i < x->n_funcs; i++) {
        str_free(&x->funcs[i].function);
        str_free(&x->funcs[i].name);
        str_free(&x->funcs[i].file);
    }
    for (size_t i = 0; i < x->n_threads; i++) {
        str_free(&x->threads[i].name);
        free(x->threads[i].cached);
        free(x->threads[i].runs);
    }
    free(x->funcs);
    free(x->codes);
    free(x->frames);
    free(x->pool);
    free(x->stacks);
    free(x->pairs);
    free(x->threads);
    index_free(&x->func_index);
    index_free(&x->code_index);
    index_free(&x->frame_index);
    index_free(&x->stack_index);
    index_free(&x->pair_index);
    index_free(&x->thread_index);
}
