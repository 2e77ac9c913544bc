/* frames: the interpreter-frame chains of a set of threads, copied in as few reads as can be. */
#include "config.h"

#include "core/walk/frames.h"
#include "core/walk/frames_int.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/target/proc.h"

void frames_release(struct frames_thread *t)
{
    free(t->pref);
    free(t->hdr);
    free(t->read_addrs);
    free(t->links);
    for (size_t i = 0; i < LIMIT_CHUNKS + 1; i++) {
        free(t->chunks[i].data);
    }
    free(t->frames);
    memset(t, 0, sizeof *t);
}

/* Clears T's outputs and inputs, keeping its buffers: the fields before FRAMES, and the
 * chunks' addresses and lengths. (A copy of the whole struct, zeroed and the buffers put
 * back, was 500 instructions a thread every sample.) */
void frames_clear_walk(struct frames_thread *t)
{
    memset(t, 0, offsetof(struct frames_thread, frames));
    for (size_t i = 0; i < LIMIT_CHUNKS + 1; i++) {
        t->chunks[i].addr = 0;
        t->chunks[i].len = 0;
    }
}

void frames_skip(struct frames_thread *t)
{
    frames_clear_walk(t);
    t->n_kept = 0;
}

/* Reads for a walk: with NOW from the target itself, else possibly from the read-ahead copy. */
int frames_read_regions(struct proc *p, bool now, const struct proc_iov *iov, size_t n)
{
    return now ? proc_read_now(p, iov, n, NULL) : proc_read_many(p, iov, n, NULL);
}

int frames_read_one(struct proc *p, bool now, uint64_t addr, void *dst, size_t len)
{
    struct proc_iov one = {addr, dst, len};
    return frames_read_regions(p, now, &one, 1);
}

/* The buffer of T's next chunk, at least LEN bytes; NULL on out of memory. */
uint8_t *frames_chunk_buffer(struct frames_thread *t, size_t len)
{
    struct frames_chunk *c = &t->chunks[t->n_chunks];
    if (c->cap < len) {
        uint8_t *fresh = realloc(c->data, len);
        if (fresh == NULL) {
            return NULL;
        }
        c->data = fresh;
        c->cap = len;
    }
    return c->data;
}

/* The chain read is not one a thread can have: a frame's owner is no owner, or its caller
 * lies above it in the chunk that holds both (a data stack grows upward). */
static void torn(struct frames_thread *t, const char *why, uint64_t addr)
{
    t->torn = true;
    t->done = true;
    snprintf(t->error, sizeof t->error, "%s at 0x%" PRIx64, why, addr);
}

static void fail(struct frames_thread *t, const char *why, uint64_t addr)
{
    t->failed = true;
    t->done = true;
    snprintf(t->error, sizeof t->error, "%s at 0x%" PRIx64, why, addr);
}

/* The span of the newest chunk that holds frames: from its start to the end of the newest
 * frame's header. Zero when the newest frame is not in it. */
size_t frames_newest_span(const struct py_layout *L, const struct frames_thread *t)
{
    uint64_t end;
    if (t->chunk_addr == 0 || t->current_frame < t->chunk_addr + CHUNK_HEADER ||
        __builtin_add_overflow(t->current_frame, L->frame.size, &end) ||
        end - t->chunk_addr > LIMIT_CHUNK_READ) {
        return 0;
    }
    return (size_t)(end - t->chunk_addr);
}

/* Copies T's next older chunk: its first CHUNK_MIN_SIZE bytes in one read, the rest of its used
 * part (header + top slots) only when it holds more. */
static void copy_older_chunk(struct proc *p, struct frames_thread *t)
{
    uint64_t addr = t->next_older;
    uint64_t size = 0;
    uint64_t top = 0;
    uint64_t used = 0;
    uint8_t *buf = frames_chunk_buffer(t, CHUNK_MIN_SIZE);
    t->next_older = 0;
    if (buf == NULL || frames_read_one(p, t->now, addr, buf, CHUNK_MIN_SIZE) < 0) {
        return;
    }
    layout_read_u64(buf, CHUNK_MIN_SIZE, CHUNK_SIZE_AT, &size);
    layout_read_u64(buf, CHUNK_MIN_SIZE, CHUNK_TOP_AT, &top);
    if (top <= LIMIT_CHUNK_READ / 8) {
        used = CHUNK_HEADER + top * 8;
    }
    if (used == 0 || used > size || used > LIMIT_CHUNK_READ) {
        return;
    }
    if (used > CHUNK_MIN_SIZE) {
        if ((buf = frames_chunk_buffer(t, used)) == NULL ||
            frames_read_one(p, t->now, addr + CHUNK_MIN_SIZE, buf + CHUNK_MIN_SIZE,
                     used - CHUNK_MIN_SIZE) < 0) {
            return;
        }
    }
    t->chunks[t->n_chunks].addr = addr;
    t->chunks[t->n_chunks].len = (size_t)used;
    t->n_chunks++;
    layout_read_u64(buf, used, CHUNK_PREVIOUS_AT, &t->next_older);
}

/* The copied chunk that starts at ADDR, or NULL. */
const struct frames_chunk *frames_copied(const struct frames_thread *t, uint64_t addr)
{
    for (size_t i = 0; i < t->n_chunks; i++) {
        if (t->chunks[i].addr == addr && t->chunks[i].len > 0) {
            return &t->chunks[i];
        }
    }
    return NULL;
}

/* The header of the frame at ADDR if it lies in a copied chunk. A frame outside them may be in
 * the next older chunk, which is copied once (its caller frames will be there too). */
static const uint8_t *in_chunks(struct proc *p, const struct py_layout *L,
                                struct frames_thread *t, uint64_t addr)
{
    /* Callers are mostly in the chunk of the frame before. */
    if (t->last_chunk < t->n_chunks) {
        const struct frames_chunk *c = &t->chunks[t->last_chunk];
        if (addr >= c->addr && addr - c->addr <= c->len &&
            c->len - (addr - c->addr) >= L->frame.size) {
            return c->data + (addr - c->addr);
        }
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        for (size_t i = 0; i < t->n_chunks; i++) {
            const struct frames_chunk *c = &t->chunks[i];
            if (addr >= c->addr && addr - c->addr <= c->len &&
                c->len - (addr - c->addr) >= L->frame.size) {
                t->last_chunk = i;
                return c->data + (addr - c->addr);
            }
        }
        /* The next older chunk may be one the start batch already copied: go past those (a
         * looping chain ends at the cap). */
        for (size_t hops = 0; t->next_older != 0; hops++) {
            const struct frames_chunk *dup = frames_copied(t, t->next_older);
            if (dup == NULL) {
                break;
            }
            uint64_t prev = 0;
            layout_read_u64(dup->data, dup->len, CHUNK_PREVIOUS_AT, &prev);
            t->next_older = hops < LIMIT_CHUNKS ? prev : 0;
        }
        if (t->next_older == 0 || t->n_chunks > LIMIT_CHUNKS) {
            return NULL;
        }
        copy_older_chunk(p, t);
    }
    return NULL;
}

size_t frames_prefix(const struct py_layout *L)
{
    uint64_t d = L->gen.exc_state_before_frame;
    if (L->frames != FRAMES_INTERPRETER || !layout_has(d) || !layout_has(L->errstack.size) ||
        d < L->errstack.size || d > LAYOUT_FRAME_PREFIX_MAX) {
        return 0;
    }
    return (size_t)d;
}

/* Room in *ITEMS (*CAP of SIZE bytes) for one more after N: doubled when full. */
static bool room_for_one(void **items, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) {
        return true;
    }
    size_t ncap = *cap ? *cap * 2 : 16;
    void *fresh = realloc(*items, ncap * size);
    if (fresh == NULL) {
        return false;
    }
    *items = fresh;
    *cap = ncap;
    return true;
}

/* A slot for one more frame, or NULL on out of memory. The caller fills it in place: a frame
 * built on the stack and copied stalls on store forwarding (perf: a third of a deep sample).
 * (in_chunk_run() grows the array itself, its count held in a local.) */
static struct frames_raw *push_frame(struct frames_thread *t)
{
    if (!room_for_one((void **)&t->frames, &t->cap, t->n_frames, sizeof *t->frames)) {
        return NULL;
    }
    return &t->frames[t->n_frames++];
}

/* The largest owner value the version has (Include/internal/pycore_frame.h: owned by the
 * thread, a generator, a frame object, the C stack, the interpreter). */
static int max_owner(const struct py_layout *L)
{
    int max = L->frame.owner_generator + 1;
    max = L->frame.owner_cstack > max ? L->frame.owner_cstack : max;
    return L->frame.owner_interpreter > max ? L->frame.owner_interpreter : max;
}

void frames_link_parse(const struct py_layout *L, const uint8_t *h, uint64_t addr,
                       struct frames_link *out)
{
    *out = (struct frames_link){.addr = addr};
    layout_read_u64(h, L->frame.size, L->frame.previous, &out->previous);
    layout_read_uint(h, L->frame.size, L->frame.owner, 1, &out->owner);
    layout_read_u64(h, L->frame.size, L->frame.executable, &out->code_addr);
    layout_read_uint(h, L->frame.size, L->frame.instr_ptr, L->frame.instr_width, &out->instr_ptr);
    if (layout_has(L->frame.running)) {
        layout_read_uint(h, L->frame.size, L->frame.running, 1, &out->state);
    }
    out->code_addr &= ~L->frame.executable_tag_mask;
}

void frames_link_span(const struct py_layout *L, uint64_t *lo, size_t *len)
{
    const struct {
        uint64_t off;
        uint64_t width;
    } fields[] = {
        {L->frame.previous, 8},   {L->frame.owner, 1},
        {L->frame.executable, 8}, {L->frame.instr_ptr, L->frame.instr_width},
        {L->frame.running, 1},
    };
    uint64_t a = UINT64_MAX;
    uint64_t b = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (layout_has(fields[i].off) && fields[i].off + fields[i].width <= L->frame.size) {
            a = fields[i].off < a ? fields[i].off : a;
            b = fields[i].off + fields[i].width > b ? fields[i].off + fields[i].width : b;
        }
    }
    if (a >= b) {
        a = 0;
        b = L->frame.size;
    }
    *lo = a;
    *len = (size_t)(b - a);
}

bool frames_link_same(const struct frames_link *a, const struct frames_link *b, bool with_instr)
{
    return a->addr == b->addr && a->previous == b->previous && a->code_addr == b->code_addr &&
           a->owner == b->owner && a->state == b->state &&
           (!with_instr || a->instr_ptr == b->instr_ptr);
}

/* What the tight loop of in_chunk_run() needs of the layout, checked once per walk. */
struct frames_fast {
    bool ok; /* the layout fits the tight loop: 8-byte instruction pointer, no running state */
    size_t size;
    size_t previous;
    size_t executable;
    size_t instr_ptr;
    size_t owner;
    uint64_t tag_mask;
    int max_owner;
    /* Bit N set: a frame owned by N is a Python frame (not an entry shim of the C stack or
     * the interpreter). Owners run from 0 to max_owner, well below 64. */
    uint64_t python_owners;
    size_t prefix; /* frames_prefix(), whether OK or not */
};

static struct frames_fast fast_layout(const struct py_layout *L)
{
    struct frames_fast f = {.prefix = frames_prefix(L)};
    const uint64_t offs[] = {L->frame.previous, L->frame.executable, L->frame.instr_ptr};
    f.ok = L->frames == FRAMES_INTERPRETER && L->frame.instr_width == 8 &&
           !layout_has(L->frame.running) && layout_has(L->frame.owner) && max_owner(L) < 64 &&
           L->frame.owner < L->frame.size && L->frame.size <= LAYOUT_FRAME_HEADER_MAX;
    for (size_t i = 0; i < sizeof offs / sizeof offs[0] && f.ok; i++) {
        f.ok = layout_has(offs[i]) && offs[i] <= L->frame.size && L->frame.size - offs[i] >= 8;
    }
    if (!f.ok) {
        return f;
    }
    f.size = (size_t)L->frame.size;
    f.previous = (size_t)L->frame.previous;
    f.executable = (size_t)L->frame.executable;
    f.instr_ptr = (size_t)L->frame.instr_ptr;
    f.owner = (size_t)L->frame.owner;
    f.tag_mask = L->frame.executable_tag_mask;
    f.max_owner = max_owner(L);
    for (int o = 0; o <= f.max_owner; o++) {
        if (o != L->frame.owner_cstack && o != L->frame.owner_interpreter) {
            f.python_owners |= 1ull << o;
        }
    }
    return f;
}

/* Takes the header H at ADDR as frames_link_parse() does, through FP's offsets when they fit. */
static void parse_header(const struct py_layout *L, const struct frames_fast *fp, const uint8_t *h,
                         uint64_t addr, struct frames_link *out)
{
    if (!fp->ok) {
        frames_link_parse(L, h, addr, out);
        return;
    }
    out->addr = addr;
    out->owner = h[fp->owner];
    out->state = 0;
    memcpy(&out->previous, h + fp->previous, 8);
    memcpy(&out->code_addr, h + fp->executable, 8);
    memcpy(&out->instr_ptr, h + fp->instr_ptr, 8);
    out->code_addr &= ~fp->tag_mask;
}

/* Keeps LINK in T's links (a walk takes at most LIMIT_FRAMES + 1 headers). */
static bool keep_link(struct frames_thread *t, const struct frames_link *link)
{
    if (!room_for_one((void **)&t->links, &t->cap_links, t->n_links, sizeof *link)) {
        return false;
    }
    t->links[t->n_links++] = *link;
    return true;
}

/* Takes one frame header H at ADDR: keeps it if it is a Python frame, moves to its caller.
 * PREFIX bytes before H were read with it (frames_prefix(), or 0). */
static void take_frame(const struct py_layout *L, const struct frames_fast *fp,
                       struct frames_thread *t, const uint8_t *h, size_t prefix)
{
    struct frames_link link;
    parse_header(L, fp, h, t->pending, &link);
    if (t->keep_links && !keep_link(t, &link)) {
        fail(t, "out of memory for frame", t->pending);
        return;
    }
    uint64_t owner = link.owner;
    if (layout_has(L->frame.owner) && owner > (uint64_t)max_owner(L)) {
        torn(t, "frame owned by no one", t->pending);
        return;
    }
    if (layout_has(L->frame.running)) {
        int8_t s = (int8_t)(uint8_t)link.state;
        if (s != L->frame.running_value && s != L->frame.unwinding_value) {
            torn(t, "frame object no longer running", t->pending);
            return;
        }
    }
    /* Frames the interpreter owns (entry shims on the C stack) are not Python frames; CPython's
     * own unwinder skips them too. */
    bool shim = (int)owner == L->frame.owner_cstack || (int)owner == L->frame.owner_interpreter;
    t->last_owner = (int)owner;
    /* A shim below a Python frame, with more chain below it, marks where C code called into
     * Python (--native); one before any Python frame is C code being returned into. */
    if (shim && t->n_frames > 0 && link.previous != 0) {
        t->frames[t->n_frames - 1].native_below = true;
    }
    if (!shim && link.code_addr != 0) {
        struct frames_raw taken = {
            .addr = t->pending,
            .code_addr = link.code_addr,
            .instr_ptr = link.instr_ptr,
            .generator = (int)owner == L->frame.owner_generator,
        };
        if (taken.generator && prefix > 0) {
            const uint8_t *item = h - prefix;
            taken.exc_known =
                layout_read_u64(item, prefix, L->errstack.value, &taken.exc_value) &&
                layout_read_u64(item, prefix, L->errstack.previous, &taken.exc_previous);
        }
        bool was = t->n_frames < t->n_kept && t->n_frames < t->cap && t->n_same == t->n_frames;
        struct frames_raw *f = push_frame(t);
        if (f == NULL) {
            fail(t, "out of memory for frame", t->pending);
            return;
        }
        if (was && f->addr == taken.addr && f->code_addr == taken.code_addr &&
            f->instr_ptr == taken.instr_ptr && f->generator == taken.generator &&
            f->exc_known == taken.exc_known && f->exc_value == taken.exc_value &&
            f->exc_previous == taken.exc_previous) {
            t->n_same++; /* as the last walk left it, code and offset included */
            f->native_below = false; /* the chain below says so again */
        } else {
            *f = taken;
        }
    }
    t->pending = link.previous;
}

/* Remembers that the frame at ADDR had to be read outside the chunks. */
static void note_read(struct frames_thread *t, uint64_t addr)
{
    /* Most threads have one or two such frames: the list grows as needed. */
    if (t->n_read == t->cap_read && t->cap_read < FRAMES_HINT_MAX) {
        size_t ncap = t->cap_read ? t->cap_read * 4 : 4;
        ncap = ncap < FRAMES_HINT_MAX ? ncap : FRAMES_HINT_MAX;
        uint64_t *fresh = realloc(t->read_addrs, ncap * sizeof *fresh);
        if (fresh == NULL) {
            return;
        }
        t->read_addrs = fresh;
        t->cap_read = ncap;
    }
    if (t->n_read < t->cap_read) {
        t->read_addrs[t->n_read++] = addr;
    }
}

/* The prefetched header of the frame at ADDR, if the hint named it: usually the next one.
 * Each was read with the frames_prefix() bytes before it. */
static const uint8_t *prefetched(const struct py_layout *L, size_t pre, struct frames_thread *t,
                                 uint64_t addr)
{
    for (size_t k = 0; k < t->n_pref; k++) {
        size_t i = (t->pref_at + k) % t->n_pref;
        if (t->hint[i] == addr) {
            t->pref_at = i + 1;
            return t->pref + i * (pre + L->frame.size) + pre;
        }
    }
    return NULL;
}

/* The region a frame read on its own takes: its header and the PRE bytes before it. */
struct proc_iov frames_frame_region(const struct py_layout *L, uint64_t addr, size_t pre,
                                    uint8_t *buf)
{
    /* An address too low for the bytes before it is read from its header on (the walk then
     * finds it unreadable or not a frame, as without them). */
    if (addr < pre) {
        memset(buf, 0, pre);
        return (struct proc_iov){addr, buf + pre, L->frame.size};
    }
    return (struct proc_iov){addr - pre, buf, pre + L->frame.size};
}

static bool chunk_holds(const struct frames_chunk *c, uint64_t addr)
{
    return addr >= c->addr && addr - c->addr < c->len;
}

/* The common case of a sample in one tight loop: frames that lie in the chunk of the frame
 * before, taken as take_frame() takes them (a sample keeps no links; frames in chunks bring no
 * bytes before them). Stops, leaving the frame to advance(), at anything else: the end of the
 * chain, a frame outside that chunk, one owned by no one, the frame limit. The layout's offsets
 * and the walk's position are held in locals and written back once: stores through T could
 * alias them, so the compiler would load each again for every frame. */
static void in_chunk_run(const struct py_layout *L, const struct frames_fast *fp,
                         struct frames_thread *t)
{
    if (t->last_chunk >= t->n_chunks) {
        return;
    }
    const struct frames_chunk *c = &t->chunks[t->last_chunk];
    const uint8_t *data = c->data;
    const uint64_t base = c->addr;
    const uint64_t len = c->len;
    const size_t size = fp->size;
    if (len < size) {
        return;
    }
    /* A frame lies in the chunk when its offset is at most LAST. */
    const uint64_t last = len - size;
    const size_t off_owner = fp->owner;
    const size_t off_previous = fp->previous;
    const size_t off_executable = fp->executable;
    const size_t off_instr = fp->instr_ptr;
    const uint64_t tag_mask = fp->tag_mask;
    const int max_owner_value = fp->max_owner;
    const int generator = L->frame.owner_generator;
    const uint64_t python_owners = fp->python_owners;
    const uint64_t base_frame = t->base_frame;
    uint64_t addr = t->pending;
    size_t steps = t->steps;
    int last_owner = t->last_owner;
    struct frames_raw *frames = t->frames;
    size_t n_frames = t->n_frames;
    size_t cap = t->cap;
    const size_t n_kept = t->n_kept;
    size_t n_same = t->n_same;
    while (steps < LIMIT_FRAMES) {
        uint64_t at = addr - base;
        if (addr < base || at > last || addr == base_frame) {
            break;
        }
        const uint8_t *h = data + at;
        int owner = h[off_owner];
        if (owner > max_owner_value) {
            break;
        }
        uint64_t previous;
        uint64_t code;
        uint64_t instr;
        memcpy(&previous, h + off_previous, 8);
        memcpy(&code, h + off_executable, 8);
        memcpy(&instr, h + off_instr, 8);
        code &= ~tag_mask;
        steps++;
        last_owner = owner;
        if (((python_owners >> owner) & 1) != 0 && code != 0) {
            if (n_frames == cap) {
                t->n_frames = n_frames;
                t->n_same = n_same;
                if (!room_for_one((void **)&t->frames, &t->cap, n_frames, sizeof *t->frames)) {
                    fail(t, "out of memory for frame", addr);
                    break;
                }
                frames = t->frames;
                cap = t->cap;
            }
            struct frames_raw *f = &frames[n_frames];
            bool gen = owner == generator;
            if (n_frames < n_kept && n_same == n_frames && f->addr == addr &&
                f->code_addr == code && f->instr_ptr == instr && f->generator == gen &&
                !f->exc_known) {
                n_same++; /* as the last walk left it, code and offset included */
            } else {
                f->addr = addr;
                f->code_addr = code;
                f->instr_ptr = instr;
                f->code = NULL;
                f->generator = gen;
                f->exc_known = false;
                f->exc_value = 0;
                f->exc_previous = 0;
            }
            f->native_below = false;
            n_frames++;
        } else if (((python_owners >> owner) & 1) == 0 && n_frames > 0 && previous != 0) {
            frames[n_frames - 1].native_below = true; /* a shim: C called in (--native) */
        }
        if (previous >= addr && previous - base < len) {
            t->pending = previous;
            t->steps = steps;
            t->last_owner = last_owner;
            t->n_frames = n_frames;
            t->n_same = n_same;
            torn(t, "caller above its callee in the data stack", addr);
            return;
        }
        addr = previous;
    }
    t->pending = addr;
    t->steps = steps;
    t->last_owner = last_owner;
    t->n_frames = n_frames;
    t->n_same = n_same;
}

/* Follows T's chain through copied chunks until it ends or needs a read. */
static void advance(struct proc *p, const struct py_layout *L, const struct frames_fast *fp,
                    struct frames_thread *t)
{
    while (!t->done) {
        if (fp->ok && !t->keep_links) {
            in_chunk_run(L, fp, t);
            if (t->done) {
                return;
            }
        }
        if (t->pending == t->base_frame && t->base_frame != 0) {
            t->done = true;
            return;
        }
        if (t->pending == 0) {
            t->done = true;
            /* A whole chain ends at an entry frame the C stack or the interpreter owns (3.12+;
             * 3.15 also at the thread's base frame): one that stops short was read while it
             * changed (a frame being pushed has no caller yet). */
            bool entry_known = L->frame.owner_cstack >= 0 || L->frame.owner_interpreter >= 0;
            if (t->steps > 0 && entry_known && t->last_owner != L->frame.owner_cstack &&
                t->last_owner != L->frame.owner_interpreter) {
                torn(t, "chain ends before the thread's first frame", t->current_frame);
            }
            return;
        }
        if (t->steps++ == LIMIT_FRAMES) {
            t->truncated = true;
            t->done = true;
            return;
        }
        const uint8_t *h = in_chunks(p, L, t, t->pending);
        size_t prefix = 0;
        if (h == NULL && (h = prefetched(L, fp->prefix, t, t->pending)) != NULL) {
            note_read(t, t->pending);
            prefix = fp->prefix;
        }
        if (h == NULL) {
            t->steps--;
            return;
        }
        uint64_t addr = t->pending;
        take_frame(L, fp, t, h, prefix);
        if (!t->done && t->pending >= addr && t->last_chunk < t->n_chunks &&
            chunk_holds(&t->chunks[t->last_chunk], addr) &&
            chunk_holds(&t->chunks[t->last_chunk], t->pending)) {
            torn(t, "caller above its callee in the data stack", addr);
        }
    }
}

static void walk(struct proc *p, const struct py_layout *L, struct frames_thread *const *ts,
                 size_t n, bool now)
{
    struct proc_iov iov[PROC_IOV_MAX];
    struct frames_thread *owner[PROC_IOV_MAX];
    size_t waiting = 0;
    size_t pre = frames_prefix(L);
    struct frames_fast fp = fast_layout(L);
    for (size_t i = 0; i < n; i++) {
        ts[i]->now = now;
    }
    frames_read_starts(p, L, ts, n);
    for (size_t i = 0; i < n; i++) {
        ts[i]->pending = ts[i]->current_frame;
        advance(p, L, &fp, ts[i]);
        waiting += !ts[i]->done;
    }
    /* Each thread still walking has a header buffer of its own (kept for the next walk);
     * none is needed when every chain ended inside the copied chunks. */
    for (size_t i = 0; waiting > 0 && i < n; i++) {
        if (!ts[i]->done && ts[i]->hdr == NULL &&
            (ts[i]->hdr = malloc(LAYOUT_FRAME_PREFIX_MAX + LAYOUT_FRAME_HEADER_MAX)) == NULL) {
            fail(ts[i], "out of memory reading frame", ts[i]->pending);
        }
    }
    /* Each round reads, for every unfinished thread, the one frame it waits for (at most
     * PROC_IOV_MAX threads a round). Every round moves each unfinished thread at least one
     * frame, so LIMIT_FRAMES bounds the rounds. */
    for (size_t round = 0; waiting > 0 && round <= LIMIT_FRAMES; round++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!ts[i]->done && k < PROC_IOV_MAX) {
                iov[k] = frames_frame_region(L, ts[i]->pending, pre, ts[i]->hdr);
                owner[k++] = ts[i];
            }
        }
        if (k == 0) {
            break;
        }
        bool batch = frames_read_regions(p, now, iov, k) == 0;
        for (size_t j = 0; j < k; j++) {
            struct frames_thread *t = owner[j];
            if (!batch && frames_read_one(p, now, iov[j].addr, iov[j].dst, iov[j].len) < 0) {
                fail(t, "unreadable frame", t->pending);
                continue;
            }
            t->steps++;
            note_read(t, t->pending);
            take_frame(L, &fp, t, t->hdr + pre, pre);
            advance(p, L, &fp, t);
        }
    }
    for (size_t i = 0; i < n; i++) {
        frames_keep_guess(ts[i]);
    }
}

bool frames_same_as_kept(const struct frames_thread *t)
{
    return t->done && !t->failed && !t->torn && !t->truncated && t->n_kept > 0 &&
           t->n_frames == t->n_kept && t->n_same == t->n_frames;
}

void frames_walk(struct proc *p, const struct py_layout *L, struct frames_thread *const *ts,
                 size_t n)
{
    walk(p, L, ts, n, false);
}

void frames_walk_now(struct proc *p, const struct py_layout *L, struct frames_thread *const *ts,
                     size_t n)
{
    walk(p, L, ts, n, true);
}
