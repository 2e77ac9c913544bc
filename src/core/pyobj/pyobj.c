/* pyobj: read Python str and bytes objects out of target memory, bounded. */
#include "config.h"

#include "core/pyobj/pyobj.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"

/* Most names and file names fit in one read of this many bytes. */
enum { STR_FIRST_READ = 256 };

uint64_t pyobj_str_ascii_off(const struct py_layout *L)
{
    return L->str_is_bytes ? L->bytes.ob_sval : L->unicode.ascii_size;
}

/* The header of 2.7's byte string (PyStringObject, the bytes layout): ob_size bytes at
 * ob_sval, always followed by a NUL (Objects/stringobject.c). */
static int bytes_str_header(const struct py_layout *L, const uint8_t *buf, size_t len,
                            struct pyobj_str_info *info, struct pt_error *err)
{
    uint64_t length;
    if (L->bytes.ob_sval > len || !layout_read_u64(buf, len, L->bytes.ob_size, &length)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str header truncated");
    }
    if (length > ((uint64_t)1 << 40)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str length %" PRIu64 " is implausible", length);
    }
    info->kind = 1;
    info->length = length;
    info->data_off = L->bytes.ob_sval;
    info->data_bytes = length;
    info->raw = true;
    return 0;
}

int pyobj_str_parse_header(const struct py_layout *L, const uint8_t *buf, size_t len,
                           struct pyobj_str_info *info, struct pt_error *err)
{
    uint64_t state;
    uint64_t length;
    if (L->str_is_bytes) {
        return bytes_str_header(L, buf, len, info, err);
    }
    if (!layout_read_uint(buf, len, L->unicode.state, 4, &state) ||
        !layout_read_u64(buf, len, L->unicode.length, &length)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str header truncated");
    }
    unsigned kind = (unsigned)(state >> L->unicode.kind_shift) & 7u;
    bool compact = (state >> L->unicode.compact_bit) & 1u;
    bool ascii = (state >> L->unicode.ascii_bit) & 1u;
    if (!compact) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str is not compact");
    }
    if (kind != 1 && kind != 2 && kind != 4) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str kind %u is invalid", kind);
    }
    if (ascii && kind != 1) {
        return pt_error_set(err, PT_E_FORMAT, 0, "ASCII str with kind %u", kind);
    }
    /* Python caps lengths at PY_SSIZE_T_MAX; anything near that is corrupt. */
    if (length > ((uint64_t)1 << 40)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str length %" PRIu64 " is implausible", length);
    }
    info->kind = kind;
    info->length = length;
    info->data_off = ascii ? L->unicode.ascii_size : L->unicode.compact_size;
    info->data_bytes = length * kind;
    info->raw = false;
    return 0;
}

/* The characters of the str INFO describes, DATA[0..LEN), as UTF-8 in OUT (at most N_CHARS):
 * a byte string's bytes as they are (a writer escapes what is not UTF-8). */
static long str_chars(const struct pyobj_str_info *info, const uint8_t *data, size_t len,
                      uint64_t n_chars, char *out, size_t cap, struct pt_error *err)
{
    if (!info->raw) {
        return pyobj_str_to_utf8(info->kind, data, len, n_chars, out, cap, err);
    }
    size_t n = n_chars < cap ? (size_t)n_chars : cap;
    if (n > len) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str data truncated");
    }
    memcpy(out, data, n);
    return (long)n;
}

static int put_utf8(uint32_t cp, char *out, size_t cap, size_t *pos)
{
    char tmp[4];
    size_t n;
    if (cp < 0x80) {
        tmp[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        tmp[0] = (char)(0xc0 | (cp >> 6));
        tmp[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        tmp[0] = (char)(0xe0 | (cp >> 12));
        tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        tmp[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        tmp[0] = (char)(0xf0 | (cp >> 18));
        tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        tmp[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    if (cap - *pos < n) {
        return -1;
    }
    memcpy(out + *pos, tmp, n);
    *pos += n;
    return 0;
}

long pyobj_str_to_utf8(unsigned kind, const uint8_t *data, size_t len, uint64_t n_chars,
                       char *out, size_t cap, struct pt_error *err)
{
    if (kind != 1 && kind != 2 && kind != 4) {
        return pt_error_set(err, PT_E_FORMAT, 0, "str kind %u is invalid", kind);
    }
    size_t pos = 0;
    for (uint64_t i = 0; i < n_chars; i++) {
        if ((i + 1) * kind > len) {
            return pt_error_set(err, PT_E_FORMAT, 0, "str data truncated");
        }
        uint32_t cp;
        if (kind == 1) {
            cp = data[i];
        } else if (kind == 2) {
            uint16_t v;
            memcpy(&v, data + i * 2, 2);
            cp = v;
        } else {
            memcpy(&cp, data + i * 4, 4);
        }
        if (cp > 0x10ffff) {
            return pt_error_set(err, PT_E_FORMAT, 0, "code point 0x%" PRIx32 " out of range", cp);
        }
        if (put_utf8(cp, out, cap, &pos) < 0) {
            break;
        }
    }
    return (long)pos;
}

long pyobj_str_from_buf(const struct py_layout *L, const uint8_t *buf, size_t got, char *out,
                        size_t cap, struct pt_error *err)
{
    struct pyobj_str_info info;
    if (cap > LIMIT_STRING) {
        cap = LIMIT_STRING;
    }
    if (pyobj_str_parse_header(L, buf, got, &info, err) < 0) {
        return -1;
    }
    /* A compact str ends with a NUL character one past its length (PyUnicode_New,
     * Objects/unicodeobject.c): a length not followed by one is corrupt, whatever the bytes
     * after the characters say, and a string cut at CAP must still end where it claims. */
    uint64_t end_at = info.data_off + info.data_bytes;
    if (end_at + info.kind > got) {
        return PYOBJ_STR_MORE;
    }
    if (memcmp(buf + end_at, "\0\0\0\0", info.kind) != 0) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "claims %" PRIu64 " characters, not ended there", info.length);
    }
    /* Never more characters than could fill CAP bytes of UTF-8. */
    uint64_t chars = info.length < cap ? info.length : cap;
    return str_chars(&info, buf + info.data_off, chars * info.kind, chars, out, cap, err);
}

long pyobj_read_str(struct proc *p, const struct py_layout *L, uint64_t addr, char *out,
                    size_t cap, struct pt_error *err)
{
    uint8_t buf[STR_FIRST_READ];
    uint8_t *big = NULL;
    const uint8_t *data;
    struct pyobj_str_info info;
    long n = -1;

    if (addr == 0) {
        return pt_error_set(err, PT_E_FORMAT, 0, "NULL str pointer");
    }
    if (cap > LIMIT_STRING) {
        cap = LIMIT_STRING;
    }
    /* One speculative read covers header and characters of short strings; a read that runs
     * into an unmapped page falls back to the header alone. */
    size_t got = sizeof buf;
    if (proc_read_bytes(p, addr, buf, got, NULL) < 0) {
        got = L->str_is_bytes ? L->bytes.ob_sval : L->unicode.compact_size;
        if (got > sizeof buf) {
            return pt_error_set(err, PT_E_BADLAYOUT, 0, "str header larger than expected");
        }
        if (proc_read_bytes(p, addr, buf, got, err) < 0) {
            return pt_error_prefix(err, "str at 0x%" PRIx64, addr);
        }
    }
    n = pyobj_str_from_buf(L, buf, got, out, cap, err);
    if (n != PYOBJ_STR_MORE) {
        return n < 0 ? pt_error_prefix(err, "str at 0x%" PRIx64, addr) : n;
    }
    /* Longer than the first read: the NUL after the characters, then the characters. */
    pyobj_str_parse_header(L, buf, got, &info, NULL);
    uint64_t end_at = info.data_off + info.data_bytes;
    uint8_t term[4] = {0};
    if (proc_read_bytes(p, addr + end_at, term, info.kind, err) < 0) {
        return pt_error_prefix(err, "str at 0x%" PRIx64 " claims %" PRIu64 " characters", addr,
                               info.length);
    }
    if (memcmp(term, "\0\0\0\0", info.kind) != 0) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "str at 0x%" PRIx64 " claims %" PRIu64 " characters, not ended there",
                            addr, info.length);
    }
    uint64_t chars = info.length < cap ? info.length : cap;
    uint64_t want = chars * info.kind;
    n = -1;
    if (info.data_off + want <= got) {
        data = buf + info.data_off;
    } else {
        big = malloc(want ? want : 1);
        if (big == NULL) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
        if (proc_read_bytes(p, addr + info.data_off, big, want, err) < 0) {
            pt_error_prefix(err, "str data at 0x%" PRIx64, addr);
            goto out;
        }
        data = big;
    }
    n = str_chars(&info, data, want, chars, out, cap, err);
out:
    free(big);
    return n;
}

bool pyobj_is_str(struct proc *p, const struct py_layout *L, uint64_t addr)
{
    uint64_t type = 0;
    uint64_t flags = 0;
    return addr != 0 && L->flag_str_subclass != 0 && layout_has(L->type.flags) &&
           proc_read_bytes(p, addr + L->object.ob_type, &type, sizeof type, NULL) == 0 &&
           proc_read_bytes(p, type + L->type.flags, &flags, sizeof flags, NULL) == 0 &&
           (flags & L->flag_str_subclass) != 0;
}

int pyobj_bytes_from_buf(const struct py_layout *L, const uint8_t *buf, size_t got,
                         uint64_t addr, size_t max, uint8_t **out, size_t *len,
                         struct pt_error *err)
{
    uint64_t size;
    if (L->bytes.ob_sval > got || !layout_read_u64(buf, got, L->bytes.ob_size, &size)) {
        return PYOBJ_BYTES_MORE;
    }
    if (size > max) {
        return pt_error_set(err, PT_E_LIMIT, 0, "bytes at 0x%" PRIx64 " has %" PRIu64
                            " bytes, more than %zu", addr, size, max);
    }
    if (size > got - L->bytes.ob_sval) {
        return PYOBJ_BYTES_MORE;
    }
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    memcpy(copy, buf + L->bytes.ob_sval, size);
    *out = copy;
    *len = size;
    return 0;
}

int pyobj_read_bytes(struct proc *p, const struct py_layout *L, uint64_t addr, size_t max,
                     uint8_t **out, size_t *len, struct pt_error *err)
{
    uint8_t hdr[LIMIT_OBJECT_READ > 256 ? 256 : LIMIT_OBJECT_READ];
    uint64_t size;
    if (L->bytes.ob_sval > sizeof hdr) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "bytes header larger than expected");
    }
    if (proc_read_bytes(p, addr, hdr, L->bytes.ob_sval, err) < 0 ||
        !layout_read_u64(hdr, L->bytes.ob_sval, L->bytes.ob_size, &size)) {
        return pt_error_prefix(err, "bytes at 0x%" PRIx64, addr);
    }
    if (size > max) {
        return pt_error_set(err, PT_E_LIMIT, 0, "bytes at 0x%" PRIx64 " has %" PRIu64
                            " bytes, more than %zu", addr, size, max);
    }
    uint8_t *buf = malloc(size ? size : 1);
    if (buf == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    if (size > 0 && proc_read_bytes(p, addr + L->bytes.ob_sval, buf, size, err) < 0) {
        free(buf);
        return pt_error_prefix(err, "bytes data at 0x%" PRIx64, addr);
    }
    *out = buf;
    *len = size;
    return 0;
}
