/* pyint: target int objects read as unsigned 64-bit values. */
#include "config.h"

#include "core/pyobj/pyint.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/util/error.h"

size_t pyint_uint_len(const struct py_layout *L)
{
    uint64_t want = layout_has(L->pylong.digits) ? L->pylong.digits + PYINT_UINT_DIGITS * 4
                    : layout_has(L->pylong.int_ival) ? L->pylong.int_ival + 8
                                                     : 0;
    return want <= PYINT_UINT_READ ? (size_t)want : 0;
}

int pyint_uint_from_buf(const struct py_layout *L, const uint8_t *buf, size_t len,
                        uint64_t addr, uint64_t *out, struct pt_error *err)
{
    uint64_t tag;
    uint64_t ndigits;
    uint64_t sign;
    /* 2.7: the ints pytop reads (thread idents, from PyInt_FromLong) are C longs. */
    if (!layout_has(L->pylong.digits) && layout_has(L->pylong.int_ival)) {
        if (!layout_read_u64(buf, len, L->pylong.int_ival, &tag)) {
            return pt_error_set(err, PT_E_BADLAYOUT, 0, "int layout unusable");
        }
        if ((int64_t)tag < 0) {
            return pt_error_set(err, PT_E_FORMAT, 0, "int at 0x%" PRIx64 " is negative", addr);
        }
        *out = tag;
        return 0;
    }
    if (!layout_has(L->pylong.digits) || L->pylong.digits + PYINT_UINT_DIGITS * 4 > len) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "int layout unusable");
    }
    bool tagged = layout_has(L->pylong.tag);
    if (!layout_read_u64(buf, len, tagged ? L->pylong.tag : L->pylong.ob_size, &tag)) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "int layout unusable");
    }
    if (tagged) {
        /* Sign bits: 0 positive, 1 zero, 2 negative (Include/cpython/longintrepr.h). */
        ndigits = tag >> L->pylong.non_size_bits;
        sign = tag & 3;
    } else {
        /* Before 3.12 ob_size is the digit count, negative for negative numbers. Negated as
         * unsigned: INT64_MIN, which a corrupt int may hold, has no signed negation. */
        ndigits = (int64_t)tag < 0 ? 0 - tag : tag;
        sign = (int64_t)tag < 0 ? 2 : tag == 0 ? 1 : 0;
    }
    if (sign == 1 || ndigits == 0) {
        *out = 0;
        return 0;
    }
    if (sign != 0 || ndigits * L->pylong.digit_bits > 64 + L->pylong.digit_bits ||
        ndigits > PYINT_UINT_DIGITS) {
        return pt_error_set(err, PT_E_FORMAT, 0, "int at 0x%" PRIx64 " is not a uint64", addr);
    }
    uint64_t v = 0;
    for (uint64_t i = ndigits; i-- > 0;) {
        uint64_t d = 0;
        layout_read_uint(buf, len, L->pylong.digits + i * 4, 4, &d);
        if (v >> (64 - L->pylong.digit_bits) != 0) {
            return pt_error_set(err, PT_E_FORMAT, 0, "int at 0x%" PRIx64 " overflows", addr);
        }
        v = (v << L->pylong.digit_bits) | d;
    }
    *out = v;
    return 0;
}

int pyint_read_uint(struct proc *p, const struct py_layout *L, uint64_t addr, uint64_t *out,
                    struct pt_error *err)
{
    uint8_t buf[PYINT_UINT_READ];
    if (!layout_has(L->pylong.digits) && layout_has(L->pylong.int_ival) &&
        L->pylong.int_ival + 8 <= sizeof buf) {
        if (proc_read_bytes(p, addr, buf, L->pylong.int_ival + 8, err) < 0) {
            return pt_error_prefix(err, "int at 0x%" PRIx64, addr);
        }
        return pyint_uint_from_buf(L, buf, L->pylong.int_ival + 8, addr, out, err);
    }
    size_t want = (size_t)L->pylong.digits + PYINT_UINT_DIGITS * 4;
    if (!layout_has(L->pylong.digits) || want > sizeof buf) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "int layout unusable");
    }
    memset(buf, 0, sizeof buf);
    /* The header and first digit, then the other digits only when the int has them. */
    if (proc_read_bytes(p, addr, buf, (size_t)L->pylong.digits + 4, err) < 0) {
        return pt_error_prefix(err, "int at 0x%" PRIx64, addr);
    }
    uint64_t tag = 0;
    bool tagged = layout_has(L->pylong.tag);
    layout_read_u64(buf, sizeof buf, tagged ? L->pylong.tag : L->pylong.ob_size, &tag);
    uint64_t ndigits = tagged ? tag >> L->pylong.non_size_bits
                              : ((int64_t)tag < 0 ? 0 - tag : tag);
    if (ndigits > 1 && ndigits <= PYINT_UINT_DIGITS &&
        proc_read_bytes(p, addr + L->pylong.digits + 4, buf + L->pylong.digits + 4,
                        (ndigits - 1) * 4, err) < 0) {
        return pt_error_prefix(err, "int digits at 0x%" PRIx64, addr);
    }
    return pyint_uint_from_buf(L, buf, want, addr, out, err);
}
