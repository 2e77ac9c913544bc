/* linetable: decode CPython's code-object line tables (lnotab, 3.10 linetable, 3.11+ locations). */
#ifndef PYTOP_CORE_LINETABLE_H
#define PYTOP_CORE_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

struct pt_error;

/* A source position; a field is -1 when the table does not say (or the format has no column). */
struct linetable_loc {
    int line;
    int end_line;
    int col;
    int end_col;
};

/* 3.11+ location table (co_linetable): the position of the instruction at code-unit index
 * ADDRQ (byte offset / 2). Returns 0, or -1 (PT_E_FORMAT) when the table is malformed or
 * ends before ADDRQ. */
int linetable_locations_find(const uint8_t *buf, size_t len, int firstlineno, uint32_t addrq,
                             struct linetable_loc *out, struct pt_error *err);

/* 3.10 co_linetable: the line of the instruction at byte offset LASTI (f_lasti * 2).
 * Only OUT->line is set (-1 for "no line"). */
int linetable_v310_find(const uint8_t *buf, size_t len, int firstlineno, uint32_t lasti,
                        struct linetable_loc *out, struct pt_error *err);

/* 3.8-3.9 (and older) co_lnotab: the line of the instruction at byte offset LASTI. Only
 * OUT->line is set. */
int linetable_lnotab_find(const uint8_t *buf, size_t len, int firstlineno, uint32_t lasti,
                          struct linetable_loc *out, struct pt_error *err);

/* linetable_lnotab_find() of a table whose line increments are unsigned bytes (until 3.5:
 * 2.7). */
int linetable_lnotab_unsigned_find(const uint8_t *buf, size_t len, int firstlineno,
                                   uint32_t lasti, struct linetable_loc *out,
                                   struct pt_error *err);

#endif
