/* recconv: compact samples to recording samples and back. */
#include "config.h"

#include "core/record/recconv.h"

#include <stdlib.h>
#include <string.h>

#include "core/pyobj/code.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/walk/sample.h"

enum { CONV_MAX_CODES = 1 << 20 };

/* One id's entry: the rec_code handed on (live to recording), or the code object made for it
 * (recording to live). */
struct conv_entry {
    uint64_t key; /* serial or id + 1; 0 empty */
    struct rec_code rc;
    struct code_info *ci;
};

/* Thread position K's frames as compact ones, innermost first at FRAMES[START..CAP): a sample
 * that follows the last one converted at once keeps the outermost frames its reader says it
 * kept, and converts only the new ones. */
struct conv_stack {
    pid_t tid;
    uint64_t thread_id;
    int64_t interp_id;
    struct sample_frame *frames;
    size_t start;
    size_t cap;
};

enum { CONV_RECENT = 512 }; /* rec_code pointers remembered, direct-mapped */

struct recconv {
    /* The code objects of the rec_codes seen last: a frame's lookup without hashing (the
     * pointer and the id both match: a reader reuses its memory from chunk to chunk). */
    struct {
        const struct rec_code *rc;
        uint32_t id;
        const struct code_info *ci;
    } recent[CONV_RECENT];
    struct conv_entry *map;
    size_t cap; /* a power of two */
    size_t n;
    /* Buffers of the sample handed on. */
    struct rec_thread *rthreads;
    size_t cap_rthreads;
    struct rec_frame *rframes;
    size_t cap_rframes;
    struct sample_thread *sthreads;
    size_t cap_sthreads;
    struct conv_stack *stacks; /* per thread position of the samples converted */
    size_t cap_stacks;
    uint64_t last_seq;         /* the SEQ of the last sample converted */
    enum snap_bool *states;
    size_t cap_states;
    struct rec_sample rs;
    struct sample smp;
};

struct recconv *recconv_new(struct pt_error *err)
{
    struct recconv *c = calloc(1, sizeof *c);
    if (c == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the converter");
    }
    return c;
}

static void free_code(struct code_info *ci)
{
    if (ci != NULL) {
        free(ci->qualname);
        free(ci->name);
        free(ci->filename);
        free(ci);
    }
}

void recconv_free(struct recconv *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->cap; i++) {
        free_code(c->map[i].ci);
    }
    free(c->map);
    free(c->rthreads);
    free(c->rframes);
    free(c->sthreads);
    for (size_t i = 0; i < c->cap_stacks; i++) {
        free(c->stacks[i].frames);
    }
    free(c->stacks);
    free(c->states);
    free(c);
}

static size_t slot(const struct recconv *c, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    size_t i = (size_t)(h >> 20) & (c->cap - 1);
    while (c->map[i].key != 0 && c->map[i].key != key) {
        i = (i + 1) & (c->cap - 1);
    }
    return i;
}

/* The entry for KEY, made empty when new; NULL when the map is full or memory is out. */
static struct conv_entry *entry(struct recconv *c, uint64_t key)
{
    if ((c->n + 1) * 2 > c->cap) {
        if (c->n >= CONV_MAX_CODES) {
            return NULL;
        }
        size_t cap = c->cap != 0 ? c->cap * 2 : 256;
        struct conv_entry *m = calloc(cap, sizeof *m);
        if (m == NULL) {
            return NULL;
        }
        struct recconv old = *c;
        c->map = m;
        c->cap = cap;
        for (size_t i = 0; i < old.cap; i++) {
            if (old.map[i].key != 0) {
                c->map[slot(c, old.map[i].key)] = old.map[i];
            }
        }
        free(old.map);
    }
    size_t i = slot(c, key);
    if (c->map[i].key == 0) {
        c->map[i] = (struct conv_entry){.key = key};
        c->n++;
    }
    return &c->map[i];
}

static bool reserve(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap) {
        return true;
    }
    size_t k = *cap != 0 ? *cap : 64;
    while (k < n) {
        k *= 2;
    }
    void *q = realloc(*p, k * size);
    if (q == NULL) {
        return false;
    }
    *p = q;
    *cap = k;
    return true;
}

const struct rec_sample *recconv_sample(struct recconv *c, const struct sample *smp,
                                        const enum snap_bool *on_cpu, const struct py_layout *L,
                                        double t, struct pt_error *err)
{
    size_t frames = 0;
    for (size_t i = 0; i < smp->n_threads; i++) {
        frames += smp->threads[i].n_frames;
    }
    if (!reserve((void **)&c->rthreads, &c->cap_rthreads, smp->n_threads + 1, sizeof *c->rthreads) ||
        !reserve((void **)&c->rframes, &c->cap_rframes, frames + 1, sizeof *c->rframes)) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the converter");
        return NULL;
    }
    struct rec_frame *rf = c->rframes;
    for (size_t i = 0; i < smp->n_threads; i++) {
        const struct sample_thread *st = &smp->threads[i];
        struct rec_thread *rt = &c->rthreads[i];
        *rt = (struct rec_thread){st->interp_id, st->tid, st->thread_id,
                                  {st->name, st->name_len}, st->main, st->gil, st->gil_requested,
                                  on_cpu != NULL ? on_cpu[i] : SNAP_UNKNOWN, st->has_exception,
                                  st->in_gc, rf, st->n_frames, st->frames_truncated,
                                  st->frames_torn, st->not_read, 0};
        for (size_t k = 0; k < st->n_frames; k++) {
            const struct sample_frame *f = &st->frames[k];
            struct rec_frame *o = rf++;
            *o = (struct rec_frame){NULL, -1, f->offset, f->kind, f->unreadable};
            if (f->code == NULL) {
                continue;
            }
            struct conv_entry *e = entry(c, f->code_serial != 0 ? f->code_serial : 1);
            if (e == NULL) {
                pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the converter");
                return NULL;
            }
            /* The code object's strings, as they are now (they live as long as it does). */
            e->rc = (struct rec_code){(uint32_t)f->code_serial,
                                      {f->code->qualname, f->code->qualname_len},
                                      {f->code->name, f->code->name_len},
                                      {f->code->filename, f->code->filename_len},
                                      f->code->firstlineno};
            o->code = &e->rc;
            if (f->offset != SAMPLE_OFFSET_UNKNOWN && L != NULL) {
                o->line = code_offset_line(f->code, L, f->offset);
            }
        }
    }
    c->rs = (struct rec_sample){t, false, {NULL, 0}, c->rthreads, smp->n_threads, 0};
    return &c->rs;
}

static char *dup_bytes(struct snap_str s, size_t *len)
{
    *len = s.ptr != NULL ? s.len : 0;
    char *p = malloc(*len + 1);
    if (p != NULL) {
        if (*len > 0) {
            memcpy(p, s.ptr, *len);
        }
        p[*len] = '\0';
    }
    return p;
}

/* The code object standing in for RC. */
static const struct code_info *code_for(struct recconv *c, const struct rec_code *rc)
{
    struct conv_entry *e = entry(c, (uint64_t)rc->id + 1);
    if (e == NULL) {
        return NULL;
    }
    if (e->ci == NULL) {
        struct code_info *ci = calloc(1, sizeof *ci);
        if (ci == NULL) {
            return NULL;
        }
        ci->qualname = dup_bytes(rc->function, &ci->qualname_len);
        ci->name = dup_bytes(rc->name, &ci->name_len);
        ci->filename = dup_bytes(rc->file, &ci->filename_len);
        ci->firstlineno = rc->first_line;
        ci->firsttraceable = -1;
        ci->serial = (uint64_t)rc->id + 1;
        ci->offsets_are_lines = true;
        if (ci->qualname == NULL || ci->name == NULL || ci->filename == NULL) {
            free_code(ci);
            return NULL;
        }
        e->ci = ci;
    }
    return e->ci;
}

/* The code object standing in for RC, through the recent pointers first. */
static const struct code_info *code_of(struct recconv *c, const struct rec_code *rc)
{
    size_t slot = ((uintptr_t)rc >> 4) % CONV_RECENT;
    if (c->recent[slot].rc == rc && c->recent[slot].id == rc->id) {
        return c->recent[slot].ci;
    }
    const struct code_info *ci = code_for(c, rc);
    if (ci != NULL) {
        c->recent[slot].rc = rc;
        c->recent[slot].id = rc->id;
        c->recent[slot].ci = ci;
    }
    return ci;
}

static int convert_stack(struct recconv *c, struct conv_stack *cs, const struct rec_thread *t,
                         bool follows)
{
    size_t n = t->n_frames;
    size_t have = cs->cap - cs->start;
    size_t kept = follows && cs->tid == t->tid && cs->thread_id == t->thread_id &&
                          cs->interp_id == t->interp_id && t->kept <= n && t->kept <= have
                      ? t->kept
                      : 0;
    size_t fresh = n - kept;
    size_t at = cs->start + (have - kept); /* where the kept frames begin */
    if (fresh > at) {
        /* No room before the kept frames: a larger stack, the kept ones at its end. */
        size_t cap = cs->cap != 0 ? cs->cap : 32;
        while (cap < n) {
            cap *= 2;
        }
        struct sample_frame *f = malloc(cap * sizeof *f);
        if (f == NULL) {
            return -1;
        }
        if (kept > 0) {
            memcpy(f + cap - kept, cs->frames + at, kept * sizeof *f);
        }
        free(cs->frames);
        cs->frames = f;
        cs->cap = cap;
        at = cap - kept;
    }
    cs->start = at - fresh;
    for (size_t k = 0; k < fresh; k++) {
        const struct rec_frame *f = &t->frames[k];
        struct sample_frame *o = &cs->frames[cs->start + k];
        /* The frame's line stands where its offset would (code_info.offsets_are_lines). */
        *o = (struct sample_frame){NULL, 0,
                                   f->line >= 0 ? (uint32_t)f->line : SAMPLE_OFFSET_UNKNOWN,
                                   f->kind, f->unreadable};
        if (f->code != NULL) {
            if ((o->code = code_of(c, f->code)) == NULL) {
                return -1;
            }
            o->code_serial = o->code->serial;
        }
    }
    cs->tid = t->tid;
    cs->thread_id = t->thread_id;
    cs->interp_id = t->interp_id;
    return 0;
}

const struct sample *recconv_compact(struct recconv *c, const struct rec_sample *rs,
                                     const enum snap_bool **on_cpu, struct pt_error *err)
{
    size_t old = c->cap_stacks;
    if (!reserve((void **)&c->sthreads, &c->cap_sthreads, rs->n_threads + 1, sizeof *c->sthreads) ||
        !reserve((void **)&c->stacks, &c->cap_stacks, rs->n_threads + 1, sizeof *c->stacks) ||
        !reserve((void **)&c->states, &c->cap_states, rs->n_threads + 1, sizeof *c->states)) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the converter");
        return NULL;
    }
    memset(c->stacks + old, 0, (c->cap_stacks - old) * sizeof *c->stacks);
    bool follows = rs->seq != 0 && rs->seq == c->last_seq + 1;
    c->last_seq = rs->seq;
    for (size_t i = 0; i < rs->n_threads; i++) {
        const struct rec_thread *t = &rs->threads[i];
        struct conv_stack *cs = &c->stacks[i];
        if (convert_stack(c, cs, t, follows) < 0) {
            c->last_seq = 0;
            pt_error_set(err, PT_E_LIMIT, 0, "too many functions in the recording");
            return NULL;
        }
        c->sthreads[i] = (struct sample_thread){.interp_id = t->interp_id,
                                                .tid = t->tid,
                                                .thread_id = t->thread_id,
                                                .name = t->name.ptr,
                                                .name_len = t->name.len,
                                                .main = t->main,
                                                .gil = t->gil,
                                                .gil_requested = t->gil_requested,
                                                .on_cpu = t->on_cpu,
                                                .has_exception = t->has_exception,
                                                .in_gc = t->in_gc,
                                                .frames = cs->frames != NULL
                                                              ? cs->frames + cs->start
                                                              : NULL,
                                                .n_frames = t->n_frames,
                                                .frames_truncated = t->frames_truncated,
                                                .frames_torn = t->frames_torn,
                                                .not_read = t->not_read};
        c->states[i] = t->on_cpu;
    }
    c->smp = (struct sample){c->sthreads, rs->n_threads, 0, ""};
    *on_cpu = c->states;
    return &c->smp;
}
