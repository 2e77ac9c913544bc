/* tables: the layouts of Python 2.7 and 3.6 to 3.12, from pytop's generated per-version tables. */
#include "config.h"

#include "core/layout/layout.h"

#include <stddef.h>
#include <string.h>

#include "core/util/error.h"
#include "core/layout/debug_offsets.h"
#include "core/layout/gen.h"

/* The generated table of each version before 3.13, by LAYOUT_VERSION_KEY(). */
static const struct layout_gen *table_of(unsigned key)
{
    switch (key) {
    case 0x0207:
        return &layout_gen_2_7;
    case 0x0306:
        return &layout_gen_3_6;
    case 0x0307:
        return &layout_gen_3_7;
    case 0x0308:
        return &layout_gen_3_8;
    case 0x0309:
        return &layout_gen_3_9;
    case 0x030a:
        return &layout_gen_3_10;
    case 0x030b:
        return &layout_gen_3_11;
    case 0x030c:
        return &layout_gen_3_12;
    default:
        return NULL;
    }
}

bool layout_has_table(unsigned key)
{
    return table_of(key) != NULL;
}

/* A generated offset and the uint64_t of struct py_layout it fills: LAYOUT_NONE where the
 * version lacks it (layout_gen_offset()). */
struct table_slot {
    size_t gen; /* offsetof(struct layout_gen, ...), an int64_t */
    size_t to;  /* offsetof(struct py_layout, ...), a uint64_t */
};

/* What every table before 3.13 gives the same way. */
static const struct table_slot BASE_SLOTS[] = {
    {offsetof(struct layout_gen, runtime_size), offsetof(struct py_layout, runtime.size)},
    {offsetof(struct layout_gen, runtime_interpreters_head),
     offsetof(struct py_layout, runtime.interpreters_head)},
    {offsetof(struct layout_gen, runtime_main_thread),
     offsetof(struct py_layout, runtime.main_thread)},
    {offsetof(struct layout_gen, runtime_gil_locked),
     offsetof(struct py_layout, runtime.gil_locked)},
    {offsetof(struct layout_gen, runtime_gil_holder),
     offsetof(struct py_layout, runtime.gil_holder)},
    {offsetof(struct layout_gen, runtime_gc), offsetof(struct py_layout, runtime.gc)},
    {offsetof(struct layout_gen, interp_id), offsetof(struct py_layout, interp.id)},
    {offsetof(struct layout_gen, interp_next), offsetof(struct py_layout, interp.next)},
    {offsetof(struct layout_gen, interp_threads_head),
     offsetof(struct py_layout, interp.threads_head)},
    {offsetof(struct layout_gen, interp_gc), offsetof(struct py_layout, interp.gc)},
    {offsetof(struct layout_gen, interp_modules),
     offsetof(struct py_layout, interp.imports_modules)},
    {offsetof(struct layout_gen, interp_gil_locked), offsetof(struct py_layout, interp.gil_locked)},
    {offsetof(struct layout_gen, interp_gil_holder), offsetof(struct py_layout, interp.gil_holder)},
    {offsetof(struct layout_gen, thread_size), offsetof(struct py_layout, thread.size)},
    {offsetof(struct layout_gen, thread_next), offsetof(struct py_layout, thread.next)},
    {offsetof(struct layout_gen, thread_interp), offsetof(struct py_layout, thread.interp)},
    {offsetof(struct layout_gen, thread_thread_id), offsetof(struct py_layout, thread.thread_id)},
    {offsetof(struct layout_gen, thread_native_thread_id),
     offsetof(struct py_layout, thread.native_thread_id)},
    {offsetof(struct layout_gen, thread_exc_state_value),
     offsetof(struct py_layout, thread.exc_state_value)},
    {offsetof(struct layout_gen, thread_datastack_chunk),
     offsetof(struct py_layout, thread.datastack_chunk)},
    {offsetof(struct layout_gen, code_size), offsetof(struct py_layout, code.size)},
    {offsetof(struct layout_gen, code_filename), offsetof(struct py_layout, code.filename)},
    {offsetof(struct layout_gen, code_name), offsetof(struct py_layout, code.name)},
    {offsetof(struct layout_gen, code_qualname), offsetof(struct py_layout, code.qualname)},
    {offsetof(struct layout_gen, code_firstlineno), offsetof(struct py_layout, code.firstlineno)},
    {offsetof(struct layout_gen, object_ob_type), offsetof(struct py_layout, object.ob_type)},
    {offsetof(struct layout_gen, bytes_size), offsetof(struct py_layout, bytes.size)},
    {offsetof(struct layout_gen, bytes_ob_size), offsetof(struct py_layout, bytes.ob_size)},
    {offsetof(struct layout_gen, bytes_ob_sval), offsetof(struct py_layout, bytes.ob_sval)},
    {offsetof(struct layout_gen, unicode_state), offsetof(struct py_layout, unicode.state)},
    {offsetof(struct layout_gen, unicode_length), offsetof(struct py_layout, unicode.length)},
    {offsetof(struct layout_gen, unicode_ascii_size),
     offsetof(struct py_layout, unicode.ascii_size)},
    {offsetof(struct layout_gen, gc_size), offsetof(struct py_layout, gc.size)},
    {offsetof(struct layout_gen, gc_collecting), offsetof(struct py_layout, gc.collecting)},
};

/* 3.11 moved frames out of frame objects into _PyInterpreterFrame (Include/internal/
 * pycore_frame.h), reached through the thread's current _PyCFrame until 3.13. */
static const struct table_slot IFRAME_SLOTS[] = {
    {offsetof(struct layout_gen, thread_cframe), offsetof(struct py_layout, thread.cframe)},
    {offsetof(struct layout_gen, cframe_current_frame),
     offsetof(struct py_layout, thread.current_frame)},
    {offsetof(struct layout_gen, iframe_header), offsetof(struct py_layout, frame.size)},
    {offsetof(struct layout_gen, iframe_previous), offsetof(struct py_layout, frame.previous)},
    {offsetof(struct layout_gen, iframe_code), offsetof(struct py_layout, frame.executable)},
    {offsetof(struct layout_gen, iframe_prev_instr), offsetof(struct py_layout, frame.instr_ptr)},
    {offsetof(struct layout_gen, iframe_owner), offsetof(struct py_layout, frame.owner)},
};

/* Before, a thread's frames were PyFrameObjects chained through f_back. */
static const struct table_slot FRAMEOBJ_SLOTS[] = {
    {offsetof(struct layout_gen, thread_frame), offsetof(struct py_layout, thread.current_frame)},
    {offsetof(struct layout_gen, frameobj_header), offsetof(struct py_layout, frame.size)},
    {offsetof(struct layout_gen, frameobj_back), offsetof(struct py_layout, frame.previous)},
    {offsetof(struct layout_gen, frameobj_code), offsetof(struct py_layout, frame.executable)},
    {offsetof(struct layout_gen, frameobj_lasti), offsetof(struct py_layout, frame.instr_ptr)},
};

static void fill_slots(const struct layout_gen *g, const struct table_slot *slots, size_t n,
                       struct py_layout *L)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        memcpy(&v, (const unsigned char *)g + slots[i].gen, sizeof v);
        uint64_t off = layout_gen_offset(v);
        memcpy((unsigned char *)L + slots[i].to, &off, sizeof off);
    }
}

/* The first of two generated offsets the version has. */
static uint64_t either(int64_t a, int64_t b)
{
    return layout_gen_offset(a >= 0 ? a : b);
}

static void fill_frames(const struct layout_gen *g, struct py_layout *L)
{
    if (g->iframe_header >= 0) {
        L->frames = FRAMES_INTERPRETER;
        fill_slots(g, IFRAME_SLOTS, sizeof IFRAME_SLOTS / sizeof IFRAME_SLOTS[0], L);
        L->frame.instr_width = 8;
    } else {
        L->frames = FRAMES_OBJECTS;
        fill_slots(g, FRAMEOBJ_SLOTS, sizeof FRAMEOBJ_SLOTS / sizeof FRAMEOBJ_SLOTS[0], L);
        L->frame.owner = LAYOUT_NONE;
        L->frame.instr_width = 4;
    }
    L->code.code_adaptive = g->code_code_adaptive >= 0 ? (uint64_t)g->code_code_adaptive : 0;
    L->code.code = layout_gen_offset(g->code_code);
    /* With the bytecode inside the code object (3.11+) it is a variable-size object whose
     * ob_size counts the code units, at ob_size's offset in every such object
     * (Include/cpython/code.h: PyObject_VAR_HEAD). */
    L->code.ob_size =
        g->code_code_adaptive >= 0 ? layout_gen_offset(g->bytes_ob_size) : LAYOUT_NONE;
    /* co_lnotab until 3.9; 3.10's co_linetable has lines only; with 3.11's adaptive code
     * objects it became the location table with columns (Objects/locations.md). */
    if (g->code_lnotab >= 0) {
        L->linetable =
            g->lnotab_unsigned_lines == 1 ? LINETABLE_LNOTAB_UNSIGNED : LINETABLE_LNOTAB;
    } else if (g->code_code_adaptive >= 0) {
        L->linetable = LINETABLE_LOCATIONS;
    } else {
        L->linetable = LINETABLE_V310;
    }
    L->code.linetable = either(g->code_linetable, g->code_lnotab);
}

/* 3.7 has _PyRuntime but keeps the main thread's ident in Modules/signalmodule.c. */
static const struct layout_global GLOBALS_3_7[] = {
    {"main_thread", "signalmodule.c", offsetof(struct py_layout, runtime.main_thread), false},
};

/* Before 3.7 the runtime is globals of Python/pystate.c (interp_head, the list of
 * interpreters, and _PyThreadState_Current), the main thread's ident in
 * Modules/signalmodule.c, set at start-up (Python/ceval.c has a main_thread of its own, set
 * only once a second thread starts), and the GIL's switch count. */
static const struct layout_global GLOBALS_OLD[] = {
    {"interp_head", NULL, offsetof(struct py_layout, runtime.interpreters_head), true},
    {"_PyThreadState_Current", NULL, offsetof(struct py_layout, runtime.gil_holder), false},
    {"main_thread", "signalmodule.c", offsetof(struct py_layout, runtime.main_thread), false},
    /* 3.2's GIL counts its switches (Python/ceval_gil.h, in ceval.c); 2.7's has no count. */
    {"gil_switch_number", "ceval.c", offsetof(struct py_layout, runtime.gil_switch), false},
    /* Whether a collection runs (Modules/gcmodule.c), read with the runtime's fields. */
    {"collecting", "gcmodule.c", offsetof(struct py_layout, runtime.gc_collecting), false},
};

const struct layout_global *layout_globals(const struct py_layout *L, size_t *n)
{
    const struct layout_gen *g = table_of(LAYOUT_VERSION_KEY(L->hexversion));
    if (g == NULL || (layout_has(L->runtime.main_thread) && !L->runtime.globals_only)) {
        *n = 0;
        return NULL;
    }
    if (L->runtime.globals_only) {
        *n = sizeof GLOBALS_OLD / sizeof GLOBALS_OLD[0];
        return GLOBALS_OLD;
    }
    *n = sizeof GLOBALS_3_7 / sizeof GLOBALS_3_7[0];
    return GLOBALS_3_7;
}

int layout_from_table(uint64_t hexversion, struct py_layout *L, struct pt_error *err)
{
    const struct layout_gen *g = table_of(LAYOUT_VERSION_KEY(hexversion));
    if (g == NULL) {
        return pt_error_set(err, PT_E_UNSUPPORTED, 0, "no layout table for this version");
    }
    layout_apply_gen(g, L);
    L->hexversion = hexversion;
    L->free_threaded = false;
    fill_slots(g, BASE_SLOTS, sizeof BASE_SLOTS / sizeof BASE_SLOTS[0], L);
    /* No _PyRuntimeState: the runtime is globals (layout_globals()), the list of interpreters
     * the first; runtime.c finds the rest and widens the size to cover them. */
    L->runtime.globals_only = g->runtime_size < 0;
    if (L->runtime.globals_only) {
        L->runtime.size = 8;
        L->runtime.interpreters_head = 0;
    }
    L->runtime.gc_collecting = g->runtime_gc >= 0 ? (uint64_t)(g->runtime_gc + g->gc_collecting)
                                                  : LAYOUT_NONE;
    L->thread.status = LAYOUT_NONE;
    L->thread.current_exception = either(g->thread_current_exception, g->thread_curexc);
    /* Before 3.7 the exception being handled is the thread state's own exc_type (with
     * exc_value and exc_traceback), a running generator's swapped in while it runs. */
    L->thread.exc_state_value = either(g->thread_exc_state_value, g->thread_exc_type);
    fill_frames(g, L);
    return layout_validate(L, err);
}
