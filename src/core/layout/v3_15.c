/* v3_15: Python 3.15's _Py_DebugOffsets (Include/internal/pycore_debug_offsets.h), as pytop reads it. */
#include "config.h"

#include "core/layout/debug_offsets.h"

#include <string.h>

#include "core/error.h"
#include "core/layout/gen.h"
#include "core/layout/layout.h"

/* Field for field the struct 3.15 embeds at the start of _PyRuntime. */
struct debug_offsets_3_15 {
    char cookie[8];
    uint64_t version;
    uint64_t free_threaded;
    struct {
        uint64_t size, finalizing, interpreters_head;
    } runtime_state;
    struct {
        uint64_t size, id, next, threads_head, threads_main, gc, imports_modules, sysdict,
            builtins, ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
            gil_runtime_state_locked, gil_runtime_state_holder, code_object_generation,
            tlbc_generation;
    } interpreter_state;
    struct {
        uint64_t size, prev, next, interp, current_frame, base_frame, last_profiled_frame,
            last_profiled_frame_seq, thread_id, native_thread_id, datastack_chunk, status,
            holds_gil, gil_requested, current_exception, exc_state;
    } thread_state;
    struct {
        uint64_t exc_value;
    } err_stackitem;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner, stackpointer,
            tlbc_index;
    } interpreter_frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
            localsplusnames, localspluskinds, co_code_adaptive, co_tlbc;
    } code_object;
    struct {
        uint64_t size, ob_type;
    } pyobject;
    struct {
        uint64_t size, tp_name, tp_repr, tp_flags, tp_basicsize, tp_dictoffset;
    } type_object;
    struct {
        uint64_t size, ht_cached_keys;
    } heap_type_object;
    struct {
        uint64_t size, ob_item, ob_size;
    } tuple_object, list_object;
    struct {
        uint64_t size, used, table, mask;
    } set_object;
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
        uint64_t size, state, length, asciiobject_size, compactunicodeobject_size;
    } unicode_object;
    struct {
        uint64_t size, collecting, frame, generation_stats_size, generation_stats;
    } gc;
    struct {
        uint64_t size, gi_name, gi_iframe, gi_frame_state;
    } gen_object;
    struct {
        uint64_t next, prev;
    } llist_node;
    struct {
        uint64_t eval_breaker, remote_debugger_support, remote_debugging_enabled,
            debugger_pending_call, debugger_script_path, debugger_script_path_size;
    } debugger_support;
};

int layout_v3_15_fill(const uint8_t *blob, size_t len, struct py_layout *L, struct pt_error *err)
{
    struct debug_offsets_3_15 d;
    if (len < sizeof d) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "3.15 debug offsets truncated");
    }
    memcpy(&d, blob, sizeof d);
    layout_apply_gen(&layout_gen_3_15, L);

    L->runtime.size = d.runtime_state.size;
    L->runtime.finalizing = d.runtime_state.finalizing;
    L->runtime.interpreters_head = d.runtime_state.interpreters_head;

    L->interp.id = d.interpreter_state.id;
    L->interp.next = d.interpreter_state.next;
    L->interp.threads_head = d.interpreter_state.threads_head;
    L->interp.threads_main = d.interpreter_state.threads_main;
    L->interp.gc = d.interpreter_state.gc;
    L->interp.imports_modules = d.interpreter_state.imports_modules;
    L->interp.gil_locked = d.interpreter_state.gil_runtime_state_locked;
    L->interp.gil_holder = d.interpreter_state.gil_runtime_state_holder;
    L->gil_counts_every_switch = true;
    L->interp.size = d.interpreter_state.size;
    L->interp.code_object_generation = d.interpreter_state.code_object_generation;
    L->code_marker = CODE_MARKER_GENERATION;

    L->thread.size = d.thread_state.size;
    L->thread.next = d.thread_state.next;
    L->thread.interp = d.thread_state.interp;
    L->thread.current_frame = d.thread_state.current_frame;
    /* A pointer to the sentinel frame that ends every chain (Include/cpython/pystate.h). */
    L->thread.base_frame = d.thread_state.base_frame;
    L->thread.thread_id = d.thread_state.thread_id;
    L->thread.native_thread_id = d.thread_state.native_thread_id;
    L->thread.datastack_chunk = d.thread_state.datastack_chunk;
    L->thread.status = d.thread_state.status;
    L->thread.holds_gil = d.thread_state.holds_gil;
    L->thread.gil_requested = d.thread_state.gil_requested;
    L->thread.current_exception = d.thread_state.current_exception;
    L->thread.exc_state_value = d.thread_state.exc_state + d.err_stackitem.exc_value;
    /* The chain's links (exc_info, previous_item) come from the generated table. */
    L->thread.exc_state = d.thread_state.exc_state;
    L->errstack.value = d.err_stackitem.exc_value;

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
    L->unicode.compact_size = d.unicode_object.compactunicodeobject_size;

    L->gen.size = d.gen_object.size;
    L->gen.gi_iframe = d.gen_object.gi_iframe;
    L->gen.gi_frame_state = d.gen_object.gi_frame_state;
    /* 3.15 keeps one more value above the awaited iterator while suspended in SEND (its
     * _remote_debugging reads stackpointer[-2], Modules/_remote_debugging/asyncio.c). */
    L->gen.await_slot = 2;
    L->frame_stackpointer = d.interpreter_frame.stackpointer;
    L->llist_next = d.llist_node.next;
    L->set.size = d.set_object.size;
    L->set.used = d.set_object.used;
    L->set.table = d.set_object.table;
    L->set.mask = d.set_object.mask;

    L->gc.size = d.gc.size;
    L->gc.collecting = d.gc.collecting;
    L->gc.frame = d.gc.frame;
    L->gc.generation_stats = d.gc.generation_stats;
    return 0;
}
