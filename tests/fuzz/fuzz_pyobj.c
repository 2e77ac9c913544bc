/* fuzz_pyobj: str headers and character data from hostile bytes (3's compact strs, 2.7's
 * byte strings). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/layout/layout.h"
#include "core/pyobj/pyobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct py_layout L = {0};
    struct pyobj_str_info info;
    char out[512];
    L.unicode.state = 32;
    L.unicode.length = 16;
    L.unicode.ascii_size = 40;
    L.unicode.compact_size = 56;
    L.unicode.kind_shift = 2;
    L.unicode.compact_bit = 5;
    L.unicode.ascii_bit = 6;
    if (pyobj_str_parse_header(&L, data, size, &info, NULL) == 0 && info.data_off <= size) {
        long n = pyobj_str_to_utf8(info.kind, data + info.data_off, size - info.data_off,
                                   info.length, out, sizeof out, NULL);
        if (n > (long)sizeof out) {
            __builtin_trap();
        }
    }
    /* 2.7: names are byte strings (PyStringObject), read with the bytes layout. */
    struct py_layout B = {0};
    B.str_is_bytes = true;
    B.bytes.ob_size = 16;
    B.bytes.ob_sval = 36;
    B.bytes.size = 40;
    long n = pyobj_str_from_buf(&B, data, size, out, sizeof out, NULL);
    if (n > (long)sizeof out) {
        __builtin_trap();
    }
    if (pyobj_str_parse_header(&B, data, size, &info, NULL) == 0 &&
        (info.kind != 1 || info.data_off != 36 || !info.raw)) {
        __builtin_trap();
    }
    return 0;
}
