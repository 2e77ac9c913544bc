/* pydict: look up str keys in target dicts and instance attributes. */
#include "config.h"

#include "core/pyobj/pydict.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/pyobj/pyobj.h"

enum {
    KEYS_MAX_LOG2 = 30,
    KEY_NAME_MAX = 64,    /* longest key pytop looks for */
    KEY_READ_MAX = 256,   /* bytes read of one candidate key: header and characters */
    TYPE_READ_MAX = 4096, /* bytes of a heap type read to reach ht_cached_keys */
};

/* A dict's keys object, its entries copied out. */
struct keys {
    bool general;         /* entries carry a hash */
    uint64_t n;           /* entries in use (dk_nentries) */
    uint64_t entry_size;
    uint64_t key_at;
    uint64_t value_at;
    uint8_t *entries;     /* n * entry_size bytes */
};

/* Slots and index width of a keys object: 3.11+ store log2 of both; before, dk_size is the
 * slot count and the index width follows from it (1 byte up to 0xff slots, then 2, 4, 8). */
static bool keys_geometry(const struct py_layout *L, const uint8_t *hdr, uint64_t *log2_size,
                          uint64_t *log2_index)
{
    uint64_t size = 0;
    if (layout_has(L->dict.log2_size)) {
        layout_read_uint(hdr, L->dict.indices, L->dict.log2_size, 1, log2_size);
        layout_read_uint(hdr, L->dict.indices, L->dict.log2_index_bytes, 1, log2_index);
        return true;
    }
    if (!layout_read_u64(hdr, L->dict.indices, L->dict.keys_size, &size) || size == 0 ||
        (size & (size - 1)) != 0 || size > ((uint64_t)1 << KEYS_MAX_LOG2)) {
        return false;
    }
    *log2_size = (uint64_t)__builtin_ctzll(size);
    unsigned width = size <= 0xff ? 0 : size <= 0xffff ? 1 : size <= 0xffffffffull ? 2 : 3;
    *log2_index = *log2_size + width;
    return true;
}

static int read_keys_object(struct proc *p, const struct py_layout *L, uint64_t addr,
                            struct keys *k, struct pt_error *err);

/* 2.7's dict at ADDR is its own keys object: one table of ma_mask + 1 entries, each (hash, key,
 * value); a free slot has no key, a deleted one no value. */
static int read_table(struct proc *p, const struct py_layout *L, uint64_t addr, struct keys *k,
                      struct pt_error *err)
{
    uint64_t table = 0;
    uint64_t mask = 0;
    struct proc_iov iov[2] = {{addr + L->dict.ma_table, &table, 8},
                              {addr + L->dict.ma_mask, &mask, 8}};
    memset(k, 0, sizeof *k);
    if (addr == 0 || proc_read_many(p, iov, 2, err) < 0) {
        return pt_error_prefix(err, "dict at 0x%" PRIx64, addr);
    }
    /* The mask is a power of two less one, 7 for the smallest (PyDict_MINSIZE 8). */
    if (table == 0 || mask < 7 || (mask & (mask + 1)) != 0 || mask >= LIMIT_DICT_ENTRIES) {
        return pt_error_set(err, PT_E_FORMAT, 0, "dict at 0x%" PRIx64 " is malformed", addr);
    }
    k->general = true;
    k->n = mask + 1;
    k->entry_size = L->dict.entry_size;
    k->key_at = L->dict.entry_key;
    k->value_at = L->dict.entry_value;
    if (!layout_has(k->entry_size) || !layout_has(k->key_at) || !layout_has(k->value_at) ||
        k->entry_size > 64) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "dict entry layout unusable");
    }
    k->entries = malloc(k->n * k->entry_size);
    if (k->entries == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    if (proc_read_bytes(p, table, k->entries, k->n * k->entry_size, err) < 0) {
        free(k->entries);
        k->entries = NULL;
        return pt_error_prefix(err, "dict table at 0x%" PRIx64, table);
    }
    return 0;
}

/* The entries of the keys object at ADDR (2.7: of the dict at ADDR, read_dict()). */
static int read_keys(struct proc *p, const struct py_layout *L, uint64_t addr, struct keys *k,
                     struct pt_error *err)
{
    if (layout_has(L->dict.ma_table)) {
        return read_table(p, L, addr, k, err);
    }
    return read_keys_object(p, L, addr, k, err);
}

/* The entries of the keys object at ADDR (3.6+). */
static int read_keys_object(struct proc *p, const struct py_layout *L, uint64_t addr,
                            struct keys *k, struct pt_error *err)
{
    uint8_t hdr[64];
    uint64_t log2_size = 0;
    uint64_t log2_index = 0;
    uint64_t kind = (uint64_t)L->dict.kind_general;
    uint64_t nentries = 0;
    memset(k, 0, sizeof *k);
    if (L->dict.indices > sizeof hdr || addr == 0) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "dict keys layout unusable");
    }
    if (proc_read_bytes(p, addr, hdr, L->dict.indices, err) < 0) {
        return pt_error_prefix(err, "dict keys at 0x%" PRIx64, addr);
    }
    /* Before 3.11 every entry carries its hash: there is no kind field. */
    if (layout_has(L->dict.kind)) {
        layout_read_uint(hdr, L->dict.indices, L->dict.kind, 1, &kind);
    }
    layout_read_u64(hdr, L->dict.indices, L->dict.nentries, &nentries);
    /* Index entries are 1 to 8 bytes, one per slot. */
    if (!keys_geometry(L, hdr, &log2_size, &log2_index) || log2_size > KEYS_MAX_LOG2 ||
        log2_index < log2_size || log2_index > log2_size + 3 ||
        nentries > ((uint64_t)1 << log2_size)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "dict keys at 0x%" PRIx64 " are malformed",
                            addr);
    }
    if (nentries > LIMIT_DICT_ENTRIES) {
        return pt_error_set(err, PT_E_LIMIT, 0, "dict with %" PRIu64 " entries", nentries);
    }
    k->general = !layout_has(L->dict.kind) || (int)kind == L->dict.kind_general;
    k->n = nentries;
    k->entry_size = k->general ? L->dict.entry_size : L->dict.uentry_size;
    k->key_at = k->general ? L->dict.entry_key : L->dict.uentry_key;
    k->value_at = k->general ? L->dict.entry_value : L->dict.uentry_value;
    if (!layout_has(k->entry_size) || !layout_has(k->key_at) || !layout_has(k->value_at) ||
        k->entry_size > 64) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "dict entry layout unusable");
    }
    k->entries = malloc(nentries ? nentries * k->entry_size : 1);
    if (k->entries == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    uint64_t at = addr + L->dict.indices + ((uint64_t)1 << log2_index);
    if (nentries > 0 && proc_read_bytes(p, at, k->entries, nentries * k->entry_size, err) < 0) {
        free(k->entries);
        k->entries = NULL;
        return pt_error_prefix(err, "dict entries at 0x%" PRIx64, at);
    }
    return 0;
}

static uint64_t entry_field(const struct keys *k, uint64_t i, uint64_t off)
{
    uint64_t v = 0;
    layout_read_u64(k->entries + i * k->entry_size, k->entry_size, off, &v);
    return v;
}

/* The entries whose keys are the ASCII strs KEYS[0..N) (N <= PYDICT_KEYS_MAX): their indexes
 * into IDX, -1 for those absent. All candidate keys are read in batches, just enough of each
 * to compare header and characters with the longest key, packed WANT bytes apart, in buffers
 * for as many keys as the dict has, PROC_IOV_MAX at most. Returns how many were found, or -1. */
static long find_keys(struct proc *p, const struct py_layout *L, const struct keys *k,
                      const char *const *keys, size_t n, long *idx_out, struct pt_error *err)
{
    size_t klen[PYDICT_KEYS_MAX];
    size_t longest = 0;
    if (n > PYDICT_KEYS_MAX) {
        return pt_error_set(err, PT_E_LIMIT, 0, "too many keys at once");
    }
    for (size_t q = 0; q < n; q++) {
        klen[q] = strlen(keys[q]);
        longest = klen[q] > longest ? klen[q] : longest;
        idx_out[q] = -1;
        if (klen[q] > KEY_NAME_MAX) {
            return pt_error_set(err, PT_E_LIMIT, 0, "key too long");
        }
    }
    size_t want = pyobj_str_ascii_off(L) + longest;
    size_t per = k->n == 0 ? 1 : k->n < PROC_IOV_MAX ? (size_t)k->n : PROC_IOV_MAX;
    uint8_t *bufs = malloc(per * want);
    struct proc_iov *iov = malloc(per * sizeof *iov);
    uint64_t *idx = malloc(per * sizeof *idx);
    long found = 0;
    if (bufs == NULL || iov == NULL || idx == NULL || want > KEY_READ_MAX) {
        found = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        goto out;
    }
    for (uint64_t base = 0; base < k->n && (size_t)found < n; base += per) {
        size_t m = 0;
        for (uint64_t i = base; i < k->n && i < base + per; i++) {
            uint64_t kaddr = entry_field(k, i, k->key_at);
            if (kaddr != 0) {
                iov[m] = (struct proc_iov){kaddr, bufs + m * want, want};
                idx[m++] = i;
            }
        }
        bool batch = proc_read_many(p, iov, m, NULL) == 0;
        for (size_t j = 0; j < m && (size_t)found < n; j++) {
            struct pyobj_str_info info;
            uint8_t *buf = bufs + j * want;
            if (!batch && proc_read_bytes(p, iov[j].addr, buf, want, NULL) < 0) {
                continue;
            }
            if (pyobj_str_parse_header(L, buf, want, &info, NULL) < 0 || info.kind != 1 ||
                info.data_off != pyobj_str_ascii_off(L)) {
                continue;
            }
            for (size_t q = 0; q < n; q++) {
                if (idx_out[q] < 0 && info.length == klen[q] &&
                    memcmp(buf + info.data_off, keys[q], klen[q]) == 0) {
                    idx_out[q] = (long)idx[j];
                    found++;
                    break;
                }
            }
        }
    }
out:
    free(bufs);
    free(iov);
    free(idx);
    return found;
}

/* Value I of a split dict's values block at VALUES. */
static int split_value(struct proc *p, const struct py_layout *L, uint64_t values, uint64_t i,
                       uint64_t *out, struct pt_error *err)
{
    if (proc_read_bytes(p, values + L->dict.values_values + i * 8, out, 8, err) < 0) {
        return pt_error_prefix(err, "dict values at 0x%" PRIx64, values);
    }
    return 0;
}

static int read_dict(struct proc *p, const struct py_layout *L, uint64_t dict_addr,
                     uint64_t *keys, uint64_t *values, struct pt_error *err)
{
    uint8_t buf[128];
    if (dict_addr == 0 || L->dict.size > sizeof buf) {
        return pt_error_set(err, PT_E_FORMAT, 0, "no dict");
    }
    if (proc_read_bytes(p, dict_addr, buf, L->dict.size, err) < 0) {
        return pt_error_prefix(err, "dict at 0x%" PRIx64, dict_addr);
    }
    *keys = 0;
    *values = 0;
    /* 2.7: the dict holds its table itself (read_table()). */
    if (layout_has(L->dict.ma_table)) {
        *keys = dict_addr;
        return 0;
    }
    layout_read_u64(buf, L->dict.size, L->dict.ma_keys, keys);
    layout_read_u64(buf, L->dict.size, L->dict.ma_values, values);
    return 0;
}

int pydict_get_strs(struct proc *p, const struct py_layout *L, uint64_t dict_addr,
                    const char *const *keys, size_t n, uint64_t *values, struct pt_error *err)
{
    uint64_t keys_addr;
    uint64_t split;
    struct keys k;
    long idx[PYDICT_KEYS_MAX];
    for (size_t q = 0; q < n && q < PYDICT_KEYS_MAX; q++) {
        values[q] = 0;
    }
    if (read_dict(p, L, dict_addr, &keys_addr, &split, err) < 0 ||
        read_keys(p, L, keys_addr, &k, err) < 0) {
        return -1;
    }
    long found = find_keys(p, L, &k, keys, n, idx, err);
    for (size_t q = 0; found > 0 && q < n; q++) {
        if (idx[q] < 0) {
            continue;
        }
        if (split == 0) {
            values[q] = entry_field(&k, (uint64_t)idx[q], k.value_at);
        } else if (split_value(p, L, split, (uint64_t)idx[q], &values[q], err) < 0) {
            found = -1;
        }
    }
    free(k.entries);
    return (int)found;
}

int pydict_get_str(struct proc *p, const struct py_layout *L, uint64_t dict_addr, const char *key,
                   uint64_t *value, struct pt_error *err)
{
    uint64_t v = 0;
    int rc = pydict_get_strs(p, L, dict_addr, &key, 1, &v, err);
    if (rc == 1) {
        *value = v;
    }
    return rc;
}

/* Calls FN for each live entry of the keys object at KEYS_ADDR, its values in the entries, or
 * (VALUES nonzero) in that split or shared values array. */
static int keys_items(struct proc *p, const struct py_layout *L, uint64_t keys_addr,
                      uint64_t values, int (*fn)(void *ctx, uint64_t key, uint64_t value),
                      void *ctx, struct pt_error *err)
{
    struct keys k;
    if (read_keys(p, L, keys_addr, &k, err) < 0) {
        return -1;
    }
    int rc = 0;
    for (uint64_t i = 0; i < k.n; i++) {
        uint64_t key = entry_field(&k, i, k.key_at);
        uint64_t value = entry_field(&k, i, k.value_at);
        if (values != 0 && split_value(p, L, values, i, &value, err) < 0) {
            rc = -1;
            break;
        }
        if (key != 0 && value != 0 && fn(ctx, key, value) != 0) {
            break;
        }
    }
    free(k.entries);
    return rc;
}

int pydict_items(struct proc *p, const struct py_layout *L, uint64_t dict_addr,
                 int (*fn)(void *ctx, uint64_t key, uint64_t value), void *ctx,
                 struct pt_error *err)
{
    uint64_t keys_addr;
    uint64_t values;
    if (read_dict(p, L, dict_addr, &keys_addr, &values, err) < 0) {
        return -1;
    }
    return keys_items(p, L, keys_addr, values, fn, ctx, err);
}

/* What an instance's type says about where its attributes live. */
struct type_info {
    uint64_t flags;
    uint64_t basicsize;
    uint64_t cached_keys;
    int64_t dictoffset;
};

/* Whether TYPE (its instances BASICSIZE bytes) is 2.7's type of old-style instances, which
 * keep their attributes in in_dict: named "instance", of PyInstanceObject's size. */
static bool is_old_instance_type(struct proc *p, const struct py_layout *L, uint64_t type,
                                 uint64_t basicsize)
{
    static const char name[] = "instance";
    uint64_t at = 0;
    char got[sizeof name];
    return layout_has(L->type.instance_in_dict) && layout_has(L->type.name) &&
           basicsize == L->type.instance_size && L->type.instance_in_dict + 8 <= basicsize &&
           proc_read_bytes(p, type + L->type.name, &at, sizeof at, NULL) == 0 && at != 0 &&
           proc_read_bytes(p, at, got, sizeof got, NULL) == 0 &&
           memcmp(got, name, sizeof name) == 0;
}

/* Reads the type's flags, instance size, shared keys and dict offset in one system call. */
static int read_type(struct proc *p, const struct py_layout *L, uint64_t type,
                     struct type_info *ti, struct pt_error *err)
{
    uint64_t dictoffset = 0;
    struct proc_iov iov[4] = {
        {type + L->type.flags, &ti->flags, 8},
        {type + L->type.basicsize, &ti->basicsize, 8},
        {type + L->type.dictoffset, &dictoffset, 8},
        {type + L->type.cached_keys, &ti->cached_keys, 8},
    };
    /* 2.7's types share no keys (no ht_cached_keys): every instance has a dict of its own. */
    bool shared = layout_has(L->type.cached_keys);
    ti->cached_keys = 0;
    if (!layout_has(L->type.flags) || !layout_has(L->type.basicsize) ||
        !layout_has(L->type.dictoffset) || (shared && L->type.cached_keys > TYPE_READ_MAX)) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "no type layout for instance attributes");
    }
    if (proc_read_many(p, iov, shared ? 4 : 3, err) < 0) {
        return pt_error_prefix(err, "type at 0x%" PRIx64, type);
    }
    ti->dictoffset = (int64_t)dictoffset;
    if (dictoffset == 0 && is_old_instance_type(p, L, type, ti->basicsize)) {
        ti->dictoffset = (int64_t)L->type.instance_in_dict;
    }
    return 0;
}

/* Looks NAME up in a values block keyed by the type's shared keys. */
static int shared_lookup(struct proc *p, const struct py_layout *L, uint64_t cached_keys,
                         uint64_t values, const char *name, uint64_t *value,
                         struct pt_error *err)
{
    struct keys k;
    if (read_keys(p, L, cached_keys, &k, err) < 0) {
        return -1;
    }
    long i = -1;
    long found = find_keys(p, L, &k, &name, 1, &i, err);
    free(k.entries);
    if (found <= 0) {
        return 0;
    }
    return split_value(p, L, values, (uint64_t)i, value, err) < 0 ? -1 : 1;
}

static int read_ptr(struct proc *p, uint64_t addr, uint64_t *out, struct pt_error *err)
{
    *out = 0;
    return proc_read_bytes(p, addr, out, 8, err);
}

/* Where a managed dict's attributes are (Include/internal/pycore_object.h of each version):
 * 3.11 keeps a dict pointer and a values pointer before the object; 3.12 one word holding
 * either, tagged; 3.13+ a dict pointer before it and the values inline after it. */
/* Where the instance OBJ (of a type TI with a managed dict) keeps its attributes: a dict
 * (*DICT), or shared keys with a values array (*VALUES, the keys are TI's cached keys); both 0
 * when it has none yet. */
static int managed_at(struct proc *p, const struct py_layout *L, uint64_t obj,
                      const struct type_info *ti, uint64_t *dict, uint64_t *values,
                      struct pt_error *err)
{
    uint64_t w = 0;
    *dict = 0;
    *values = 0;
    if (L->type.has_dict_or_values) {
        if (read_ptr(p, obj + (uint64_t)L->type.dict_or_values_at, &w, err) < 0) {
            return -1;
        }
        /* The word holds the values pointer minus one, which makes it odd
         * (_PyDictOrValues_SetValues, Include/internal/pycore_object.h). */
        *(w & 1 ? values : dict) = w & 1 ? w + 1 : w;
        return 0;
    }
    if (read_ptr(p, obj + (uint64_t)L->type.managed_dict_offset, dict, err) < 0) {
        return -1;
    }
    if (*dict != 0) {
        return 0;
    }
    if (L->type.has_managed_values) {
        return read_ptr(p, obj + (uint64_t)L->type.managed_values_at, values, err);
    }
    if (L->type.flag_inline_values == 0 || !(ti->flags & L->type.flag_inline_values) ||
        ti->basicsize == 0 || ti->basicsize > LIMIT_OBJECT_READ) {
        return 0;
    }
    uint8_t valid = 0;
    if (proc_read_bytes(p, obj + ti->basicsize + L->dict.values_valid, &valid, 1, err) < 0) {
        return -1;
    }
    *values = valid ? obj + ti->basicsize : 0;
    return 0;
}

/* Where the instance OBJ keeps its attributes (see managed_at()), whatever its type; *TI its
 * type. */
static int attrs_at(struct proc *p, const struct py_layout *L, uint64_t obj,
                    struct type_info *ti, uint64_t *dict, uint64_t *values, struct pt_error *err)
{
    uint64_t type = 0;
    if (read_ptr(p, obj + L->object.ob_type, &type, err) < 0 ||
        read_type(p, L, type, ti, err) < 0) {
        return -1;
    }
    if (L->type.flag_managed_dict != 0 && (ti->flags & L->type.flag_managed_dict)) {
        return managed_at(p, L, obj, ti, dict, values, err);
    }
    /* Otherwise __dict__ sits at tp_dictoffset inside the object (a positive offset for the
     * plain classes this is used on). */
    *values = 0;
    if (ti->dictoffset <= 0 || ti->dictoffset > LIMIT_OBJECT_READ) {
        return pt_error_set(err, PT_E_FORMAT, 0, "object at 0x%" PRIx64 " has no __dict__",
                            obj);
    }
    return read_ptr(p, obj + (uint64_t)ti->dictoffset, dict, err);
}

int pydict_instance_attr(struct proc *p, const struct py_layout *L, uint64_t obj_addr,
                         const char *name, uint64_t *value, struct pt_error *err)
{
    struct type_info ti;
    uint64_t dict = 0;
    uint64_t values = 0;
    if (attrs_at(p, L, obj_addr, &ti, &dict, &values, err) < 0) {
        return -1;
    }
    if (values != 0) {
        return shared_lookup(p, L, ti.cached_keys, values, name, value, err);
    }
    return dict != 0 ? pydict_get_str(p, L, dict, name, value, err) : 0;
}

int pydict_instance_items(struct proc *p, const struct py_layout *L, uint64_t obj_addr,
                          int (*fn)(void *ctx, uint64_t key, uint64_t value), void *ctx,
                          struct pt_error *err)
{
    struct type_info ti;
    uint64_t dict = 0;
    uint64_t values = 0;
    if (attrs_at(p, L, obj_addr, &ti, &dict, &values, err) < 0) {
        return -1;
    }
    if (values != 0) {
        return keys_items(p, L, ti.cached_keys, values, fn, ctx, err);
    }
    return dict != 0 ? pydict_items(p, L, dict, fn, ctx, err) : 0;
}

/* pydict_instances_attrs(): what one type of instance says about where NAMES live. */
struct attr_plan {
    uint64_t type;
    bool ok;                   /* the type was read */
    struct type_info ti;
    bool shared;               /* IDX holds each name's slot in the type's shared keys */
    long idx[PYDICT_KEYS_MAX]; /* -1: not among them */
};

enum {
    PLANS_MAX = 8,    /* types planned for at once; instances of others are looked up alone */
    OBJ_BEFORE = 48,  /* bytes read before an instance (3.11-3.13 keep dict words there) */
    OBJ_AFTER = 320,  /* and from its start (header, inline values) */
    OBJ_WINDOW = OBJ_BEFORE + OBJ_AFTER,
};

static struct attr_plan *plan_for(struct proc *p, const struct py_layout *L,
                                  struct attr_plan *plans, size_t *n_plans, uint64_t type,
                                  const char *const *names, size_t n_names)
{
    for (size_t i = 0; i < *n_plans; i++) {
        if (plans[i].type == type) {
            return plans[i].ok ? &plans[i] : NULL;
        }
    }
    if (*n_plans == PLANS_MAX) {
        return NULL;
    }
    struct attr_plan *pl = &plans[(*n_plans)++];
    memset(pl, 0, sizeof *pl);
    pl->type = type;
    pl->ok = read_type(p, L, type, &pl->ti, NULL) == 0;
    struct keys k;
    if (pl->ok && pl->ti.cached_keys != 0 && read_keys(p, L, pl->ti.cached_keys, &k, NULL) == 0) {
        pl->shared = find_keys(p, L, &k, names, n_names, pl->idx, NULL) >= 0;
        free(k.entries);
    }
    return pl->ok ? pl : NULL;
}

/* The word at OFF from the instance whose window is WIN; false when outside it. */
static bool window_word(const uint8_t *win, int64_t off, uint64_t *out)
{
    if (off < -OBJ_BEFORE || off > OBJ_AFTER - 8) {
        return false;
    }
    memcpy(out, win + OBJ_BEFORE + off, 8);
    return true;
}

/* Where instance I keeps its attributes, from its window: *VALUES, a block its type's shared
 * keys index (a split dict's values before 3.11: *VALUES its ma_values once its dict is read,
 * signalled by *DICT); 0 with *VALUES 0 when it has no attributes at all; -1 when it must be
 * looked up alone (a dict of its own, a layout the window does not reach). */
static int locate_values(const struct py_layout *L, const struct attr_plan *pl, uint64_t obj,
                         const uint8_t *win, uint64_t *values, uint64_t *dict)
{
    const struct type_info *ti = &pl->ti;
    uint64_t w = 0;
    *values = 0;
    *dict = 0;
    if (L->type.flag_managed_dict != 0 && (ti->flags & L->type.flag_managed_dict)) {
        if (L->type.has_dict_or_values) {
            if (!window_word(win, L->type.dict_or_values_at, &w) || (w != 0 && !(w & 1))) {
                return -1;
            }
            *values = w != 0 ? w + 1 : 0;
            return 0;
        }
        if (!window_word(win, L->type.managed_dict_offset, &w)) {
            return -1;
        }
        if (w != 0) {
            /* A dict made for the instance (its __dict__ was asked for): its values are
             * still the instance's own while it is split on the type's keys, which the dict
             * read tells. */
            *dict = w;
            return 0;
        }
        if (L->type.has_managed_values) {
            return window_word(win, L->type.managed_values_at, values) ? 0 : -1;
        }
        if (L->type.flag_inline_values == 0 || !(ti->flags & L->type.flag_inline_values) ||
            ti->basicsize == 0 || ti->basicsize > LIMIT_OBJECT_READ) {
            return 0;
        }
        uint64_t valid_at = ti->basicsize + L->dict.values_valid;
        if (valid_at >= OBJ_AFTER) {
            return -1;
        }
        *values = win[OBJ_BEFORE + valid_at] ? obj + ti->basicsize : 0;
        return 0;
    }
    if (ti->dictoffset <= 0 || ti->dictoffset > LIMIT_OBJECT_READ ||
        !window_word(win, ti->dictoffset, dict)) {
        return -1;
    }
    return 0;
}

/* The lookups of pydict_instances_attrs(): one slot of one instance. */
struct slot_read {
    size_t obj;
    size_t name;
};

int pydict_instances_attrs(struct proc *p, const struct py_layout *L, const uint64_t *objs,
                           size_t n, const char *const *names, size_t n_names, uint64_t *values,
                           int *rcs, struct pt_error *err)
{
    if (n_names == 0 || n_names > PYDICT_KEYS_MAX) {
        return pt_error_set(err, PT_E_LIMIT, 0, "too many attributes at once");
    }
    struct attr_plan plans[PLANS_MAX];
    size_t n_plans = 0;
    /* Instances a round: its slot reads (N_NAMES each) must fit one batch, which takes at
     * most PROC_IOV_MAX regions (more fails whole: a thousand threads' names were then read
     * one by one, sixteen reads each). */
    size_t cap = n < PROC_IOV_MAX / n_names ? (n ? n : 1) : PROC_IOV_MAX / n_names;
    uint8_t *win = malloc(cap * OBJ_WINDOW);
    uint64_t *slot_buf = malloc(cap * n_names * 8 > 0 ? cap * n_names * 8 : 8);
    uint8_t *dict_buf = malloc(cap * 128);
    struct proc_iov *iov = malloc(cap * n_names * sizeof *iov);
    struct slot_read *slots = malloc(cap * n_names * sizeof *slots);
    const struct attr_plan **plan_of = malloc(cap * sizeof *plan_of);
    uint64_t *base = malloc(cap * sizeof *base);
    bool *alone = malloc(cap * sizeof *alone);
    int rc = 0;
    if (win == NULL || slot_buf == NULL || dict_buf == NULL || iov == NULL || slots == NULL ||
        plan_of == NULL || base == NULL || alone == NULL || L->dict.size > 128) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        goto out;
    }
    for (size_t first = 0; first < n; first += cap) {
        size_t m = n - first < cap ? n - first : cap;
        const uint64_t *o = objs + first;
        uint64_t *v = values + first * n_names;
        int *r = rcs + first;
        memset(v, 0, m * n_names * sizeof *v);
        /* 1. Each instance's window: its type and where its attributes are. */
        size_t k = 0;
        for (size_t i = 0; i < m; i++) {
            alone[i] = o[i] < OBJ_BEFORE;
            r[i] = 0;
            if (!alone[i]) {
                iov[k++] = (struct proc_iov){o[i] - OBJ_BEFORE, win + i * OBJ_WINDOW, OBJ_WINDOW};
            }
        }
        bool ok = proc_read_many(p, iov, k, NULL) == 0;
        size_t n_dicts = 0;
        for (size_t i = 0; i < m; i++) {
            uint64_t type = 0;
            uint64_t dict = 0;
            const struct attr_plan *pl = NULL;
            alone[i] = alone[i] || !ok ||
                       !window_word(win + i * OBJ_WINDOW, (int64_t)L->object.ob_type, &type) ||
                       (pl = plan_for(p, L, plans, &n_plans, type, names, n_names)) == NULL ||
                       locate_values(L, pl, o[i], win + i * OBJ_WINDOW, &base[i], &dict) < 0;
            plan_of[i] = pl;
            if (!alone[i] && dict != 0) {
                /* 2. Before 3.11: the instance's dict, read for its keys and values. */
                iov[n_dicts] = (struct proc_iov){dict, dict_buf + i * 128, L->dict.size};
                slots[n_dicts++] = (struct slot_read){i, 0};
            }
        }
        ok = proc_read_many(p, iov, n_dicts, NULL) == 0;
        for (size_t d = 0; d < n_dicts; d++) {
            size_t i = slots[d].obj;
            uint64_t keys = 0;
            const uint8_t *db = dict_buf + i * 128;
            /* A split dict on its type's shared keys: its values block; others alone. */
            alone[i] = !ok || !layout_read_u64(db, L->dict.size, L->dict.ma_keys, &keys) ||
                       !layout_read_u64(db, L->dict.size, L->dict.ma_values, &base[i]) ||
                       base[i] == 0 || keys != plan_of[i]->ti.cached_keys;
        }
        /* 3. The slots, in one batch. */
        size_t n_slots = 0;
        for (size_t i = 0; i < m; i++) {
            if (alone[i] || base[i] == 0) {
                continue;
            }
            if (!plan_of[i]->shared) {
                alone[i] = true;
                continue;
            }
            for (size_t q = 0; q < n_names; q++) {
                long idx = plan_of[i]->idx[q];
                if (idx >= 0) {
                    uint64_t at = base[i] + L->dict.values_values + (uint64_t)idx * 8;
                    iov[n_slots] = (struct proc_iov){at, slot_buf + n_slots, 8};
                    slots[n_slots++] = (struct slot_read){i, q};
                }
            }
        }
        ok = proc_read_many(p, iov, n_slots, NULL) == 0;
        for (size_t j = 0; j < n_slots; j++) {
            size_t i = slots[j].obj;
            alone[i] = alone[i] || !ok;
            v[i * n_names + slots[j].name] = slot_buf[j];
        }
        /* Found where the batch reached; the rest one by one, as pydict_instance_attr(). */
        for (size_t i = 0; i < m; i++) {
            r[i] = 0;
            for (size_t q = 0; q < n_names; q++) {
                uint64_t *out = &v[i * n_names + q];
                if (alone[i]) {
                    *out = 0;
                    int one = pydict_instance_attr(p, L, o[i], names[q], out, NULL);
                    if (one < 0) {
                        r[i] = -1;
                        break;
                    }
                }
                r[i] += *out != 0;
            }
        }
    }
out:
    free(win);
    free(slot_buf);
    free(dict_buf);
    free(iov);
    free(slots);
    free(plan_of);
    free(base);
    free(alone);
    return rc;
}
