/* opcodes: lookups in the generated instruction tables (gen_opcodes.c). */
#include "config.h"

#include "core/layout/opcodes.h"

const struct opcode_table *opcode_table_for(unsigned key)
{
    for (size_t i = 0; i < opcode_tables_n; i++) {
        if (opcode_tables[i].key == key) {
            return &opcode_tables[i];
        }
    }
    return NULL;
}

size_t opcode_length(const struct opcode_table *t, uint8_t op)
{
    if (t->encoding == OPCODE_BYTECODE) {
        return op >= t->have_argument ? 3 : 1;
    }
    return 2;
}

long opcode_owner(const struct opcode_table *t, const uint8_t *bytecode, size_t n, size_t at)
{
    size_t i = 0;
    size_t start = 0;
    if (t == NULL || t->caches == NULL || at >= n || (at & 1) != 0) {
        return -1;
    }
    /* Each step moves at least one unit: at most n / 2 steps. */
    while (i <= at) {
        uint8_t op = bytecode[i];
        if (t->names[op] == NULL) {
            return -1;
        }
        uint8_t base = t->base != NULL ? t->base[op] : op;
        start = i;
        i += 2 + 2 * (size_t)t->caches[base];
    }
    return (long)start;
}

struct opcode_name opcode_describe(const struct opcode_table *t, int op)
{
    struct opcode_name n = {NULL, op, NULL, NULL};
    if (t == NULL || op < 0 || op > 255 || t->names[op] == NULL) {
        return n;
    }
    n.name = t->names[op];
    n.base = t->base != NULL ? t->base[op] : op;
    n.base_name = t->names[n.base] != NULL ? t->names[n.base] : n.name;
    n.specialised = n.base != op ? n.name : NULL;
    return n;
}
