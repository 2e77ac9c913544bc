/* gc: the garbage collector's state of an interpreter, read through the generated layouts of
 * its version's build families (src/core/layout/gen_tables.c). */
#include "config.h"

#include "core/walk/gc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"

enum {
    GC_MAX_GENERATIONS = 4,  /* more than any version has; a table saying more is refused */
    GC_MAX_RING = 64,        /* records in one of the 3.15 ring buffers */
    GC_RINGS = GC_MAX_GENERATIONS,
};

struct gc_reader {
    struct proc *proc;
    const struct py_layout *L;
    const struct layout_gc_gen *variants;
    size_t n_variants;
    size_t last;         /* the variant that fitted last time, tried first */
    bool fitted;         /* LAST fitted the target once */
    /* Where the collection counts are (counts_variant()): before a variant fitted, and since
     * (NULL: unknown). Both are worked out once, not at every sample that asks. */
    const struct layout_gc_gen *counts_any;
    const struct layout_gc_gen *counts_fitted;
    size_t len;          /* bytes read of the state: the largest variant */
    uint8_t *stats;      /* GC_STATS_MAX bytes for the 3.15 records */
    /* Where the records were last time, for the caller to read them in its own batch. */
    uint64_t hint_state;  /* the GC state they belong to */
    uint64_t hint_addr;
    size_t hint_len;
    bool prefetched;      /* STATS holds HINT_LEN bytes read at HINT_ADDR just now */
};

/* Whether a field of WIDTH bytes at OFF (-1: absent) fits in SIZE bytes. */
static bool field_fits(int64_t off, uint64_t width, uint64_t size)
{
    return off >= 0 && layout_field_fits((uint64_t)off, width, size);
}

/* Whether V's collector keeps per-generation statistics. */
static bool has_stats(const struct layout_gc_gen *v)
{
    return v->stat_size > 0;
}

/* Whether the generated table V is one pytop can read at all. */
static bool variant_sane(const struct layout_gc_gen *v)
{
    uint64_t size = (uint64_t)v->size;
    if (v->size <= 0 || v->size > GC_STATE_MAX || v->num_generations < 1 ||
        v->num_generations > GC_MAX_GENERATIONS || v->gen_size <= 0 ||
        !field_fits(v->generations, (uint64_t)(v->gen_size * v->num_generations), size) ||
        !field_fits(v->gen_threshold, 4, (uint64_t)v->gen_size) ||
        !field_fits(v->gen_count, 4, (uint64_t)v->gen_size) ||
        !field_fits(v->generation0, 8, size) || !field_fits(v->collecting, 4, size) ||
        !field_fits(v->enabled, 4, size)) {
        return false;
    }
    /* 2.7 keeps no statistics (gc.get_stats() is 3.4+): the counts stay unknown. */
    if (!has_stats(v)) {
        return v->stats < 0;
    }
    if (!field_fits(v->stat_collections, 8, (uint64_t)v->stat_size) ||
        !field_fits(v->stat_collected, 8, (uint64_t)v->stat_size) ||
        !field_fits(v->stat_uncollectable, 8, (uint64_t)v->stat_size)) {
        return false;
    }
    if (v->stats_is_pointer != 1) {
        return field_fits(v->stats, (uint64_t)(v->stat_size * v->num_generations), size);
    }
    /* 3.15: one ring of young records, then num_generations - 1 rings of old ones. */
    return field_fits(v->stats, 8, size) && v->stats_size > 0 && v->stats_size <= GC_STATS_MAX &&
           v->young_n > 0 && v->young_n <= GC_MAX_RING && v->old_n > 0 &&
           v->old_n <= GC_MAX_RING &&
           field_fits(v->young_items, (uint64_t)(v->young_n * v->stat_size),
                      (uint64_t)v->stats_size) &&
           field_fits(v->young_index, 1, (uint64_t)v->stats_size) && v->old_size > 0 &&
           field_fits(v->old, (uint64_t)(v->old_size * (v->num_generations - 1)),
                      (uint64_t)v->stats_size) &&
           field_fits(v->old_items, (uint64_t)(v->old_n * v->stat_size), (uint64_t)v->old_size) &&
           field_fits(v->old_index, 1, (uint64_t)v->old_size) &&
           field_fits(v->stat_ts_start, 8, (uint64_t)v->stat_size) &&
           field_fits(v->stat_ts_stop, 8, (uint64_t)v->stat_size) &&
           field_fits(v->stat_candidates, 8, (uint64_t)v->stat_size) &&
           field_fits(v->stat_duration, 8, (uint64_t)v->stat_size) &&
           field_fits(v->stat_heap_size, 8, (uint64_t)v->stat_size);
}

/* Whether V and W put the generations' collection counts in the same place. */
static bool same_counts(const struct layout_gc_gen *v, const struct layout_gc_gen *w)
{
    return v->stats == w->stats && v->stat_size == w->stat_size &&
           v->stat_collections == w->stat_collections && v->num_generations == w->num_generations;
}

/* V, when its collection counts are an array in the state that can be read (not 3.15's). */
static const struct layout_gc_gen *counts_of(const struct layout_gc_gen *v)
{
    return v != NULL && variant_sane(v) && has_stats(v) && v->stats_is_pointer != 1 ? v : NULL;
}

/* The variant every family of G agrees with on where the counts are, or NULL. */
static const struct layout_gc_gen *counts_agreed(const struct gc_reader *g)
{
    const struct layout_gc_gen *v = NULL;
    for (size_t i = 0; i < g->n_variants; i++) {
        const struct layout_gc_gen *w = &g->variants[i];
        if (!variant_sane(w) || (v != NULL && !same_counts(v, w))) {
            return NULL;
        }
        v = v != NULL ? v : w;
    }
    return counts_of(v);
}

struct gc_reader *gc_reader_new(struct proc *p, const struct py_layout *L)
{
    struct gc_reader *g = calloc(1, sizeof *g);
    if (g == NULL) {
        return NULL;
    }
    g->proc = p;
    g->L = L;
    /* The one place the version picks the GC layouts: the generated table of its minor. */
    g->variants = layout_gc_variants(LAYOUT_VERSION_KEY(L->hexversion), &g->n_variants);
    for (size_t i = 0; i < g->n_variants; i++) {
        if (variant_sane(&g->variants[i]) && (uint64_t)g->variants[i].size > g->len) {
            g->len = (size_t)g->variants[i].size;
        }
    }
    g->counts_any = counts_agreed(g);
    return g;
}

void gc_reader_free(struct gc_reader *g)
{
    if (g != NULL) {
        free(g->stats);
        free(g);
    }
}

size_t gc_state_len(const struct gc_reader *g)
{
    return g->len;
}

/* The variant whose counts are the target's: the one that fitted, or the one every family
 * agrees with; NULL when unknown or the counts are not an array in the state (3.15). */
static const struct layout_gc_gen *counts_variant(const struct gc_reader *g)
{
    return g->fitted ? g->counts_fitted : g->counts_any;
}

bool gc_collections_span(const struct gc_reader *g, uint64_t *off, size_t *len)
{
    const struct layout_gc_gen *v = g != NULL ? counts_variant(g) : NULL;
    if (v == NULL || (size_t)(v->stat_size * v->num_generations) > GC_COUNTS_MAX) {
        return false;
    }
    *off = (uint64_t)v->stats;
    *len = (size_t)(v->stat_size * v->num_generations);
    return true;
}

int64_t gc_collections_sum(const struct gc_reader *g, const uint8_t *buf, size_t len)
{
    const struct layout_gc_gen *v = counts_variant(g);
    int64_t sum = 0;
    for (int64_t i = 0; v != NULL && i < v->num_generations; i++) {
        uint64_t n;
        if (!layout_read_u64(buf, len, (uint64_t)(i * v->stat_size + v->stat_collections), &n) ||
            n > INT64_MAX / GC_MAX_GENERATIONS) {
            return -1;
        }
        sum += (int64_t)n;
    }
    return v != NULL ? sum : -1;
}

bool gc_records_hint(struct gc_reader *g, uint64_t state, uint64_t *addr, void **buf,
                     size_t *len)
{
    g->prefetched = false;
    if (g->hint_addr == 0 || g->hint_state != state || g->stats == NULL) {
        return false;
    }
    *addr = g->hint_addr;
    *buf = g->stats;
    *len = g->hint_len;
    return true;
}

void gc_records_prefetched(struct gc_reader *g)
{
    g->prefetched = true;
}

static int64_t get_i64(const uint8_t *buf, size_t len, int64_t off)
{
    uint64_t v = 0;
    if (off < 0 || !layout_read_uint(buf, len, (uint64_t)off, 8, &v)) {
        return -1;
    }
    return (int64_t)v;
}

static int64_t get_i32(const uint8_t *buf, size_t len, int64_t off)
{
    uint64_t v = 0;
    if (off < 0 || !layout_read_uint(buf, len, (uint64_t)off, 4, &v)) {
        return -1;
    }
    return (int64_t)(int32_t)(uint32_t)v;
}

static double get_double(const uint8_t *buf, size_t len, int64_t off)
{
    uint64_t v = 0;
    double d;
    if (off < 0 || !layout_read_uint(buf, len, (uint64_t)off, 8, &v)) {
        return -1.0;
    }
    memcpy(&d, &v, sizeof d);
    /* NaN, infinities and negative durations are not what a collector records. */
    return d >= 0.0 && d < 1e12 ? d : -1.0;
}

/* One collection record at REC (STAT_SIZE bytes) of generation GEN. False when it is not a
 * plausible record. */
static bool parse_record(const struct layout_gc_gen *v, const uint8_t *rec, int gen,
                         struct snap_gc_record *r)
{
    size_t n = (size_t)v->stat_size;
    r->generation = gen;
    r->start_ns = get_i64(rec, n, v->stat_ts_start);
    r->stop_ns = get_i64(rec, n, v->stat_ts_stop);
    r->collections = get_i64(rec, n, v->stat_collections);
    r->collected = get_i64(rec, n, v->stat_collected);
    r->uncollectable = get_i64(rec, n, v->stat_uncollectable);
    r->candidates = get_i64(rec, n, v->stat_candidates);
    r->heap_size = get_i64(rec, n, v->stat_heap_size);
    r->duration = get_double(rec, n, v->stat_duration);
    return r->start_ns >= 0 && r->stop_ns >= 0 && r->collections >= 0 && r->collected >= 0 &&
           r->uncollectable >= 0 && r->candidates >= 0 && r->heap_size >= 0 && r->duration >= 0;
}

static bool record_empty(const struct snap_gc_record *r)
{
    return r->start_ns == 0 && r->stop_ns == 0 && r->collections == 0;
}

static int by_start(const void *a, const void *b)
{
    const struct snap_gc_record *x = a;
    const struct snap_gc_record *y = b;
    if (x->start_ns != y->start_ns) {
        return x->start_ns < y->start_ns ? -1 : 1;
    }
    return x->generation - y->generation;
}

/* The 3.15 rings: generation 0's records in the young ring, each older generation's in its
 * own. The newest record of each is what gc.get_stats() shows for it. */
static int parse_rings(const struct layout_gc_gen *v, struct snapshot *s, const uint8_t *stats,
                       size_t len, struct snap_gc *out)
{
    size_t total = 0;
    struct snap_gc_record recs[GC_RINGS * GC_MAX_RING];
    if (stats == NULL || len < (size_t)v->stats_size) {
        return 0;
    }
    for (int gen = 0; gen < (int)v->num_generations; gen++) {
        uint64_t ring = gen == 0 ? (uint64_t)v->young_items
                                 : (uint64_t)(v->old + (gen - 1) * v->old_size + v->old_items);
        uint64_t index_at = gen == 0 ? (uint64_t)v->young_index
                                     : (uint64_t)(v->old + (gen - 1) * v->old_size + v->old_index);
        size_t n = (size_t)(gen == 0 ? v->young_n : v->old_n);
        int8_t index = (int8_t)stats[index_at];
        if (index < 0 || (size_t)index >= n) {
            return 0;
        }
        struct snap_gc_record newest;
        if (!parse_record(v, stats + ring + (size_t)index * (size_t)v->stat_size, gen, &newest)) {
            return 0;
        }
        struct snap_gc_gen *g = &out->generations[gen];
        g->collections = newest.collections;
        g->collected = newest.collected;
        g->uncollectable = newest.uncollectable;
        g->candidates = newest.candidates;
        g->duration = newest.duration;
        /* Oldest first: the slot after the newest is the oldest still kept. */
        for (size_t k = 1; k <= n; k++) {
            size_t slot = ((size_t)index + k) % n;
            struct snap_gc_record r;
            if (!parse_record(v, stats + ring + slot * (size_t)v->stat_size, gen, &r)) {
                return 0;
            }
            if (!record_empty(&r)) {
                recs[total++] = r;
            }
        }
    }
    qsort(recs, total, sizeof recs[0], by_start);
    out->recent = snapshot_alloc_array(s, total ? total : 1, sizeof *out->recent);
    if (out->recent == NULL) {
        return -1;
    }
    memcpy(out->recent, recs, total * sizeof recs[0]);
    out->n_recent = total;
    out->recent_present = true;
    return 1;
}

int gc_parse_variant(const struct layout_gc_gen *v, struct snapshot *s, uint64_t addr,
                     const uint8_t *buf, size_t len, const uint8_t *stats, size_t stats_len,
                     struct snap_gc *out)
{
    if (!variant_sane(v) || len < (size_t)v->size) {
        return 0;
    }
    /* generation0 points at the first generation's list head: the strongest check that the
     * generations are where this family puts them. Each list head links to itself or to a
     * tracked object, never to nothing. */
    uint64_t gen0 = 0;
    if (!layout_read_u64(buf, len, (uint64_t)v->generation0, &gen0) ||
        gen0 != addr + (uint64_t)v->generations) {
        return 0;
    }
    size_t ng = (size_t)v->num_generations;
    struct snap_gc_gen gens[GC_MAX_GENERATIONS];
    for (size_t i = 0; i < ng; i++) {
        size_t at = (size_t)v->generations + i * (size_t)v->gen_size;
        uint64_t next = 0;
        if (!layout_read_u64(buf, len, at, &next) || next == 0) {
            return 0;
        }
        gens[i] = (struct snap_gc_gen){
            .generation = (int)i,
            .count = get_i32(buf, len, (int64_t)at + v->gen_count),
            .threshold = get_i32(buf, len, (int64_t)at + v->gen_threshold),
            .collections = -1,
            .collected = -1,
            .uncollectable = -1,
            .candidates = -1,
            .duration = -1.0,
        };
        if (gens[i].threshold < 0) {
            return 0;
        }
        if (has_stats(v) && v->stats_is_pointer != 1) {
            size_t st = (size_t)v->stats + i * (size_t)v->stat_size;
            gens[i].collections = get_i64(buf, len, (int64_t)st + v->stat_collections);
            gens[i].collected = get_i64(buf, len, (int64_t)st + v->stat_collected);
            gens[i].uncollectable = get_i64(buf, len, (int64_t)st + v->stat_uncollectable);
            if (gens[i].collections < 0 || gens[i].collected < 0 || gens[i].uncollectable < 0) {
                return 0;
            }
        }
    }
    int64_t enabled = get_i32(buf, len, v->enabled);
    int64_t collecting = get_i32(buf, len, v->collecting);
    if (enabled < 0 || enabled > 1 || collecting < 0 || collecting > 1) {
        return 0;
    }
    out->generations = snapshot_alloc_array(s, ng, sizeof *out->generations);
    if (out->generations == NULL) {
        return -1;
    }
    memcpy(out->generations, gens, ng * sizeof gens[0]);
    out->n_generations = ng;
    out->enabled = enabled ? SNAP_YES : SNAP_NO;
    out->collecting = collecting ? SNAP_YES : SNAP_NO;
    out->recent_present = false;
    if (v->stats_is_pointer == 1) {
        int r = parse_rings(v, s, stats, stats_len, out);
        if (r < 0) {
            return -1;
        }
        /* Rings that do not parse leave the totals and records unknown. */
    }
    out->present = true;
    return 1;
}

int gc_parse(struct gc_reader *g, struct snapshot *s, int64_t interp_id, uint64_t addr,
             const uint8_t *buf, size_t len, struct snap_gc *out, struct pt_error *err)
{
    struct timespec now;
    out->present = false;
    clock_gettime(CLOCK_MONOTONIC, &now);
    out->read_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    for (size_t k = 0; k < g->n_variants; k++) {
        size_t i = (g->last + k) % g->n_variants;
        const struct layout_gc_gen *v = &g->variants[i];
        size_t stats_len = 0;
        /* The debug offsets (3.13+) know the state's size: a family of another size is not
         * this build. */
        if (layout_has(g->L->gc.size) && g->L->gc.size != (uint64_t)v->size) {
            continue;
        }
        if (v->stats_is_pointer == 1 && variant_sane(v)) {
            uint64_t ptr = 0;
            if (g->stats == NULL && (g->stats = malloc(GC_STATS_MAX)) == NULL) {
                return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
            }
            bool have = g->prefetched && ptr == 0;
            if (layout_read_u64(buf, len, (uint64_t)v->stats, &ptr) && ptr != 0) {
                /* The records stay where they are for the interpreter's life: read them ahead
                 * next time, and here only when the read ahead was elsewhere. */
                have = g->prefetched && g->hint_state == addr && g->hint_addr == ptr &&
                       g->hint_len == (size_t)v->stats_size;
                if (!have) {
                    have = proc_read_bytes(g->proc, ptr, g->stats, (size_t)v->stats_size,
                                           NULL) == 0;
                }
                g->hint_state = addr;
                g->hint_addr = ptr;
                g->hint_len = (size_t)v->stats_size;
            }
            if (have) {
                stats_len = (size_t)v->stats_size;
            }
        }
        int r = gc_parse_variant(v, s, addr, buf, len, stats_len ? g->stats : NULL, stats_len,
                                 out);
        if (r < 0) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
        if (r == 1) {
            g->last = i;
            g->fitted = true;
            g->counts_fitted = counts_of(v);
            g->prefetched = false;
            return 0;
        }
    }
    g->prefetched = false;
    g->hint_addr = 0;
    if (g->n_variants == 0) {
        snapshot_warn(s, "interpreter %" PRId64 ": GC not shown: pytop has no GC layout for this "
                         "Python version", interp_id);
    } else {
        snapshot_warn(s, "interpreter %" PRId64 ": GC not shown: the GC state at 0x%" PRIx64
                         " matches none of the %zu known layouts of this Python version",
                      interp_id, addr, g->n_variants);
    }
    return 0;
}
