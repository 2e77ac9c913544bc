/* debug_offsets: the one reader of _Py_DebugOffsets (3.13+), and what layout.c shares with it. */
#ifndef PYTOP_CORE_LAYOUT_DEBUG_OFFSETS_H
#define PYTOP_CORE_LAYOUT_DEBUG_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

struct py_layout;
struct pt_error;
struct layout_gen;
struct layout_debug_gen;

/* Fills L from BLOB[0..LEN), the target's _Py_DebugOffsets of minor version 3.MINOR, as that
 * version's description D says (layout_debug_of()), over the version's generated table.
 * Errors: PT_E_BADLAYOUT when BLOB is shorter than the version's struct. */
int debug_offsets_fill(const struct layout_debug_gen *d, unsigned minor, const uint8_t *blob,
                       size_t len, struct py_layout *L, struct pt_error *err);

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
