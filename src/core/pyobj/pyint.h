/* pyint: read target int objects (thread idents, counts) as unsigned 64-bit values: 3.12+'s
 * tagged longs, the digit arrays before, and 2.7's PyInt (a C long). */
#ifndef PYTOP_CORE_PYINT_H
#define PYTOP_CORE_PYINT_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct py_layout;
struct pt_error;

/* Reads the int object at ADDR as an unsigned 64-bit value. Errors: PT_E_FORMAT (negative or
 * too large), PT_E_READ. */
int pyint_read_uint(struct proc *p, const struct py_layout *L, uint64_t addr, uint64_t *out,
                    struct pt_error *err);

enum {
    PYINT_UINT_DIGITS = 4, /* 30-bit digits a uint64 takes at most (15-bit: more, refused) */
    PYINT_UINT_READ = 64,  /* bytes of an int object that hold every digit of a uint64 */
};

/* The bytes of an int object pyint_uint_from_buf() needs (at most PYINT_UINT_READ); 0 when
 * the layout has no ints. */
size_t pyint_uint_len(const struct py_layout *L);

/* pyint_read_uint() of the int object at ADDR whose first LEN bytes are BUF (LEN at least
 * its digits' offset and PYINT_UINT_DIGITS digits: PT_E_BADLAYOUT otherwise). */
int pyint_uint_from_buf(const struct py_layout *L, const uint8_t *buf, size_t len,
                        uint64_t addr, uint64_t *out, struct pt_error *err);

#endif
