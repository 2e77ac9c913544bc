/* tables: the layouts of Python 3.8 to 3.12, read from pytop's generated per-version tables. */
#include "config.h"

#include "core/layout/layout.h"

#include <stddef.h>

#include "core/error.h"
#include "core/layout/debug_offsets.h"
#include "core/layout/gen.h"

/* The generated table of each minor version before 3.13, by minor. */
static const struct layout_gen *table_of(unsigned minor)
{
    switch (minor) {
    case 8:
        return &layout_gen_3_8;
    case 9:
        return &layout_gen_3_9;
    case 10:
        return &layout_gen_3_10;
    case 11:
        return &layout_gen_3_11;
    case 12:
        return &layout_gen_3_12;
    default:
        return NULL;
    }
}

bool layout_has_table(unsigned minor)
{
    return table_of(minor) != NULL;
}

/* The first of two generated offsets the version has. */
static uint64_t either(int64_t a, int64_t b)
{
    return layout_gen_offset(a >= 0 ? a : b);
}

static void fill_frames(const struct layout_gen *g, struct py_layout *L)
{
    /* 3.11 moved frames out of frame objects into _PyInterpreterFrame (Include/internal/
     * pycore_frame.h), reached through the thread's current _PyCFrame until 3.13. */
    if (g->iframe_header >= 0) {
        L->frames = FRAMES_INTERPRETER;
        L->thread.cframe = layout_gen_offset(g->thread_cframe);
        L->thread.current_frame = layout_gen_offset(g->cframe_current_frame);
        L->frame.size = (uint64_t)g->iframe_header;
        L->frame.previous = layout_gen_offset(g->iframe_previous);
        L->frame.executable = layout_gen_offset(g->iframe_code);
        L->frame.instr_ptr = layout_gen_offset(g->iframe_prev_instr);
        L->frame.owner = layout_gen_offset(g->iframe_owner);
        L->frame.instr_width = 8;
    } else {
        L->frames = FRAMES_OBJECTS;
        L->thread.current_frame = layout_gen_offset(g->thread_frame);
        L->frame.size = layout_gen_offset(g->frameobj_header);
        L->frame.previous = layout_gen_offset(g->frameobj_back);
        L->frame.executable = layout_gen_offset(g->frameobj_code);
        L->frame.instr_ptr = layout_gen_offset(g->frameobj_lasti);
        L->frame.owner = LAYOUT_NONE;
        L->frame.instr_width = 4;
    }
    L->thread.datastack_chunk = layout_gen_offset(g->thread_datastack_chunk);
    L->code.code_adaptive = g->code_code_adaptive >= 0 ? (uint64_t)g->code_code_adaptive : 0;
    /* With the bytecode inside the code object (3.11+) it is a variable-size object whose
     * ob_size counts the code units, at ob_size's offset in every such object
     * (Include/cpython/code.h: PyObject_VAR_HEAD). */
    L->code.ob_size =
        g->code_code_adaptive >= 0 ? layout_gen_offset(g->bytes_ob_size) : LAYOUT_NONE;
    /* co_lnotab until 3.9; 3.10's co_linetable has lines only; with 3.11's adaptive code
     * objects it became the location table with columns (Objects/locations.md). */
    if (g->code_lnotab >= 0) {
        L->linetable = LINETABLE_LNOTAB;
    } else if (g->code_code_adaptive >= 0) {
        L->linetable = LINETABLE_LOCATIONS;
    } else {
        L->linetable = LINETABLE_V310;
    }
    L->code.linetable = either(g->code_linetable, g->code_lnotab);
}

int layout_from_table(uint64_t hexversion, struct py_layout *L, struct pt_error *err)
{
    const struct layout_gen *g = table_of((unsigned)(hexversion >> 16) & 0xff);
    if ((hexversion >> 24) != 3 || g == NULL) {
        return pt_error_set(err, PT_E_UNSUPPORTED, 0, "no layout table for this version");
    }
    layout_apply_gen(g, L);
    L->hexversion = hexversion;
    L->free_threaded = false;
    L->runtime.size = layout_gen_offset(g->runtime_size);
    L->runtime.interpreters_head = layout_gen_offset(g->runtime_interpreters_head);
    L->runtime.main_thread = layout_gen_offset(g->runtime_main_thread);
    L->runtime.gil_locked = layout_gen_offset(g->runtime_gil_locked);
    L->runtime.gil_holder = layout_gen_offset(g->runtime_gil_holder);
    L->runtime.gc = layout_gen_offset(g->runtime_gc);
    L->runtime.gc_collecting = g->runtime_gc >= 0 ? (uint64_t)(g->runtime_gc + g->gc_collecting)
                                                  : LAYOUT_NONE;
    L->interp.id = layout_gen_offset(g->interp_id);
    L->interp.next = layout_gen_offset(g->interp_next);
    L->interp.threads_head = layout_gen_offset(g->interp_threads_head);
    L->interp.gc = layout_gen_offset(g->interp_gc);
    L->interp.imports_modules = layout_gen_offset(g->interp_modules);
    L->interp.gil_locked = layout_gen_offset(g->interp_gil_locked);
    L->interp.gil_holder = layout_gen_offset(g->interp_gil_holder);
    L->thread.size = layout_gen_offset(g->thread_size);
    L->thread.next = layout_gen_offset(g->thread_next);
    L->thread.interp = layout_gen_offset(g->thread_interp);
    L->thread.thread_id = layout_gen_offset(g->thread_thread_id);
    L->thread.native_thread_id = layout_gen_offset(g->thread_native_thread_id);
    L->thread.status = LAYOUT_NONE;
    L->thread.current_exception = either(g->thread_current_exception, g->thread_curexc);
    L->thread.exc_state_value = layout_gen_offset(g->thread_exc_state_value);
    fill_frames(g, L);
    L->code.size = layout_gen_offset(g->code_size);
    L->code.filename = layout_gen_offset(g->code_filename);
    L->code.name = layout_gen_offset(g->code_name);
    L->code.qualname = layout_gen_offset(g->code_qualname);
    L->code.firstlineno = layout_gen_offset(g->code_firstlineno);
    L->object.ob_type = layout_gen_offset(g->object_ob_type);
    L->bytes.size = layout_gen_offset(g->bytes_size);
    L->bytes.ob_size = layout_gen_offset(g->bytes_ob_size);
    L->bytes.ob_sval = layout_gen_offset(g->bytes_ob_sval);
    L->unicode.state = layout_gen_offset(g->unicode_state);
    L->unicode.length = layout_gen_offset(g->unicode_length);
    L->unicode.ascii_size = layout_gen_offset(g->unicode_ascii_size);
    L->gc.size = layout_gen_offset(g->gc_size);
    L->gc.collecting = layout_gen_offset(g->gc_collecting);
    return layout_validate(L, err);
}
