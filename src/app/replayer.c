/* replayer: a recording played back for the live view. */
#include "config.h"

#include "app/replayer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/record/recconv.h"
#include "core/record/recformat.h"
#include "core/record/recread.h"
#include "core/record/recording.h"
#include "core/sampler/sampler.h"
#include "core/util/error.h"

static const double MIN_SPEED = 0.25;
static const double MAX_SPEED = 64;
static const double STEP_LOOK_S = 2.0; /* how far back a step looks for the sample before */

struct replayer {
    struct recording *r;
    struct recconv *conv;
    double length;
    double pos;
    double fed_to;   /* the sampler counts the samples up to here; < 0: nothing yet */
    double speed;
    bool playing;
    double tick;     /* when a playing position was last moved on */
};

struct replayer *replayer_open(const char *path, struct pt_error *err)
{
    struct replayer *p = calloc(1, sizeof *p);
    if (p == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory for the replay");
        return NULL;
    }
    if ((p->r = recording_open(path, err)) == NULL || (p->conv = recconv_new(err)) == NULL) {
        replayer_close(p);
        return NULL;
    }
    p->length = recording_duration(p->r);
    p->length = isfinite(p->length) && p->length > 0 ? p->length : 0;
    p->fed_to = -1;
    p->speed = 1;
    return p;
}

void replayer_close(struct replayer *p)
{
    if (p != NULL) {
        recording_close(p->r);
        recconv_free(p->conv);
        free(p);
    }
}

const struct rec_header *replayer_header(const struct replayer *p)
{
    return recording_header(p->r);
}

double replayer_length(const struct replayer *p)
{
    return p->length;
}

double replayer_position(const struct replayer *p)
{
    return p->pos;
}

double replayer_speed(const struct replayer *p)
{
    return p->speed;
}

bool replayer_playing(const struct replayer *p)
{
    return p->playing;
}

const char *replayer_damage(const struct replayer *p)
{
    return recording_damage(p->r);
}

void replayer_seek(struct replayer *p, double t)
{
    p->pos = !(t > 0) ? 0 : t > p->length ? p->length : t;
}

/* The first or last sample time found by a scan. */
struct find {
    double after;  /* the first sample later than this; */
    double before; /* or the last one earlier than this */
    double found;
    bool any;
    bool first;
};

static int find_sample(void *ctx, const struct rec_sample *s)
{
    struct find *f = ctx;
    if (s->failed) {
        return 0;
    }
    if (f->first) {
        if (s->t > f->after) {
            f->found = s->t;
            f->any = true;
            return 1;
        }
        return 0;
    }
    if (s->t < f->before) {
        f->found = s->t;
        f->any = true;
        return 0;
    }
    return 1;
}

void replayer_step(struct replayer *p, int n)
{
    struct pt_error err = {0};
    for (; n > 0; n--) {
        struct find f = {.after = p->pos + RECFORMAT_TICK / 2, .first = true};
        recording_scan(p->r, f.after, INFINITY, find_sample, &f, &err);
        if (!f.any) {
            break;
        }
        p->pos = f.found;
    }
    for (; n < 0; n++) {
        struct find f = {.before = p->pos - RECFORMAT_TICK / 2};
        double look = STEP_LOOK_S;
        /* Further back until one is found, or the start is passed. */
        while (!f.any) {
            recording_scan(p->r, p->pos - look, f.before, find_sample, &f, &err);
            if (p->pos - look < 0) {
                break;
            }
            look *= 4;
        }
        if (!f.any) {
            break;
        }
        p->pos = f.found;
    }
}

void replayer_play(struct replayer *p, bool on, double now)
{
    if (on && p->pos >= p->length) {
        p->pos = 0;
    }
    p->playing = on && p->length > 0;
    p->tick = now;
}

void replayer_set_speed(struct replayer *p, double speed)
{
    p->speed = !(speed >= MIN_SPEED) ? MIN_SPEED : speed > MAX_SPEED ? MAX_SPEED : speed;
}

void replayer_refill(struct replayer *p)
{
    p->fed_to = -1;
}

struct feed {
    struct replayer *p;
    struct sampler *s;
};

static int feed_sample(void *ctx, const struct rec_sample *rs)
{
    struct feed *f = ctx;
    if (rs->failed) {
        sampler_add_error(f->s, rs->t);
        return 0;
    }
    const enum snap_bool *on_cpu = NULL;
    const struct sample *smp = recconv_compact(f->p->conv, rs, &on_cpu, NULL);
    if (smp != NULL) {
        sampler_add_sample(f->s, smp, on_cpu, rs->t);
    }
    return 0;
}

void replayer_advance(struct replayer *p, struct sampler *s, double window_s, double now)
{
    if (p->playing) {
        p->pos += (now - p->tick) * p->speed;
        p->tick = now;
        if (p->pos >= p->length) {
            p->pos = p->length;
            p->playing = false;
        }
    }
    double from;
    if (p->fed_to >= 0 && p->pos >= p->fed_to && p->pos - p->fed_to <= window_s) {
        from = p->fed_to + RECFORMAT_TICK / 2;
    } else {
        sampler_reset(s);
        from = isinf(window_s) ? -INFINITY : p->pos - window_s;
    }
    struct feed f = {p, s};
    struct pt_error err = {0};
    if (from <= p->pos) {
        recording_scan(p->r, from, p->pos, feed_sample, &f, &err);
    }
    p->fed_to = p->pos;
}

struct snapshot *replayer_snapshot(struct replayer *p, struct pt_error *err)
{
    return recording_snapshot_at(p->r, p->pos, err);
}

void replayer_timeline(const struct replayer *p, char *buf, size_t cells)
{
    size_t n_chunks = 0;
    const struct recread_chunk *chunks = recording_chunks(p->r, &n_chunks);
    for (size_t i = 0; i < cells; i++) {
        buf[i] = chunks != NULL ? ' ' : '-';
    }
    buf[cells] = '\0';
    if (chunks == NULL || cells == 0 || !(p->length > 0)) {
        return;
    }
    /* A mark outranks a plain span: errors, then exec()s, then collections. */
    static const char RANK[] = " -gXE";
    for (size_t k = 0; k < n_chunks; k++) {
        const struct recread_chunk *c = &chunks[k];
        char mark = (c->flags & RECFORMAT_HAS_ERROR)    ? 'E'
                    : (c->flags & RECFORMAT_HAS_EXEC)   ? 'X'
                    : (c->flags & RECFORMAT_HAS_GC)     ? 'g'
                    : c->samples > 0                    ? '-'
                                                        : ' ';
        size_t a = (size_t)(c->t_first / p->length * (double)cells);
        size_t b = (size_t)(c->t_last / p->length * (double)cells);
        for (size_t i = a < cells ? a : cells - 1; i <= b && i < cells; i++) {
            if (strchr(RANK, mark) > strchr(RANK, buf[i])) {
                buf[i] = mark;
            }
        }
    }
}
