/* v3_13: Python 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), as pytop reads it. */
#include "config.h"

#include "core/layout/debug_offsets.h"

#include <string.h>

#include "core/error.h"
#include "core/layout/gen.h"
#include "core/layout/layout.h"

/* Field for field the struct 3.13 embeds at the start of _PyRuntime. */
struct debug_offsets_3_13 {
    char cookie[8];
    uint64_t version;
    uint64_t free_threaded;
    struct {
        uint64_t size, finalizing, interpreters_head;
    } runtime_state;
    struct {
        uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
            gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
            gil_runtime_state_holder;
    } interpreter_state;
    struct {
        uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
            datastack_chunk, status;
    } thread_state;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner;
    } interpreter_frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
            localsplusnames, localspluskinds, co_code_adaptive;
    } code_object;
    struct {
        uint64_t size, ob_type;
    } pyobject;
    struct {
        uint64_t size, tp_name, tp_repr, tp_flags;
    } type_object;
    struct {
        uint64_t size, ob_item, ob_size;
    } tuple_object, list_object;
    struct {
        uint64_t size, ma_keys, ma_values;
    } dict_object;
    struct {
        uint64_t size, ob_fval;
    } float_object;
    struct {
        uint64_t size, lv_tag, ob_digit;
    } long_object;
    struct {
        uint64_t size, ob_size, ob_sval;
    } bytes_object;
    struct {
        uint64_t size, state, length, asciiobject_size;
    } unicode_object;
    struct {
        uint64_t size, collecting;
    } gc;
};

int layout_v3_13_fill(const uint8_t *blob, size_t len, struct py_layout *L, struct pt_error *err)
{
    struct debug_offsets_3_13 d;
    if (len < sizeof d) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "3.13 debug offsets truncated");
    }
    memcpy(&d, blob, sizeof d);
    layout_apply_gen(&layout_gen_3_13, L);

    L->runtime.size = d.runtime_state.size;
    L->runtime.finalizing = d.runtime_state.finalizing;
    L->runtime.interpreters_head = d.runtime_state.interpreters_head;

    L->interp.id = d.interpreter_state.id;
    L->interp.next = d.interpreter_state.next;
    L->interp.threads_head = d.interpreter_state.threads_head;
    L->interp.gc = d.interpreter_state.gc;
    L->interp.imports_modules = d.interpreter_state.imports_modules;
    L->interp.gil_locked = d.interpreter_state.gil_runtime_state_locked;
    L->interp.gil_holder = d.interpreter_state.gil_runtime_state_holder;
    L->gil_counts_every_switch = true;
    L->interp.size = d.interpreter_state.size;
    /* Every new code object takes its co_version from the interpreter's
     * func_state.next_version and bumps it (Objects/codeobject.c, init_code); the field's offset
     * differs between debug and release builds (layout_pick_build()). */
    L->code_marker = CODE_MARKER_NEXT_VERSION;

    L->thread.size = d.thread_state.size;
    L->thread.next = d.thread_state.next;
    L->thread.interp = d.thread_state.interp;
    L->thread.current_frame = d.thread_state.current_frame;
    L->thread.thread_id = d.thread_state.thread_id;
    L->thread.native_thread_id = d.thread_state.native_thread_id;
    L->thread.datastack_chunk = d.thread_state.datastack_chunk;
    L->thread.status = d.thread_state.status;

    L->frame.size = d.interpreter_frame.localsplus;
    L->frame.previous = d.interpreter_frame.previous;
    L->frame.executable = d.interpreter_frame.executable;
    L->frame.instr_ptr = d.interpreter_frame.instr_ptr;
    L->frame.owner = d.interpreter_frame.owner;

    L->code.size = d.code_object.size;
    L->code.filename = d.code_object.filename;
    L->code.name = d.code_object.name;
    L->code.qualname = d.code_object.qualname;
    L->code.linetable = d.code_object.linetable;
    L->code.firstlineno = d.code_object.firstlineno;
    L->code.code_adaptive = d.code_object.co_code_adaptive;
    /* A code object is a variable-size object: ob_size (its code units) sits where it does in
     * bytes objects (PyObject_VAR_HEAD). */
    L->code.ob_size = d.bytes_object.ob_size;
    L->linetable = LINETABLE_LOCATIONS;

    L->object.ob_type = d.pyobject.ob_type;
    L->bytes.size = d.bytes_object.size;
    L->bytes.ob_size = d.bytes_object.ob_size;
    L->bytes.ob_sval = d.bytes_object.ob_sval;
    L->unicode.state = d.unicode_object.state;
    L->unicode.length = d.unicode_object.length;
    L->unicode.ascii_size = d.unicode_object.asciiobject_size;

    L->gc.size = d.gc.size;
    L->gc.collecting = d.gc.collecting;
    return 0;
}
