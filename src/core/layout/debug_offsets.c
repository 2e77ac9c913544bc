/* debug_offsets: fills a layout from a 3.13+ target's _Py_DebugOffsets, as its version's
 * generated description (layout_debug_of(), tools/gen-layout) says to read it. */
#include "config.h"

#include "core/layout/debug_offsets.h"

#include <stdbool.h>

#include "core/util/error.h"
#include "core/layout/gen.h"
#include "core/layout/layout.h"

/* The uint64_t of L at byte offset TO, which the description took from offsetof(struct
 * py_layout, ...). */
static uint64_t *slot(struct py_layout *L, uint32_t to)
{
    return (uint64_t *)(void *)((unsigned char *)L + to);
}

int debug_offsets_fill(const struct layout_debug_gen *d, unsigned minor, const uint8_t *blob,
                       size_t len, struct py_layout *L, struct pt_error *err)
{
    /* The whole struct must be there, not only the fields pytop reads: a target that gives
     * fewer bytes is not the version it claims. */
    if (len < d->size) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "3.%u debug offsets truncated", minor);
    }
    layout_apply_gen(d->gen, L);
    for (size_t i = 0; i < d->n_fields; i++) {
        const struct layout_debug_field *f = &d->fields[i];
        uint64_t v;
        if (!layout_read_u64(blob, len, f->at, &v)) {
            return pt_error_set(err, PT_E_BADLAYOUT, 0, "debug offsets end before %s", f->name);
        }
        /* An addition may wrap; layout_validate() bounds the sum like any other offset. */
        *slot(L, f->to) = f->add ? *slot(L, f->to) + v : v;
    }
    /* Every version with debug offsets switches the GIL through PyThreadState_Swap, and keeps
     * the location table in 3.11's format (Objects/locations.md). */
    L->gil_counts_every_switch = true;
    L->linetable = LINETABLE_LOCATIONS;
    /* Where the debug offsets name no generation counter, every new code object takes its
     * co_version from the interpreter's func_state.next_version and bumps it (3.13's
     * Objects/codeobject.c, init_code); that field's offset differs between debug and release
     * builds (layout_pick_build()). */
    L->code_marker = d->has_code_generation ? CODE_MARKER_GENERATION : CODE_MARKER_NEXT_VERSION;
    L->gen.await_slot = d->await_slot;
    return 0;
}
