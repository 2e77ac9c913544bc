/* sampler_fixture: the samplers and synthetic snapshots of test_sampler and test_sampler_window. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pyobj/code.h"
#include "core/util/error.h"
#include "core/walk/sample.h"
#include "core/sampler/sampler.h"
#include "core/sampler/sampler_window.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "sampler_fixture.h"

const char *const FILE_NAME = "/srv/app/worker.py";

bool near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

int64_t bucket_of(double t, double width)
{
    return (int64_t)(t / width);
}

struct snap_str str(const char *c)
{
    struct snap_str s = {c, c != NULL ? strlen(c) : 0};
    return s;
}

struct sampler *new_sampler(double window_s)
{
    struct sampler_opts opts = {.rate_hz = 100, .window_s = window_s};
    struct pt_error err = {0};
    struct sampler *s = sampler_new(NULL, NULL, &opts, &err);
    assert_non_null(s);
    return s;
}

struct snapshot *snap_threads(size_t n_threads)
{
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    s->pid = 4242;
    s->time = 1764480000.5;
    s->interps = snapshot_alloc(s, sizeof *s->interps);
    assert_non_null(s->interps);
    s->n_interps = 1;
    struct snap_interp *in = &s->interps[0];
    in->threads = snapshot_alloc_array(s, n_threads > 0 ? n_threads : 1, sizeof *in->threads);
    assert_non_null(in->threads);
    in->n_threads = n_threads;
    for (size_t k = 0; k < n_threads; k++) {
        struct snap_thread *t = &in->threads[k];
        t->tid = (pid_t)(100 + k);
        t->thread_id = 1000 + k;
        t->gil = SNAP_NO;
        t->gil_requested = SNAP_NO;
        t->on_cpu = SNAP_NO;
        t->has_exception = SNAP_NO;
        t->in_gc = SNAP_NO;
    }
    return s;
}

struct snap_thread *thread_of(struct snapshot *s, size_t k)
{
    return &s->interps[0].threads[k];
}

void set_stack(struct snapshot *s, struct snap_thread *t, const char *const *functions, size_t n)
{
    t->frames = snapshot_alloc_array(s, n > 0 ? n : 1, sizeof *t->frames);
    assert_non_null(t->frames);
    t->n_frames = n;
    for (size_t i = 0; i < n; i++) {
        struct snap_frame *f = &t->frames[i];
        f->function = snapshot_strdup(s, functions[i], strlen(functions[i]));
        f->name = f->function;
        f->file = str(FILE_NAME);
        f->line = 10 + (int)i;
        f->first_line = functions[i][0];
        f->end_line = f->col = f->end_col = -1;
        f->kind = SNAP_FRAME_PYTHON;
    }
}

const struct sampler_function *find_function(const struct sampler_stats *st, const char *name)
{
    for (size_t i = 0; i < st->n_functions; i++) {
        const struct sampler_function *f = &st->functions[i];
        if (f->function.ptr != NULL && f->function.len == strlen(name) &&
            memcmp(f->function.ptr, name, f->function.len) == 0) {
            return f;
        }
    }
    return NULL;
}

struct code_info code_entry(uint64_t serial, const char *qualname, int first_line)
{
    struct code_info c = {0};
    c.addr = 0x1000 * serial;
    c.serial = serial;
    c.qualname = (char *)qualname;
    c.qualname_len = strlen(qualname);
    c.name = c.qualname;
    c.name_len = c.qualname_len;
    c.filename = (char *)FILE_NAME;
    c.filename_len = strlen(FILE_NAME);
    c.firstlineno = first_line;
    return c;
}
