/* debug_offsets: the per-version readers of _Py_DebugOffsets, dispatched from layout.c only. */
#ifndef PYTOP_CORE_LAYOUT_DEBUG_OFFSETS_H
#define PYTOP_CORE_LAYOUT_DEBUG_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

struct py_layout;
struct pt_error;
struct layout_gen;

/* Each fills L from BLOB[0..LEN), the target's _Py_DebugOffsets of that minor version.
 * Errors: PT_E_BADLAYOUT when BLOB is shorter than the version's struct. */
int layout_v3_13_fill(const uint8_t *blob, size_t len, struct py_layout *L, struct pt_error *err);
int layout_v3_14_fill(const uint8_t *blob, size_t len, struct py_layout *L, struct pt_error *err);
int layout_v3_15_fill(const uint8_t *blob, size_t len, struct py_layout *L, struct pt_error *err);

/* Fills the parts of L that come from tools/gen-layout's table G (called first; a version's
 * debug offsets then override what they also describe). */
void layout_apply_gen(const struct layout_gen *g, struct py_layout *L);

/* Checks that every offset lies inside its struct and sizes are plausible; derives the GIL
 * source. Errors: PT_E_BADLAYOUT. */
int layout_validate(struct py_layout *L, struct pt_error *err);

/* A generated "absent" (-1) becomes LAYOUT_NONE. */
static inline uint64_t layout_gen_offset(int64_t v)
{
    return v < 0 ? UINT64_MAX : (uint64_t)v;
}

#endif
