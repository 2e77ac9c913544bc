/* asyncio_common: what every stage of the asyncio pipeline shares: per-snapshot strings of code
 * objects, a frame from a code object and instruction, task names, batched reads that fall back
 * to one by one, and a growing array of tasks. */
#include "config.h"

#include "core/asyncio/asyncio_common.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pyobj/code.h"
#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/pyobj/pyint.h"
#include "core/pyobj/pyobj.h"
#include "core/target/runtime.h"
#include "core/model/snapshot_arena.h"

/* The strings table starts at STRS_SLOTS_MIN slots and doubles when half full, up to
 * STRS_SLOTS: the largest one, cleared every snapshot, kept 256 KiB resident even for a target
 * with a handful of code objects in its tasks. */
enum {
    NAME_MAX_BYTES = 256, /* of a task name kept */
    STRS_SLOTS_MIN = 64,
    STRS_SLOTS = 4096,
};

/* Snapshot strings per code object, so that 10 000 tasks in one function share them. */
struct code_strs {
    uint64_t addr;
    struct snap_str function;
    struct snap_str name;
    struct snap_str file;
    int first_line;
};

struct asyncio_common {
    struct proc *proc;
    const struct runtime *rt;
    const struct py_layout *L;
    struct code_cache *codes;
    struct snapshot *s;
    struct code_strs *strs; /* open addressing, n_strs slots */
    size_t n_strs;
    size_t used_strs;
    uint8_t *code_buf; /* a code object */
    uint64_t last_type;
    uint64_t last_type_flags;
    bool int_names;
    bool warned_int_name; /* this snapshot */
};

struct asyncio_common *asyncio_common_new(struct proc *p, const struct runtime *rt,
                                          struct code_cache *codes, bool int_names,
                                          struct pt_error *err)
{
    struct asyncio_common *c = calloc(1, sizeof *c);
    if (c == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    c->proc = p;
    c->rt = rt;
    c->L = &rt->layout;
    c->codes = codes;
    c->int_names = int_names;
    return c;
}

void asyncio_common_free(struct asyncio_common *c)
{
    if (c != NULL) {
        free(c->strs);
        free(c->code_buf);
        free(c);
    }
}

bool asyncio_common_begin(struct asyncio_common *c, struct snapshot *s)
{
    if (c->strs == NULL && (c->strs = calloc(STRS_SLOTS_MIN, sizeof *c->strs)) != NULL) {
        c->n_strs = STRS_SLOTS_MIN;
    }
    if (c->code_buf == NULL) {
        c->code_buf = malloc(c->L->code.size);
    }
    if (c->strs == NULL || c->code_buf == NULL) {
        return false;
    }
    if (c->used_strs > 0) {
        memset(c->strs, 0, c->n_strs * sizeof *c->strs);
        c->used_strs = 0;
    }
    c->last_type = 0;
    c->warned_int_name = false;
    c->s = s;
    return true;
}

/* The code object at CODE_ADDR through the code cache, its raw struct read again. */
static struct code_info *code_get(struct asyncio_common *c, uint64_t code_addr)
{
    struct pt_error e = {0};
    if (proc_read_bytes(c->proc, code_addr, c->code_buf, c->L->code.size, &e) < 0) {
        return NULL;
    }
    return code_cache_get(c->codes, c->proc, c->L, c->rt->code_type_addr, code_addr, c->code_buf,
                          &e);
}

static size_t strs_slot(uint64_t code_addr, size_t n_slots)
{
    return (size_t)((code_addr >> 4) * 0x9e3779b97f4a7c15ULL) % n_slots;
}

/* Doubles the strings table once half full. Without the memory for it, the table goes on
 * filling up, as the largest one does. */
static void strs_grow(struct asyncio_common *c)
{
    if (c->used_strs + 1 <= c->n_strs / 2 || c->n_strs >= STRS_SLOTS) {
        return;
    }
    size_t n = c->n_strs * 2;
    struct code_strs *t = calloc(n, sizeof *t);
    if (t == NULL) {
        return;
    }
    for (size_t i = 0; i < c->n_strs; i++) {
        if (c->strs[i].addr != 0) {
            size_t h = strs_slot(c->strs[i].addr, n);
            while (t[h].addr != 0) {
                h = (h + 1) % n;
            }
            t[h] = c->strs[i];
        }
    }
    free(c->strs);
    c->strs = t;
    c->n_strs = n;
}

/* The snapshot strings of code object CODE_ADDR, read through the code cache. */
static const struct code_strs *code_strings(struct asyncio_common *c, uint64_t code_addr,
                                            struct code_info **ci_out)
{
    strs_grow(c);
    size_t h = strs_slot(code_addr, c->n_strs);
    struct code_info *ci = NULL;
    for (size_t i = 0; i < c->n_strs; i++, h = (h + 1) % c->n_strs) {
        struct code_strs *cs = &c->strs[h];
        if (cs->addr == code_addr) {
            /* The code cache may have let it go: then decode it again, keep the strings. */
            ci = code_cache_find(c->codes, code_addr);
            if (ci == NULL && (ci = code_get(c, code_addr)) == NULL) {
                return NULL;
            }
            *ci_out = ci;
            return cs;
        }
        if (cs->addr != 0) {
            continue;
        }
        if ((ci = code_get(c, code_addr)) == NULL) {
            return NULL;
        }
        cs->addr = code_addr;
        c->used_strs++;
        cs->function = snapshot_strdup(c->s, ci->qualname, ci->qualname_len);
        cs->name = snapshot_strdup(c->s, ci->name, ci->name_len);
        cs->file = snapshot_strdup(c->s, ci->filename, ci->filename_len);
        cs->first_line = ci->firstlineno;
        *ci_out = ci;
        return cs;
    }
    /* More distinct code objects than the table holds: the rest stay unknown. */
    return NULL;
}

void asyncio_common_frame(struct asyncio_common *c, uint64_t code_addr, uint64_t instr,
                          struct snap_frame *f)
{
    memset(f, 0, sizeof *f);
    f->kind = SNAP_FRAME_PYTHON;
    f->line = f->end_line = f->col = f->end_col = f->first_line = -1;
    struct code_info *ci = NULL;
    const struct code_strs *cs = code_addr != 0 ? code_strings(c, code_addr, &ci) : NULL;
    if (cs == NULL) {
        return;
    }
    f->function = cs->function;
    f->name = cs->name;
    f->file = cs->file;
    f->first_line = cs->first_line;
    struct linetable_loc loc = {-1, -1, -1, -1};
    struct pt_error e = {0};
    if (code_location(ci, c->L, instr, &loc, &e) == 0) {
        f->line = loc.line;
        f->end_line = loc.end_line;
        f->col = loc.col;
        f->end_col = loc.end_col;
    }
}

uint64_t asyncio_common_type_flags(struct asyncio_common *c, uint64_t type_addr)
{
    uint64_t flags;
    struct pt_error e = {0};
    if (type_addr == c->last_type) {
        return c->last_type_flags;
    }
    if (!layout_has(c->L->type.flags) ||
        proc_read_bytes(c->proc, type_addr + c->L->type.flags, &flags, sizeof flags, &e) < 0) {
        return 0;
    }
    c->last_type = type_addr;
    c->last_type_flags = flags;
    return flags;
}

/* asyncio_common_name(), with the first PRE_LEN bytes of the name object at PRE when they
 * were read ahead (NULL: none): an int name (3.12, 3.13) is then formatted from them. */
static struct snap_str name_of(struct asyncio_common *c, uint64_t name_addr, uint64_t type_addr,
                               bool c_task, const uint8_t *pre, size_t pre_len)
{
    struct snap_str none = {NULL, 0};
    char buf[NAME_MAX_BYTES];
    struct pt_error e = {0};
    const struct py_layout *L = c->L;
    if (name_addr == 0 ||
        (type_addr == 0 && proc_read_bytes(c->proc, name_addr + L->object.ob_type, &type_addr,
                                           sizeof type_addr, &e) < 0)) {
        return none;
    }
    uint64_t flags = asyncio_common_type_flags(c, type_addr);
    bool is_int = L->flag_long_subclass != 0 && (flags & L->flag_long_subclass) != 0;
    if (is_int && (!c_task || !c->int_names)) {
        /* A version that formats every name at once never leaves an int there. */
        if (c_task && !c->warned_int_name) {
            snapshot_warn(c->s,
                          "asyncio task name at 0x%" PRIx64 " is an int, which this "
                          "Python never stores as a C task's name: not shown",
                          name_addr);
            c->warned_int_name = true;
        }
        return none;
    }
    if (is_int) {
        uint64_t n;
        bool have = pre != NULL && layout_has(L->pylong.digits) &&
                    pre_len >= (size_t)L->pylong.digits + PYINT_UINT_DIGITS * 4;
        if ((have ? pyint_uint_from_buf(L, pre, pre_len, name_addr, &n, &e)
                  : pyint_read_uint(c->proc, L, name_addr, &n, &e)) < 0) {
            return none;
        }
        int len = snprintf(buf, sizeof buf, "Task-%" PRIu64, n);
        return snapshot_strdup(c->s, buf, (size_t)len);
    }
    if (L->flag_str_subclass != 0 && (flags & L->flag_str_subclass) != 0) {
        long len = pyobj_read_str(c->proc, L, name_addr, buf, sizeof buf, &e);
        if (len >= 0) {
            return snapshot_strdup(c->s, buf, (size_t)len);
        }
    }
    return none;
}

struct snap_str asyncio_common_name(struct asyncio_common *c, uint64_t name_addr,
                                    uint64_t type_addr, bool c_task)
{
    return name_of(c, name_addr, type_addr, c_task, NULL, 0);
}

struct snap_str asyncio_common_name_prefetched(struct asyncio_common *c, uint64_t name_addr,
                                               const uint8_t *buf, size_t len, bool c_task)
{
    const struct py_layout *L = c->L;
    uint64_t type = 0;
    struct pyobj_str_info info;
    char out[NAME_MAX_BYTES];
    if (buf == NULL || !layout_read_u64(buf, len, L->object.ob_type, &type)) {
        return asyncio_common_name(c, name_addr, 0, c_task);
    }
    uint64_t flags = asyncio_common_type_flags(c, type);
    uint64_t end = 0;
    /* A str wholly inside the bytes read, its closing NUL included (pyobj_read_str() says
     * why): no further read. */
    if (L->flag_str_subclass != 0 && (flags & L->flag_str_subclass) != 0 &&
        pyobj_str_parse_header(L, buf, len, &info, NULL) == 0 &&
        !__builtin_add_overflow(info.data_off, info.data_bytes + info.kind, &end) && end <= len &&
        memcmp(buf + end - info.kind, "\0\0\0\0", info.kind) == 0) {
        long n = pyobj_str_to_utf8(info.kind, buf + info.data_off, info.data_bytes, info.length,
                                   out, sizeof out, NULL);
        if (n >= 0) {
            return snapshot_strdup(c->s, out, (size_t)n);
        }
    }
    return name_of(c, name_addr, type, c_task, buf, len);
}

int asyncio_common_read_word(struct proc *p, uint64_t addr, uint64_t *out)
{
    *out = 0;
    return proc_read_bytes(p, addr, out, sizeof *out, NULL);
}

void asyncio_common_read_each(struct proc *p, const struct proc_iov *iov, size_t k, bool *ok)
{
    /* A batch takes at most PROC_IOV_MAX regions: more would fail whole, and be read one by
     * one. */
    for (size_t first = 0; first < k; first += PROC_IOV_MAX) {
        size_t m = k - first < PROC_IOV_MAX ? k - first : PROC_IOV_MAX;
        bool all = proc_read_many(p, iov + first, m, NULL) == 0;
        for (size_t j = first; j < first + m; j++) {
            ok[j] = all || proc_read_bytes(p, iov[j].addr, iov[j].dst, iov[j].len, NULL) == 0;
        }
    }
}

bool asyncio_common_vec_reserve(struct asyncio_common_vec *tv, size_t more)
{
    size_t want;
    if (__builtin_add_overflow(tv->n, more, &want) || want > SIZE_MAX / sizeof *tv->v) {
        return false;
    }
    if (want <= tv->cap) {
        return true;
    }
    struct snap_task *nv = realloc(tv->v, want * sizeof *nv);
    if (nv == NULL) {
        return false;
    }
    tv->v = nv;
    tv->cap = want;
    return true;
}

bool asyncio_common_vec_push(struct asyncio_common_vec *tv, struct snap_task **out)
{
    if (tv->n == tv->cap && !asyncio_common_vec_reserve(tv, tv->cap ? tv->cap : 64)) {
        return false;
    }
    *out = &tv->v[tv->n++];
    memset(*out, 0, sizeof **out);
    return true;
}

int asyncio_common_vec_finish(struct asyncio_common_vec *tv, struct snapshot *s,
                              struct snap_interp *out, struct pt_error *err)
{
    int rc = 0;
    /* The array itself joins the snapshot, trimmed to its tasks (a copy would be as many pages
     * more for a one-shot dump to touch). */
    struct snap_task *fit = tv->n > 0 ? realloc(tv->v, tv->n * sizeof *tv->v) : NULL;
    if (fit != NULL) {
        tv->v = fit;
    }
    if (fit != NULL && snapshot_adopt(s, fit)) {
        out->tasks = fit;
        out->n_tasks = tv->n;
        *tv = (struct asyncio_common_vec){NULL, 0, 0};
        return 0;
    }
    if (tv->n > 0) {
        out->tasks = snapshot_alloc_array(s, tv->n, sizeof *out->tasks);
        if (out->tasks == NULL) {
            rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        } else {
            memcpy(out->tasks, tv->v, tv->n * sizeof *tv->v);
            out->n_tasks = tv->n;
        }
    }
    free(tv->v);
    *tv = (struct asyncio_common_vec){NULL, 0, 0};
    return rc;
}
