/* recording: pytop's and CPython's recordings behind one interface, and a moment of either as a
 * snapshot. */
#include "config.h"

#include "core/record/recording.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/model/snapshot_arena.h"
#include "core/record/cpyrec.h"
#include "core/record/recread.h"
#include "core/util/error.h"

struct recording {
    struct recreader *pyrec; /* one of the two */
    struct cpyrec *cpy;
};

struct recording *recording_open(const char *path, struct pt_error *err)
{
    uint8_t head[64];
    ssize_t n = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, head, sizeof head);
        close(fd);
    }
    if (n < 0) {
        pt_error_set(err, PT_E_IO, errno, "cannot open %s", path);
        return NULL;
    }
    struct recording *r = calloc(1, sizeof *r);
    if (r == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the recording");
        return NULL;
    }
    if (recread_sniff(head, (size_t)n)) {
        r->pyrec = recreader_open(path, err);
    } else if (cpyrec_sniff(head, (size_t)n)) {
        r->cpy = cpyrec_open(path, err);
    } else {
        pt_error_set(err, PT_E_FORMAT, 0,
                     "%s is not a recording pytop reads (a .pyrec, or CPython's "
                     "profiling.sampling --binary output)",
                     path);
    }
    if (r->pyrec == NULL && r->cpy == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

void recording_close(struct recording *r)
{
    if (r != NULL) {
        recreader_close(r->pyrec);
        cpyrec_close(r->cpy);
        free(r);
    }
}

const struct rec_header *recording_header(const struct recording *r)
{
    return r->pyrec != NULL ? recreader_header(r->pyrec) : cpyrec_header(r->cpy);
}

double recording_duration(const struct recording *r)
{
    return r->pyrec != NULL ? recreader_duration(r->pyrec) : cpyrec_duration(r->cpy);
}

const char *recording_damage(const struct recording *r)
{
    return r->pyrec != NULL ? recreader_damage(r->pyrec) : cpyrec_damage(r->cpy);
}

const struct recread_chunk *recording_chunks(const struct recording *r, size_t *n)
{
    *n = 0;
    return r->pyrec != NULL ? recreader_chunks(r->pyrec, n) : NULL;
}

int recording_scan(struct recording *r, double from, double to, rec_sample_fn fn, void *ctx,
                   struct pt_error *err)
{
    return r->pyrec != NULL ? recreader_scan(r->pyrec, from, to, fn, ctx, err)
                            : cpyrec_scan(r->cpy, from, to, fn, ctx, err);
}

static struct snap_str dup_str(struct snapshot *s, struct snap_str v)
{
    return v.ptr != NULL ? snapshot_strdup(s, v.ptr, v.len) : v;
}

static int to_frames(struct snapshot *s, const struct rec_thread *t, struct snap_thread *out)
{
    out->frames = t->n_frames > 0 ? snapshot_alloc_array(s, t->n_frames, sizeof *out->frames)
                                  : NULL;
    if (t->n_frames > 0 && out->frames == NULL) {
        return -1;
    }
    for (size_t i = 0; i < t->n_frames; i++) {
        const struct rec_frame *f = &t->frames[i];
        struct snap_frame *o = &out->frames[i];
        *o = (struct snap_frame){.line = f->line,
                                 .end_line = -1,
                                 .col = -1,
                                 .end_col = -1,
                                 .first_line = -1,
                                 .op_offset = f->offset,
                                 .kind = f->kind,
                                 .unreadable = f->unreadable};
        if (f->code != NULL) {
            o->function = dup_str(s, f->code->function);
            o->name = dup_str(s, f->code->name);
            o->file = dup_str(s, f->code->file);
            o->first_line = f->code->first_line;
        }
    }
    out->n_frames = t->n_frames;
    return 0;
}

/* The thread of the stored snapshot that T was, or NULL. */
static const struct snap_thread *stored_thread(const struct snap_interp *in, const struct rec_thread *t)
{
    for (size_t i = 0; in != NULL && i < in->n_threads; i++) {
        const struct snap_thread *st = &in->threads[i];
        if (st->tid == t->tid && st->thread_id == t->thread_id) {
            return st;
        }
    }
    return NULL;
}

/* Whether the stored thread was where the sample finds it: at the same innermost frame (all
 * a recording keeps of a snapshot's stacks). */
static bool same_place(const struct snap_thread *st, const struct snap_thread *now)
{
    if (st->n_frames == 0 || now->n_frames == 0) {
        return st->n_frames == now->n_frames;
    }
    const struct snap_frame *a = &st->frames[0], *b = &now->frames[0];
    return a->line == b->line && snapshot_str_compare(a->function, b->function, SNAP_STR_BYTES) == 0 &&
           snapshot_str_compare(a->file, b->file, SNAP_STR_BYTES) == 0;
}

/* S's threads, replaced by SMP's. */
static int overlay(struct snapshot *s, const struct rec_sample *smp)
{
    /* Interpreters the sample names that S lacks are added. */
    size_t n_interps = s->n_interps;
    struct snap_interp *interps = snapshot_alloc_array(s, n_interps + smp->n_threads + 1,
                                                       sizeof *interps);
    if (interps == NULL) {
        return -1;
    }
    if (n_interps > 0) {
        memcpy(interps, s->interps, n_interps * sizeof *interps);
    }
    for (size_t i = 0; i < smp->n_threads; i++) {
        bool known = false;
        for (size_t k = 0; k < n_interps && !known; k++) {
            known = interps[k].id == smp->threads[i].interp_id;
        }
        if (!known) {
            interps[n_interps++] = (struct snap_interp){.id = smp->threads[i].interp_id};
        }
    }
    for (size_t k = 0; k < n_interps; k++) {
        struct snap_interp *in = &interps[k];
        size_t n = 0;
        struct snap_thread *threads = snapshot_alloc_array(s, smp->n_threads + 1, sizeof *threads);
        if (threads == NULL) {
            return -1;
        }
        for (size_t i = 0; i < smp->n_threads; i++) {
            const struct rec_thread *t = &smp->threads[i];
            if (t->interp_id != in->id) {
                continue;
            }
            struct snap_thread *o = &threads[n++];
            *o = (struct snap_thread){.tid = t->tid,
                                      .thread_id = t->thread_id,
                                      .name = dup_str(s, t->name),
                                      .main = t->main,
                                      .gil = t->gil,
                                      .gil_requested = t->gil_requested,
                                      .on_cpu = t->on_cpu,
                                      .has_exception = t->has_exception,
                                      .in_gc = t->in_gc,
                                      .frames_truncated = t->frames_truncated,
                                      .frames_torn = t->frames_torn,
                                      .wait = {.kind = SNAP_WAIT_NONE, .fd = -1}};
            if (to_frames(s, t, o) < 0) {
                return -1;
            }
            const struct snap_thread *st = stored_thread(k < s->n_interps ? &s->interps[k] : NULL, t);
            /* Where the thread still is where the full snapshot saw it, what only snapshots read
             * (the wait; the exception state, before 3.11; every thread's CPU state) still
             * holds. */
            if (st != NULL && same_place(st, o)) {
                o->wait = st->wait;
                if (o->has_exception == SNAP_UNKNOWN) {
                    o->has_exception = st->has_exception;
                }
                /* A sample reads a few threads' CPU states in turn; the snapshot read them all. */
                if (o->on_cpu == SNAP_UNKNOWN) {
                    o->on_cpu = st->on_cpu;
                }
            }
        }
        in->threads = threads;
        in->n_threads = n;
    }
    s->interps = interps;
    s->n_interps = n_interps;
    return 0;
}

/* A snapshot of what the header says, for a file that stores none. */
static struct snapshot *bare_snapshot(const struct rec_header *h, struct pt_error *err)
{
    struct snapshot *s = snapshot_new(err);
    if (s == NULL) {
        return NULL;
    }
    s->pid = h->pid;
    s->started = h->started;
    s->python.version = dup_str(s, h->python_version);
    s->python.hexversion = h->hexversion;
    s->python.free_threaded = h->free_threaded;
    s->python.debug_build = h->debug_build;
    s->python.binary = dup_str(s, h->binary);
    if (h->cmdline != NULL) {
        s->cmdline = snapshot_alloc_array(s, h->n_cmdline + 1, sizeof *s->cmdline);
        for (size_t i = 0; s->cmdline != NULL && i < h->n_cmdline; i++) {
            s->cmdline[i] = dup_str(s, h->cmdline[i]);
        }
        s->n_cmdline = s->cmdline != NULL ? h->n_cmdline : 0;
    }
    snapshot_warn(s, "the recording (%.*s) holds no GC state, task graph or waits: only samples",
                  (int)h->format.len, h->format.ptr != NULL ? h->format.ptr : "");
    return s;
}

struct at_ctx {
    struct snapshot *s;
    double start_wall;
    int rc;
};

static int put_sample(void *ctx, const struct rec_sample *smp)
{
    struct at_ctx *a = ctx;
    a->rc = overlay(a->s, smp);
    if (a->start_wall >= 0) {
        a->s->time = a->start_wall + smp->t;
    }
    return 1;
}

/* A file read by scanning alone (CPython's): the last successful sample at or before T is
 * found by counting them first, then handed on in a second pass (what a sample points at lives
 * only during its call); before the first, the first. */
struct nth_ctx {
    double t;
    uint64_t seen;
    uint64_t want; /* 1-based; 0 while counting */
    struct at_ctx *at;
};

static int nth_sample(void *ctx, const struct rec_sample *smp)
{
    struct nth_ctx *c = ctx;
    if (smp->failed) {
        return 0;
    }
    if (c->want == 0) {
        if (smp->t > c->t && c->seen > 0) {
            return 1;
        }
        c->seen++;
        return smp->t > c->t ? 1 : 0;
    }
    if (++c->seen == c->want) {
        return put_sample(c->at, smp);
    }
    return 0;
}

static int cpy_sample_at(struct cpyrec *r, double t, struct at_ctx *a, struct pt_error *err)
{
    struct nth_ctx c = {t, 0, 0, a};
    if (cpyrec_scan(r, -INFINITY, INFINITY, nth_sample, &c, err) < 0 && c.seen == 0) {
        return -1;
    }
    if (c.seen == 0) {
        return pt_error_set(err, PT_E_LIMIT, 0, "the recording holds no sample");
    }
    c.want = c.seen;
    c.seen = 0;
    int rc = cpyrec_scan(r, -INFINITY, INFINITY, nth_sample, &c, err);
    return rc < 0 && c.seen < c.want ? -1 : 0;
}

struct snapshot *recording_snapshot_at(struct recording *r, double t, struct pt_error *err)
{
    const struct rec_header *h = recording_header(r);
    struct snapshot *s = NULL;
    double when = 0;
    if (r->pyrec != NULL) {
        struct pt_error e = {0};
        s = recreader_snapshot_at(r->pyrec, t, &when, &e);
        if (s == NULL && e.code != PT_E_LIMIT) {
            *err = e;
            return NULL;
        }
    }
    if (s == NULL && (s = bare_snapshot(h, err)) == NULL) {
        return NULL;
    }
    struct at_ctx a = {s, h->start_wall, 0};
    int rc;
    if (r->pyrec != NULL) {
        rc = recreader_sample_at(r->pyrec, t, put_sample, &a, err);
    } else {
        rc = cpy_sample_at(r->cpy, t, &a, err);
    }
    if (rc < 0 || a.rc < 0) {
        if (a.rc < 0) {
            pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the snapshot");
        }
        snapshot_free(s);
        return NULL;
    }
    return s;
}
