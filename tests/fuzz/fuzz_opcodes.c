/* fuzz_opcodes: finding the instruction that owns a code unit (opcode_owner()) in arbitrary
 * bytecode, as --opcodes does with what 3.11 and 3.12 targets hold.
 *
 * Input: 1 byte choosing the version's table (any generated one), 2 bytes the unit asked for (host
 * order), then the bytecode. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout/opcodes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) {
        return 0;
    }
    const struct opcode_table *t = &opcode_tables[data[0] % opcode_tables_n];
    uint16_t at;
    memcpy(&at, data + 1, 2);
    const uint8_t *code = data + 3;
    size_t n = size - 3;
    long owner = opcode_owner(t, code, n, at);
    /* An owner starts an instruction at or before the unit, inside the code. */
    if (owner >= 0 && ((size_t)owner > at || (size_t)owner >= n || (owner & 1) != 0 ||
                       t->names[code[owner]] == NULL)) {
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        struct opcode_name d = opcode_describe(t, code[i]);
        if (d.name != NULL &&
            (d.base_name == NULL || (d.specialised != NULL) != (d.base != code[i]))) {
            abort();
        }
        size_t len = opcode_length(t, code[i]);
        if (len != (t->encoding == OPCODE_WORDCODE ? 2u : code[i] >= t->have_argument ? 3u : 1u)) {
            abort();
        }
    }
    return 0;
}
