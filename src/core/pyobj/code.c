/* code: code objects read from the target, cached by address, and their source positions. */
#include "config.h"

#include "core/pyobj/code.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/pyobj/pyobj.h"
#include "core/target/proc.h"

/* Bytecode larger than this many code units is not plausible. */
enum { CODE_MAX_UNITS = 1 << 24 };

/* The slot table starts this small and doubles when half full, up to LIMIT_CODE_CACHE * 2 slots:
 * a page of it costs memory once read or written (a full 1 MiB table, cleared and scanned, was a
 * fifth of a dump's peak RSS), and most targets run a few hundred code objects. */
enum { CODE_SLOTS_MIN = 256, CODE_SLOTS_MAX = LIMIT_CODE_CACHE * 2 };

struct code_cache {
    struct code_info **slots; /* open addressing, CODE_SLOTS_MIN..CODE_SLOTS_MAX slots */
    size_t n_slots;
    size_t used;
    uint64_t generation;
    uint64_t version_below;
    uint64_t epoch;
    uint64_t contradicted;
    uint64_t hits;
    uint64_t misses;
    uint64_t next_serial;
    uint64_t round;
    uint64_t changes; /* entries freed or replaced (code_cache_changes()) */
    /* code_cache_prefetch(): first bytes of the strings and tables of the code objects about
     * to be read, sorted by address, PREFETCH_WINDOW bytes each in PRE_BUF. */
    struct prefetched *pre;
    uint8_t *pre_buf;
    size_t n_pre;
    size_t cap_pre;
};

struct prefetched {
    uint64_t addr;
    size_t at;
};

enum {
    PREFETCH_WINDOW = 256, /* bytes read ahead of a name, file name or line table */
    PREFETCH_FIELDS = 4,   /* of each code object: those three and the qualified name */
};

struct code_cache *code_cache_new(struct pt_error *err)
{
    struct code_cache *c = calloc(1, sizeof *c);
    if (c != NULL) {
        c->n_slots = CODE_SLOTS_MIN;
        c->slots = calloc(c->n_slots, sizeof *c->slots);
    }
    if (c == NULL || c->slots == NULL) {
        free(c);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    c->generation = UINT64_MAX;
    c->next_serial = 1;
    c->round = 1;
    return c;
}

static void info_free(struct code_info *ci)
{
    if (ci != NULL) {
        free(ci->filename);
        free(ci->name);
        free(ci->qualname);
        free(ci->linetable);
        free(ci);
    }
}

/* Stops after the last entry: an empty cache (the first generation) looks at no slot. */
static void cache_clear(struct code_cache *c)
{
    c->changes++;
    for (size_t i = 0; i < c->n_slots && c->used > 0; i++) {
        if (c->slots[i] != NULL) {
            info_free(c->slots[i]);
            c->slots[i] = NULL;
            c->used--;
        }
    }
    c->used = 0;
}

void code_cache_free(struct code_cache *c)
{
    if (c != NULL) {
        cache_clear(c);
        free(c->slots);
        free(c->pre);
        free(c->pre_buf);
        free(c);
    }
}

void code_cache_set_generation(struct code_cache *c, uint64_t generation, uint64_t version_below)
{
    c->generation = generation;
    c->version_below = version_below;
}

void code_cache_distrust(struct code_cache *c)
{
    c->epoch++;
}

static size_t slot_of(const struct code_cache *c, uint64_t addr)
{
    uint64_t h = (addr >> 4) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) % c->n_slots;
}

struct code_cache_counters code_cache_get_counters(const struct code_cache *c)
{
    return (struct code_cache_counters){c->hits, c->misses, c->used, c->contradicted};
}

void code_cache_begin(struct code_cache *c)
{
    c->round++;
}

/* Doubles the slot table, which the caller found half full, so that probes stay short; at
 * CODE_SLOTS_MAX, LIMIT_CODE_CACHE alone keeps it at most half full. */
static int grow_slots(struct code_cache *c, struct pt_error *err)
{
    if (c->n_slots >= CODE_SLOTS_MAX) {
        return 0;
    }
    size_t n = c->n_slots * 2;
    struct code_info **slots = calloc(n, sizeof *slots);
    if (slots == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory for %zu code cache slots", n);
    }
    struct code_info **old = c->slots;
    size_t old_n = c->n_slots;
    c->slots = slots;
    c->n_slots = n;
    for (size_t i = 0; i < old_n; i++) {
        if (old[i] != NULL) {
            size_t k = slot_of(c, old[i]->addr);
            while (slots[k] != NULL) {
                k = (k + 1) % n;
            }
            slots[k] = old[i];
        }
    }
    free(old);
    return 0;
}

/* Open addressing needs the slots after a removed entry re-placed (no tombstones). */
static void remove_slot(struct code_cache *c, size_t i)
{
    c->changes++;
    info_free(c->slots[i]);
    c->slots[i] = NULL;
    c->used--;
    for (size_t j = (i + 1) % c->n_slots; c->slots[j] != NULL; j = (j + 1) % c->n_slots) {
        struct code_info *moved = c->slots[j];
        c->slots[j] = NULL;
        size_t k = slot_of(c, moved->addr);
        while (c->slots[k] != NULL) {
            k = (k + 1) % c->n_slots;
        }
        c->slots[k] = moved;
    }
}

/* Drops the entries the current round has not used; false when every entry is in use. */
static bool make_room(struct code_cache *c)
{
    size_t before = c->used;
    for (size_t i = 0; i < c->n_slots; i++) {
        /* A removal may move a later entry into slot I: look at it again. */
        while (c->slots[i] != NULL && c->slots[i]->used_in != c->round) {
            remove_slot(c, i);
        }
    }
    return c->used < before;
}

/* The fields an entry is built from, in enum code_key order. */
static int read_key(const struct py_layout *L, const uint8_t *raw, uint64_t key[CODE_KEY_N])
{
    key[CODE_KEY_QUALNAME] = 0;
    key[CODE_KEY_FIRSTTRACEABLE] = UINT64_MAX;
    key[CODE_KEY_VERSION] = 0;
    if (!layout_read_u64(raw, L->code.size, L->object.ob_type, &key[CODE_KEY_TYPE]) ||
        !layout_read_u64(raw, L->code.size, L->code.filename, &key[CODE_KEY_FILENAME]) ||
        !layout_read_u64(raw, L->code.size, L->code.name, &key[CODE_KEY_NAME]) ||
        !layout_read_u64(raw, L->code.size, L->code.linetable, &key[CODE_KEY_LINETABLE]) ||
        !layout_read_uint(raw, L->code.size, L->code.firstlineno, 4,
                          &key[CODE_KEY_FIRSTLINENO])) {
        return -1;
    }
    if (layout_has(L->code.qualname) &&
        !layout_read_u64(raw, L->code.size, L->code.qualname, &key[CODE_KEY_QUALNAME])) {
        return -1;
    }
    if (layout_has(L->code.firsttraceable) &&
        !layout_read_uint(raw, L->code.size, L->code.firsttraceable, 4,
                          &key[CODE_KEY_FIRSTTRACEABLE])) {
        return -1;
    }
    if (layout_has(L->code.version) &&
        !layout_read_uint(raw, L->code.size, L->code.version, 4, &key[CODE_KEY_VERSION])) {
        return -1;
    }
    return 0;
}

static int cmp_prefetched(const void *a, const void *b)
{
    const struct prefetched *x = a;
    const struct prefetched *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The bytes code_cache_prefetch() read at ADDR, PREFETCH_WINDOW of them, or NULL. */
static const uint8_t *prefetched_at(const struct code_cache *c, uint64_t addr)
{
    struct prefetched key = {addr, 0};
    const struct prefetched *hit =
        c->n_pre > 0 ? bsearch(&key, c->pre, c->n_pre, sizeof *c->pre, cmp_prefetched) : NULL;
    return hit != NULL ? c->pre_buf + hit->at : NULL;
}

static int read_string(const struct code_cache *c, struct proc *p, const struct py_layout *L,
                       uint64_t addr, char **out, size_t *len, struct pt_error *err)
{
    char buf[LIMIT_STRING];
    const uint8_t *pre = prefetched_at(c, addr);
    long n = pre != NULL ? pyobj_str_from_buf(L, pre, PREFETCH_WINDOW, buf, sizeof buf, err)
                         : PYOBJ_STR_MORE;
    if (n == PYOBJ_STR_MORE) {
        n = pyobj_read_str(p, L, addr, buf, sizeof buf, err);
    } else if (n < 0) {
        pt_error_prefix(err, "str at 0x%" PRIx64, addr);
    }
    if (n < 0) {
        return -1;
    }
    *out = malloc((size_t)n + 1);
    if (*out == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    memcpy(*out, buf, (size_t)n);
    (*out)[n] = '\0';
    *len = (size_t)n;
    return 0;
}

/* The line table at ADDR, from what code_cache_prefetch() read when it holds it all. */
static int read_linetable(const struct code_cache *c, struct proc *p, const struct py_layout *L,
                          uint64_t addr, struct code_info *ci, struct pt_error *err)
{
    const uint8_t *pre = prefetched_at(c, addr);
    int rc = pre != NULL ? pyobj_bytes_from_buf(L, pre, PREFETCH_WINDOW, addr, LIMIT_LINETABLE,
                                                &ci->linetable, &ci->linetable_len, err)
                         : PYOBJ_BYTES_MORE;
    if (rc == PYOBJ_BYTES_MORE) {
        rc = pyobj_read_bytes(p, L, addr, LIMIT_LINETABLE, &ci->linetable, &ci->linetable_len,
                              err);
    }
    return rc;
}

static struct code_info *info_read(const struct code_cache *c, struct proc *p,
                                   const struct py_layout *L, uint64_t addr,
                                   const uint64_t key[CODE_KEY_N], struct pt_error *err)
{
    struct code_info *ci = calloc(1, sizeof *ci);
    if (ci == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    ci->addr = addr;
    memcpy(ci->key, key, sizeof ci->key);
    ci->firstlineno = (int)(int32_t)key[CODE_KEY_FIRSTLINENO];
    /* An int counting code units; a negative or absurd one is taken as unknown. */
    ci->firsttraceable =
        key[CODE_KEY_FIRSTTRACEABLE] < CODE_MAX_UNITS ? (int)key[CODE_KEY_FIRSTTRACEABLE] : -1;
    /* 3.11 added co_qualname (Include/cpython/code.h); before it, co_name stands in. */
    uint64_t qualname = layout_has(L->code.qualname) ? key[CODE_KEY_QUALNAME]
                                                     : key[CODE_KEY_NAME];
    if (read_string(c, p, L, key[CODE_KEY_FILENAME], &ci->filename, &ci->filename_len, err) < 0 ||
        read_string(c, p, L, key[CODE_KEY_NAME], &ci->name, &ci->name_len, err) < 0 ||
        read_string(c, p, L, qualname, &ci->qualname, &ci->qualname_len, err) < 0 ||
        read_linetable(c, p, L, key[CODE_KEY_LINETABLE], ci, err) < 0) {
        pt_error_prefix(err, "code object at 0x%" PRIx64, addr);
        info_free(ci);
        return NULL;
    }
    return ci;
}

static size_t find_slot(const struct code_cache *c, uint64_t addr)
{
    size_t i = slot_of(c, addr);
    size_t probes = 0;
    while (c->slots[i] != NULL && c->slots[i]->addr != addr && probes++ < c->n_slots) {
        i = (i + 1) % c->n_slots;
    }
    return i;
}

struct code_info *code_cache_find(const struct code_cache *c, uint64_t addr)
{
    struct code_info *ci = c->slots[find_slot(c, addr)];
    if (ci == NULL || ci->addr != addr || ci->checked_in != c->round) {
        return NULL;
    }
    ci->used_in = c->round;
    return ci;
}

uint64_t code_cache_changes(const struct code_cache *c)
{
    return c->changes;
}

bool code_cache_renew(const struct code_cache *c, struct code_info *ci)
{
    if (ci->checked_in != c->round) {
        return false;
    }
    ci->used_in = c->round;
    return true;
}

/* Whether the current generation vouches for entry CI. */
static bool vouched(const struct code_cache *c, const struct code_info *ci)
{
    if (c->generation == CODE_GENERATION_NONE || ci->checked_gen != c->generation ||
        ci->checked_epoch != c->epoch) {
        return false;
    }
    /* A counter of co_versions vouches only for what it numbered before its value: a code
     * object of co_version 0 was made once it had worn out, or never by it (a static one). */
    uint64_t version = ci->key[CODE_KEY_VERSION];
    return c->version_below == 0 || (version != 0 && version < c->version_below);
}

struct code_info *code_cache_trust(struct code_cache *c, uint64_t addr)
{
    struct code_info *ci = c->slots[find_slot(c, addr)];
    if (ci == NULL || ci->addr != addr || !vouched(c, ci)) {
        return NULL;
    }
    ci->checked_in = c->round;
    ci->used_in = c->round;
    return ci;
}

/* The entry at slot I (or none) is not what the object at its address holds now, or that
 * object could not be read: it is served and trusted no more until it is read again. */
static void unchecked(struct code_cache *c, size_t i, uint64_t addr)
{
    struct code_info *old = c->slots[i];
    if (old != NULL && old->addr == addr) {
        old->checked_in = 0;
        old->checked_gen = CODE_GENERATION_NONE;
    }
}

/* The entry passed its check in this round, under the current generation. */
static struct code_info *checked(struct code_cache *c, struct code_info *ci)
{
    ci->used_in = c->round;
    ci->checked_in = c->round;
    ci->checked_gen = c->generation;
    ci->checked_epoch = c->epoch;
    return ci;
}

struct code_info *code_cache_get(struct code_cache *c, struct proc *p,
                                 const struct py_layout *L, uint64_t code_type, uint64_t addr,
                                 const uint8_t *raw, struct pt_error *err)
{
    uint64_t key[CODE_KEY_N];
    size_t i = find_slot(c, addr);
    struct code_info *old = c->slots[i];
    if (read_key(L, raw, key) < 0) {
        unchecked(c, i, addr);
        pt_error_set(err, PT_E_BADLAYOUT, 0, "code object at 0x%" PRIx64 " unreadable", addr);
        return NULL;
    }
    if (code_type != 0 && key[CODE_KEY_TYPE] != code_type) {
        unchecked(c, i, addr);
        pt_error_set(err, PT_E_BADLAYOUT, 0, "object at 0x%" PRIx64 " is not a code object",
                     addr);
        return NULL;
    }
    if (old != NULL && old->addr == addr && memcmp(old->key, key, sizeof key) == 0) {
        c->hits++;
        return checked(c, old);
    }
    /* Another code object where the generation said the old one still was. */
    if (old != NULL && old->addr == addr && vouched(c, old)) {
        c->contradicted++;
    }
    unchecked(c, i, addr);
    if (old == NULL && c->used >= LIMIT_CODE_CACHE) {
        if (!make_room(c)) {
            pt_error_set(err, PT_E_LIMIT, 0, "more than %d code objects in one sample",
                         LIMIT_CODE_CACHE);
            return NULL;
        }
        i = find_slot(c, addr);
    }
    if (old == NULL && c->used + 1 > c->n_slots / 2) {
        if (grow_slots(c, err) < 0) {
            return NULL;
        }
        i = find_slot(c, addr);
    }
    struct code_info *ci = info_read(c, p, L, addr, key, err);
    if (ci == NULL) {
        return NULL;
    }
    uint64_t units = 0;
    if (layout_has(L->code.ob_size) &&
        layout_read_u64(raw, L->code.size, L->code.ob_size, &units) && units <= CODE_MAX_UNITS) {
        ci->n_units = units;
    }
    c->misses++;
    ci->serial = c->next_serial++;
    if (old == NULL || old->addr != addr) {
        c->used++;
    } else {
        info_free(old);
        c->changes++;
    }
    c->slots[i] = ci;
    return checked(c, ci);
}

static int locate(const struct code_info *ci, const struct py_layout *L, uint64_t instr,
                  struct linetable_loc *out, struct pt_error *err);
static int locate_offset(const struct code_info *ci, const struct py_layout *L, uint64_t offset,
                         struct linetable_loc *out, struct pt_error *err);

bool code_instr_offset(const struct code_info *ci, const struct py_layout *L, uint64_t instr,
                        uint64_t *offset)
{
    if (L->frames == FRAMES_OBJECTS) {
        int32_t lasti = (int32_t)(uint32_t)instr;
        if (lasti < 0) {
            return false;
        }
        *offset = L->linetable == LINETABLE_V310 ? (uint64_t)lasti * 2 : (uint64_t)lasti;
        return true;
    }
    uint64_t start = ci->addr + L->code.code_adaptive;
    /* 3.11 and 3.12 point at the previous instruction: one unit before the start means the
     * frame has not run yet (Include/internal/pycore_frame.h, _PyFrame_Initialize). */
    if (instr + 2 == start) {
        return false;
    }
    *offset = instr - start;
    return instr >= start;
}

bool code_frame_incomplete(const struct code_info *ci, const struct py_layout *L, uint64_t instr,
                           bool generator)
{
    /* 3.11 and 3.12 compare prev_instr, 3.13+ instr_ptr, with the same bound: the raw field
     * serves both. Frame objects (before 3.11) are never incomplete. */
    if (generator || ci->firsttraceable < 0 || L->frames != FRAMES_INTERPRETER) {
        return false;
    }
    uint64_t start = ci->addr + L->code.code_adaptive;
    return instr < start + 2 * (uint64_t)ci->firsttraceable;
}

bool code_instr_inside(const struct code_info *ci, const struct py_layout *L, uint64_t instr)
{
    uint64_t offset = 0;
    if (ci->n_units == 0 || L->frames == FRAMES_OBJECTS) {
        return true;
    }
    if (!code_instr_offset(ci, L, instr, &offset)) {
        return instr + 2 == ci->addr + L->code.code_adaptive;
    }
    return offset <= ci->n_units * 2;
}

int code_location(struct code_info *ci, const struct py_layout *L, uint64_t instr,
                  struct linetable_loc *out, struct pt_error *err)
{
    if (ci->memo_valid && ci->memo_instr == instr) {
        *out = ci->memo_loc;
        return 0;
    }
    int rc = locate(ci, L, instr, out, err);
    if (rc == 0) {
        ci->memo_instr = instr;
        ci->memo_loc = *out;
        ci->memo_valid = true;
    }
    return rc;
}

static int locate(const struct code_info *ci, const struct py_layout *L, uint64_t instr,
                  struct linetable_loc *out, struct pt_error *err)
{
    uint64_t offset = 0;
    if (!code_instr_offset(ci, L, instr, &offset)) {
        if (L->frames == FRAMES_OBJECTS || instr + 2 == ci->addr + L->code.code_adaptive) {
            *out = (struct linetable_loc){ci->firstlineno, -1, -1, -1};
            return 0;
        }
    }
    if (offset >= (uint64_t)CODE_MAX_UNITS * 2 || (L->frames != FRAMES_OBJECTS &&
                                                   instr < ci->addr + L->code.code_adaptive)) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "instruction 0x%" PRIx64 " outside code at 0x%" PRIx64, instr,
                            ci->addr);
    }
    return locate_offset(ci, L, offset, out, err);
}

int code_offset_line(const struct code_info *ci, const struct py_layout *L, uint64_t offset)
{
    struct linetable_loc loc;
    if (offset >= (uint64_t)CODE_MAX_UNITS * 2 || locate_offset(ci, L, offset, &loc, NULL) < 0) {
        return -1;
    }
    return loc.line;
}

static int locate_offset(const struct code_info *ci, const struct py_layout *L, uint64_t offset,
                         struct linetable_loc *out, struct pt_error *err)
{
    switch (L->linetable) {
    case LINETABLE_LOCATIONS:
        return linetable_locations_find(ci->linetable, ci->linetable_len, ci->firstlineno,
                                        (uint32_t)(offset / 2), out, err);
    case LINETABLE_V310:
        return linetable_v310_find(ci->linetable, ci->linetable_len, ci->firstlineno,
                                   (uint32_t)offset, out, err);
    case LINETABLE_LNOTAB:
        return linetable_lnotab_find(ci->linetable, ci->linetable_len, ci->firstlineno,
                                     (uint32_t)offset, out, err);
    case LINETABLE_LNOTAB_UNSIGNED:
        return linetable_lnotab_unsigned_find(ci->linetable, ci->linetable_len, ci->firstlineno,
                                              (uint32_t)offset, out, err);
    }
    return pt_error_set(err, PT_E_BADLAYOUT, 0, "unknown line table format");
}

void code_cache_prefetch(struct code_cache *c, struct proc *p, const struct py_layout *L,
                         uint64_t code_type, const uint64_t *addrs, const uint8_t *raws, size_t n)
{
    c->n_pre = 0;
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key[CODE_KEY_N];
        const uint8_t *raw = raws + i * L->code.size;
        if (read_key(L, raw, key) < 0 || (code_type != 0 && key[CODE_KEY_TYPE] != code_type)) {
            continue;
        }
        const struct code_info *old = c->slots[find_slot(c, addrs[i])];
        if (old != NULL && old->addr == addrs[i] && memcmp(old->key, key, sizeof key) == 0) {
            continue; /* a hit: nothing to read */
        }
        const uint64_t fields[PREFETCH_FIELDS] = {key[CODE_KEY_FILENAME], key[CODE_KEY_NAME],
                                                  key[CODE_KEY_QUALNAME],
                                                  key[CODE_KEY_LINETABLE]};
        if (want + PREFETCH_FIELDS > c->cap_pre) {
            size_t ncap = c->cap_pre ? 2 * c->cap_pre : 64;
            ncap = ncap < want + PREFETCH_FIELDS ? want + PREFETCH_FIELDS : ncap;
            struct prefetched *fresh = realloc(c->pre, ncap * sizeof *fresh);
            if (fresh == NULL) {
                return;
            }
            c->pre = fresh;
            c->cap_pre = ncap;
        }
        for (size_t f = 0; f < PREFETCH_FIELDS; f++) {
            if (fields[f] != 0) {
                c->pre[want++] = (struct prefetched){fields[f], 0};
            }
        }
    }
    if (want == 0) {
        return;
    }
    /* Shared strings (a module's file name) once; as many as one call takes. */
    qsort(c->pre, want, sizeof *c->pre, cmp_prefetched);
    size_t u = 0;
    for (size_t i = 0; i < want && u < PROC_IOV_MAX; i++) {
        if (u == 0 || c->pre[u - 1].addr != c->pre[i].addr) {
            c->pre[u++] = c->pre[i];
        }
    }
    uint8_t *buf = realloc(c->pre_buf, u * PREFETCH_WINDOW);
    struct proc_iov *iov = malloc(u * sizeof *iov);
    if (buf == NULL || iov == NULL) {
        free(iov);
        return;
    }
    c->pre_buf = buf;
    for (size_t i = 0; i < u; i++) {
        c->pre[i].at = i * PREFETCH_WINDOW;
        iov[i] = (struct proc_iov){c->pre[i].addr, buf + i * PREFETCH_WINDOW, PREFETCH_WINDOW};
    }
    c->n_pre = proc_read_many(p, iov, u, NULL) == 0 ? u : 0;
    free(iov);
}

void code_cache_prefetch_end(struct code_cache *c)
{
    c->n_pre = 0;
}
