/* pyobj: read Python str and bytes objects out of target memory, bounded. */
#ifndef PYTOP_CORE_PYOBJ_H
#define PYTOP_CORE_PYOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct py_layout;
struct pt_error;

/* What a str object's header says about its characters. */
struct pyobj_str_info {
    unsigned kind;        /* bytes per character: 1, 2 or 4 */
    uint64_t length;      /* characters */
    uint64_t data_off;    /* where the characters start, from the object's address */
    uint64_t data_bytes;  /* length * kind */
    bool raw;             /* 2.7's byte string: its bytes are given as they are */
};

/* Where the characters of an ASCII str start (2.7: a byte string's): how much of a str to
 * read to compare it with an ASCII name. */
uint64_t pyobj_str_ascii_off(const struct py_layout *L);

/* Parses the header of a compact str object from BUF[0..LEN) (which holds at least the
 * object's first L->unicode.ascii_size bytes). Errors: PT_E_FORMAT (not compact, bad kind),
 * PT_E_LIMIT (longer than LIMIT_STRING characters' worth of bytes is NOT an error: the caller
 * truncates), PT_E_BADLAYOUT. */
int pyobj_str_parse_header(const struct py_layout *L, const uint8_t *buf, size_t len,
                           struct pyobj_str_info *info, struct pt_error *err);

/* Converts N_CHARS characters of KIND bytes each at DATA[0..LEN) to UTF-8 in OUT (capacity CAP).
 * Lone surrogates are written as their 3-byte form (invalid UTF-8 that writers escape). Stops
 * at CAP, never splitting a character. Returns the bytes written; -1 (PT_E_FORMAT) when LEN is
 * too short or a code point is past U+10FFFF. */
long pyobj_str_to_utf8(unsigned kind, const uint8_t *data, size_t len, uint64_t n_chars,
                       char *out, size_t cap, struct pt_error *err);

/* Reads the str object at ADDR as UTF-8 into OUT (capacity CAP >= 4, at most LIMIT_STRING bytes
 * kept; longer strings are cut at a character boundary). Usually one read. Does not look at the
 * object's type (see pyobj_is_str()); a length not followed by the str's closing NUL is
 * PT_E_FORMAT. Returns the length, or -1: PT_E_READ, PT_E_FORMAT, PT_E_GONE. */
long pyobj_read_str(struct proc *p, const struct py_layout *L, uint64_t addr, char *out,
                    size_t cap, struct pt_error *err);

enum { PYOBJ_STR_MORE = -2 };

/* pyobj_read_str() of a str object whose first GOT bytes are BUF, without reading: the length,
 * -1 on an error (as pyobj_read_str(), without the address in the message), or PYOBJ_STR_MORE
 * (no error set) when BUF does not hold the characters and the NUL after them. */
long pyobj_str_from_buf(const struct py_layout *L, const uint8_t *buf, size_t got, char *out,
                        size_t cap, struct pt_error *err);

/* Whether the object at ADDR is a str (its type has the unicode-subclass flag); false when that
 * cannot be read or the layout does not say. */
bool pyobj_is_str(struct proc *p, const struct py_layout *L, uint64_t addr);

/* Reads the bytes object at ADDR into a malloc'd buffer (*OUT, *LEN), at most MAX bytes;
 * longer objects fail with PT_E_LIMIT. The caller frees *OUT. */
int pyobj_read_bytes(struct proc *p, const struct py_layout *L, uint64_t addr, size_t max,
                     uint8_t **out, size_t *len, struct pt_error *err);

enum { PYOBJ_BYTES_MORE = -2 };

/* pyobj_read_bytes() of the bytes object at ADDR whose first GOT bytes are BUF, without
 * reading: 0, -1 on an error, or PYOBJ_BYTES_MORE (no error set) when BUF does not hold it all. */
int pyobj_bytes_from_buf(const struct py_layout *L, const uint8_t *buf, size_t got,
                         uint64_t addr, size_t max, uint8_t **out, size_t *len,
                         struct pt_error *err);

#endif
