/* snapshot: the data model's lifetime, its arena, warnings and thread-state wording. */
#include "config.h"

#include "core/model/snapshot.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/model/snapshot_arena.h"
#include "core/model/snapshot_words.h"

enum {
    ARENA_CHUNK = 64 * 1024,          /* bytes of an ordinary chunk */
    ARENA_BIG = ARENA_CHUNK / 4,      /* larger requests get a chunk of their own */
    ARENA_ALIGN = alignof(max_align_t),
};

/* One calloc'd block. Memory is handed out once and never reused, so it stays zeroed. */
struct arena_chunk {
    struct arena_chunk *next;
    size_t size;
    size_t used;
    max_align_t data[];
};

struct snapshot_arena {
    struct arena_chunk *head;         /* the chunk being filled; big blocks are linked behind */
    struct snap_str *warning_slots;   /* the warnings array snapshot_warn grew, if any */
    size_t warning_cap;
    void **adopted;                   /* blocks snapshot_adopt() took */
    size_t n_adopted;
    size_t cap_adopted;
};

static struct arena_chunk *chunk_new(size_t size)
{
    size_t total;
    if (__builtin_add_overflow(sizeof(struct arena_chunk), size, &total)) {
        return NULL;
    }
    /* Not zeroed here: snapshot_alloc() zeroes what it hands out, so the pages of a chunk's
     * unused tail are never touched (a one-shot dump pays a page fault for each page it
     * touches). */
    struct arena_chunk *c = malloc(total);
    if (c != NULL) {
        c->next = NULL;
        c->size = size;
        c->used = 0;
    }
    return c;
}

struct snapshot *snapshot_new(struct pt_error *err)
{
    struct snapshot *s = calloc(1, sizeof *s);
    struct snapshot_arena *a = calloc(1, sizeof *a);
    if (s == NULL || a == NULL) {
        free(s);
        free(a);
        pt_error_set(err, PT_E_NOMEM, 0, "snapshot");
        return NULL;
    }
    s->arena = a;
    s->python.debug_build = SNAP_UNKNOWN;
    s->started = -1;
    return s;
}

void snapshot_free(struct snapshot *s)
{
    if (s == NULL) {
        return;
    }
    if (s->arena != NULL) {
        struct arena_chunk *c = s->arena->head;
        while (c != NULL) {
            struct arena_chunk *next = c->next;
            free(c);
            c = next;
        }
        for (size_t i = 0; i < s->arena->n_adopted; i++) {
            free(s->arena->adopted[i]);
        }
        free(s->arena->adopted);
        free(s->arena);
    }
    free(s);
}

void *snapshot_alloc(struct snapshot *s, size_t size)
{
    if (s == NULL || s->arena == NULL) {
        return NULL;
    }
    struct snapshot_arena *a = s->arena;
    size_t need;
    /* Round up so the next block stays aligned; size 0 still gets a distinct pointer. */
    if (__builtin_add_overflow(size == 0 ? 1 : size, ARENA_ALIGN - 1, &need)) {
        return NULL;
    }
    need -= need % ARENA_ALIGN;
    struct arena_chunk *c = a->head;
    if (c != NULL && c->size - c->used >= need) {
        void *p = (char *)c->data + c->used;
        c->used += need;
        return memset(p, 0, need);
    }
    struct arena_chunk *fresh = chunk_new(need > ARENA_BIG ? need : ARENA_CHUNK);
    if (fresh == NULL) {
        return NULL;
    }
    fresh->used = need;
    memset(fresh->data, 0, need);
    if (need > ARENA_BIG && c != NULL) {
        /* Keep filling the current chunk; the big block only joins the list to be freed. */
        fresh->next = c->next;
        c->next = fresh;
    } else {
        fresh->next = c;
        a->head = fresh;
    }
    return fresh->data;
}

bool snapshot_adopt(struct snapshot *s, void *block)
{
    if (s == NULL || s->arena == NULL) {
        return false;
    }
    struct snapshot_arena *a = s->arena;
    if (a->n_adopted == a->cap_adopted) {
        size_t ncap = a->cap_adopted ? 2 * a->cap_adopted : 8;
        void **fresh = ncap <= SIZE_MAX / sizeof *fresh ? realloc(a->adopted, ncap * sizeof *fresh)
                                                         : NULL;
        if (fresh == NULL) {
            return false;
        }
        a->adopted = fresh;
        a->cap_adopted = ncap;
    }
    a->adopted[a->n_adopted++] = block;
    return true;
}

void *snapshot_alloc_array(struct snapshot *s, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        return NULL;
    }
    return snapshot_alloc(s, total);
}

struct snap_str snapshot_strdup(struct snapshot *s, const char *bytes, size_t len)
{
    struct snap_str out = {NULL, 0};
    size_t size;
    if ((bytes == NULL && len > 0) || __builtin_add_overflow(len, 1, &size)) {
        return out;
    }
    /* The extra NUL is a convenience for debugging; the contract is bytes plus length. */
    char *p = snapshot_alloc(s, size);
    if (p == NULL) {
        return out;
    }
    if (len > 0) {
        memcpy(p, bytes, len);
    }
    out.ptr = p;
    out.len = len;
    return out;
}

int snapshot_set_cmdline(struct snapshot *s, const char *args, size_t len, bool cut,
                         struct pt_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        n += args[i] == '\0' || i + 1 == len;
    }
    struct snap_str *argv = snapshot_alloc_array(s, n > 0 ? n : 1, sizeof *argv);
    if (argv == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "command line");
    }
    size_t k = 0;
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (args[i] != '\0' && i + 1 < len) {
            continue;
        }
        size_t end = args[i] == '\0' ? i : len;
        argv[k] = snapshot_strdup(s, args + start, end - start);
        if (argv[k].ptr == NULL) {
            return pt_error_set(err, PT_E_NOMEM, 0, "command line");
        }
        k++;
        start = i + 1;
    }
    s->cmdline = argv;
    s->n_cmdline = k;
    s->cmdline_cut = cut;
    return 0;
}

/* Returns the slot for one more warning, growing the array in the arena; NULL on out of
 * memory. A warnings array the caller set up by hand is copied before it grows. */
static struct snap_str *warning_slot(struct snapshot *s)
{
    struct snapshot_arena *a = s->arena;
    size_t cap = s->warnings == a->warning_slots ? a->warning_cap : s->n_warnings;
    if (s->warnings == NULL) {
        cap = 0;
    }
    if (s->n_warnings < cap) {
        return &s->warnings[s->n_warnings];
    }
    size_t new_cap = cap < 8 ? 8 : cap * 2;
    struct snap_str *slots = snapshot_alloc_array(s, new_cap, sizeof *slots);
    if (slots == NULL) {
        return NULL;
    }
    if (s->n_warnings > 0) {
        memcpy(slots, s->warnings, s->n_warnings * sizeof *slots);
    }
    s->warnings = slots;
    a->warning_slots = slots;
    a->warning_cap = new_cap;
    return &slots[s->n_warnings];
}

void snapshot_warn(struct snapshot *s, const char *fmt, ...)
{
    if (s == NULL || s->arena == NULL || s->n_warnings >= SNAPSHOT_MAX_WARNINGS) {
        return;
    }
    struct snap_str *slot = warning_slot(s);
    if (slot == NULL) {
        return;
    }
    if (s->n_warnings == SNAPSHOT_MAX_WARNINGS - 1) {
        static const char more[] = "more warnings were dropped";
        *slot = snapshot_strdup(s, more, sizeof more - 1);
    } else {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        char *text = n < 0 ? NULL : snapshot_alloc(s, (size_t)n + 1);
        if (text == NULL) {
            return;
        }
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
        slot->ptr = text;
        slot->len = (size_t)n;
    }
    if (slot->ptr != NULL) {
        s->n_warnings++;
    }
}

const char *snapshot_frame_label(enum snap_frame_kind kind)
{
    switch (kind) {
    case SNAP_FRAME_NATIVE:
        return "<native>";
    case SNAP_FRAME_GC:
        return "<GC>";
    case SNAP_FRAME_SHIM:
        return "<shim>";
    case SNAP_FRAME_UNREADABLE:
        return "<unreadable frame>";
    case SNAP_FRAME_PYTHON:
        break;
    }
    return "<unknown frame kind>";
}

/* Each reason in words, and the function its frames are counted as. */
static const struct {
    const char *reason;
    const char *label;
} UNREADABLE[] = {
    [SNAP_UNREADABLE_NONE] = {"unknown reason", "<unreadable frame>"},
    [SNAP_UNREADABLE_STACK] = {"stack changed while read",
                               "<unreadable frame: stack changed while read>"},
    [SNAP_UNREADABLE_CODE] = {"code object unreadable",
                              "<unreadable frame: code object unreadable>"},
    [SNAP_UNREADABLE_CACHE] = {"too many code objects",
                               "<unreadable frame: too many code objects>"},
    [SNAP_UNREADABLE_NOMEM] = {"out of memory", "<unreadable frame: out of memory>"},
};

const char *snapshot_unreadable_reason(enum snap_unreadable why)
{
    size_t i = (size_t)why < sizeof UNREADABLE / sizeof *UNREADABLE ? (size_t)why : 0;
    return UNREADABLE[i].reason;
}

const char *snapshot_unreadable_label(enum snap_unreadable why)
{
    size_t i = (size_t)why < sizeof UNREADABLE / sizeof *UNREADABLE ? (size_t)why : 0;
    return UNREADABLE[i].label;
}

const char *snapshot_frame_title(const struct snap_frame *f)
{
    return f->kind == SNAP_FRAME_UNREADABLE ? snapshot_unreadable_label(f->unreadable)
                                            : snapshot_frame_label(f->kind);
}

bool snapshot_frame_named(const struct snap_frame *f)
{
    const char *label = snapshot_frame_title(f);
    return f->function.ptr != NULL &&
           (f->function.len != strlen(label) || memcmp(f->function.ptr, label, f->function.len));
}

const char *snapshot_wait_kind_name(enum snap_wait_kind kind)
{
    static const char *const names[] = {
        [SNAP_WAIT_LOCK] = "lock",   [SNAP_WAIT_GIL] = "gil",         [SNAP_WAIT_IO] = "io",
        [SNAP_WAIT_SLEEP] = "sleep", [SNAP_WAIT_RUNNING] = "running", [SNAP_WAIT_UNKNOWN] = "unknown",
    };
    return (size_t)kind < sizeof names / sizeof *names ? names[kind] : NULL;
}

const struct snap_thread *snapshot_find_thread(const struct snapshot *s, pid_t tid)
{
    for (size_t i = 0; tid > 0 && s->interps != NULL && i < s->n_interps; i++) {
        for (size_t j = 0; s->interps[i].threads != NULL && j < s->interps[i].n_threads; j++) {
            if (s->interps[i].threads[j].tid == tid) {
                return &s->interps[i].threads[j];
            }
        }
    }
    return NULL;
}

/* A growing piece of text: appends stop at the end of the buffer. */
struct words {
    char *buf;
    size_t size, len;
};

static void say(struct words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct words *w, const char *fmt, ...)
{
    if (w->len + 1 >= w->size) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->buf + w->len, w->size - w->len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        w->len = w->len + (size_t)n < w->size ? w->len + (size_t)n : w->size - 1;
    }
}

static void say_str(struct words *w, const char *before, struct snap_str str)
{
    if (str.ptr != NULL) {
        say(w, "%s%.*s", before, (int)(str.len < 400 ? str.len : 400), str.ptr);
    }
}

/* "held by NAME (TID)" of the thread that can release the wait. */
static void say_owner(struct words *w, const struct snapshot *s, pid_t tid, bool brief)
{
    if (tid <= 0) {
        return;
    }
    const struct snap_thread *o = snapshot_find_thread(s, tid);
    if (o != NULL && o->name.ptr != NULL) {
        say_str(w, " held by ", o->name);
        if (!brief) {
            say(w, " (%d)", (int)tid);
        }
    } else {
        say(w, " held by thread %d", (int)tid);
    }
}

void snapshot_wait_text(const struct snapshot *s, const struct snap_thread *t, bool brief,
                        char *buf, size_t size)
{
    struct words w = {buf, size, 0};
    const struct snap_wait *wt = &t->wait;
    if (size == 0) {
        return;
    }
    buf[0] = '\0';
    switch (wt->kind) {
    case SNAP_WAIT_NONE:
        return;
    case SNAP_WAIT_LOCK:
        if (wt->object.ptr != NULL && wt->object.len > 10 &&
            memcmp(wt->object.ptr, "threading.", 10) == 0) {
            say(&w, "%.*s", (int)(wt->object.len - 10), wt->object.ptr + 10);
        } else {
            say(&w, "lock");
        }
        if (wt->lock != 0 && !brief) {
            say(&w, " %#llx", (unsigned long long)wt->lock);
        }
        say_str(&w, " (", wt->variable);
        say(&w, wt->variable.ptr != NULL ? ")" : "");
        say_owner(&w, s, wt->owner_tid, brief);
        say_str(&w, " in ", wt->via);
        if (wt->lock == 0 && !brief) {
            say_str(&w, ": ", wt->reason);
        }
        break;
    case SNAP_WAIT_GIL:
        say(&w, "GIL");
        say_owner(&w, s, wt->owner_tid, brief);
        /* How long the holder has had it says more than how long this thread waited. */
        if (wt->owner_held >= 0) {
            say(&w, " for %.1f s", wt->owner_held);
            return;
        }
        break;
    case SNAP_WAIT_IO:
        say_str(&w, "", wt->syscall);
        if (wt->fd >= 0 && !brief) {
            say(&w, " fd %d%s", wt->fd, wt->object.ptr != NULL ? ":" : "");
        }
        say_str(&w, " ", wt->object);
        break;
    case SNAP_WAIT_SLEEP:
        say(&w, "sleep");
        if (wt->left >= 0) {
            say(&w, ", %.1f s left", wt->left);
        } else if (wt->requested >= 0) {
            say(&w, " %.1f s", wt->requested);
        }
        break;
    case SNAP_WAIT_RUNNING:
        say(&w, "running");
        break;
    case SNAP_WAIT_UNKNOWN:
        say(&w, "unknown");
        say_str(&w, ": ", wt->reason);
        break;
    }
    if (wt->since >= 0 && wt->kind != SNAP_WAIT_RUNNING) {
        say(&w, ", for %.1f s", wt->since);
    }
}

bool snapshot_gc_record_delta(const struct snap_gc *gc, size_t i, struct snap_gc_record *delta)
{
    if (gc->recent == NULL || i >= gc->n_recent) {
        return false;
    }
    const struct snap_gc_record *r = &gc->recent[i];
    struct snap_gc_record before = {.generation = r->generation};
    bool found = false;
    for (size_t k = i; k-- > 0;) {
        if (gc->recent[k].generation == r->generation) {
            before = gc->recent[k];
            found = true;
            break;
        }
    }
    /* The totals of the record before must be one collection behind. */
    if (found ? before.collections + 1 != r->collections : r->collections != 1) {
        return false;
    }
    *delta = *r;
    delta->collections = 1;
    delta->collected = r->collected - before.collected;
    delta->uncollectable = r->uncollectable - before.uncollectable;
    delta->candidates = r->candidates - before.candidates;
    delta->duration = r->stop_ns >= r->start_ns ? (double)(r->stop_ns - r->start_ns) / 1e9 : -1.0;
    return delta->collected >= 0 && delta->uncollectable >= 0 && delta->candidates >= 0;
}

size_t snapshot_thread_states(const struct snap_thread *t, enum snap_state out[SNAP_STATE_COUNT])
{
    size_t n = 0;
    if (t->main) {
        out[n++] = SNAP_STATE_MAIN;
    }
    if (t->gil == SNAP_YES) {
        out[n++] = SNAP_STATE_GIL;
    }
    if (t->gil_requested == SNAP_YES) {
        out[n++] = SNAP_STATE_WAIT_GIL;
    }
    if (t->on_cpu == SNAP_YES) {
        out[n++] = SNAP_STATE_ON_CPU;
    }
    /* Idle only when known: before 3.15 nothing says whether a thread off CPU and without the
     * GIL waits for it, and a CPU-bound thread between turns looks so on every refresh. */
    if (t->gil == SNAP_NO && t->on_cpu == SNAP_NO && t->gil_requested == SNAP_NO) {
        out[n++] = SNAP_STATE_IDLE;
    } else if (t->gil == SNAP_NO && t->on_cpu == SNAP_NO && t->gil_requested == SNAP_UNKNOWN) {
        out[n++] = SNAP_STATE_NO_GIL;
    }
    if (t->in_gc == SNAP_YES) {
        out[n++] = SNAP_STATE_IN_GC;
    }
    if (t->has_exception == SNAP_YES) {
        out[n++] = SNAP_STATE_EXCEPTION;
    }
    return n;
}

const char *snapshot_state_word(enum snap_state state, bool brief)
{
    switch (state) {
    case SNAP_STATE_MAIN:
        return brief ? NULL : "main thread";
    case SNAP_STATE_GIL:
        return brief ? "GIL" : "has GIL";
    case SNAP_STATE_WAIT_GIL:
        return brief ? "wait GIL" : "waiting for GIL";
    case SNAP_STATE_ON_CPU:
        return brief ? "CPU" : "on CPU";
    case SNAP_STATE_IDLE:
        return "idle";
    case SNAP_STATE_NO_GIL:
        return "no GIL";
    case SNAP_STATE_IN_GC:
        return brief ? "GC" : "in GC";
    case SNAP_STATE_EXCEPTION:
        return brief ? "exc" : "has exception";
    case SNAP_STATE_COUNT:
        break;
    }
    return NULL;
}

void snapshot_thread_state_text(const struct snap_thread *t, bool brief, char *buf, size_t size)
{
    enum snap_state states[SNAP_STATE_COUNT];
    size_t n = snapshot_thread_states(t, states);
    size_t used = 0;
    if (size == 0) {
        return;
    }
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        const char *word = snapshot_state_word(states[i], brief);
        if (word == NULL) {
            continue;
        }
        int w =
            snprintf(buf + used, size - used, "%s%s", used > 0 ? (brief ? " " : ", ") : "", word);
        if (w < 0) {
            break;
        }
        used += (size_t)w;
    }
}

void snapshot_thread_state_words(const struct snap_thread *t, char *buf, size_t size)
{
    snapshot_thread_state_text(t, false, buf, size);
}

const char SNAPSHOT_TASK_CORO_OPEN[] = "coro=";
const char SNAPSHOT_TASK_CORO_CLOSE[] = "()";

bool snapshot_task_coro_label(const struct snap_task *t, struct snap_str *function)
{
    if (t->name.ptr != NULL || t->frames == NULL || t->n_frames == 0) {
        return false;
    }
    const struct snap_frame *f = &t->frames[t->n_frames - 1];
    if (f->kind != SNAP_FRAME_PYTHON || f->function.ptr == NULL) {
        return false;
    }
    *function = f->function;
    return true;
}

const char *snapshot_task_state_name(enum snap_task_state state)
{
    switch (state) {
    case SNAP_TASK_PENDING:
        return "pending";
    case SNAP_TASK_CANCELLED:
        return "cancelled";
    case SNAP_TASK_FINISHED:
        return "finished";
    case SNAP_TASK_UNKNOWN:
        break;
    }
    return NULL;
}

static int fold_ascii(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

int snapshot_str_compare(struct snap_str a, struct snap_str b, enum snap_str_order order)
{
    bool reading = order == SNAP_STR_READING;
    if (a.ptr == NULL || b.ptr == NULL) {
        int c = (a.ptr != NULL) - (b.ptr != NULL);
        return reading ? -c : c;
    }
    size_t n = a.len < b.len ? a.len : b.len;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a.ptr[i];
        unsigned char y = (unsigned char)b.ptr[i];
        int c = reading ? fold_ascii(x) - fold_ascii(y) : x - y;
        if (c != 0) {
            return c;
        }
    }
    return (a.len > b.len) - (a.len < b.len);
}

bool snapshot_gc_counts_kept(const struct snap_gc *gc)
{
    for (size_t i = 0; gc->generations != NULL && i < gc->n_generations; i++) {
        if (gc->generations[i].collections >= 0) {
            return true;
        }
    }
    return false;
}
