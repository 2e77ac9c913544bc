/* layout: pick pytop's definition of the target's version and check it is self-consistent. */
#include "config.h"

#include "core/layout/layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util/error.h"
#include "core/layout/debug_offsets.h"
#include "core/layout/gen.h"
#include "core/util/limits.h"

/* _Py_DebugOffsets starts with the cookie, then the version and free-threaded flag as uint64. */
enum {
    DEBUG_OFFSETS_VERSION_AT = 8,
    DEBUG_OFFSETS_FREE_THREADED_AT = 16,
    DEBUG_OFFSETS_HEADER = 24,
};

static const char DEBUG_COOKIE[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};

void layout_version_string(uint64_t hexversion, char *buf, size_t size)
{
    unsigned major = (unsigned)(hexversion >> 24) & 0xff;
    unsigned minor = (unsigned)(hexversion >> 16) & 0xff;
    unsigned micro = (unsigned)(hexversion >> 8) & 0xff;
    unsigned level = (unsigned)(hexversion >> 4) & 0xf;
    unsigned serial = (unsigned)hexversion & 0xf;
    const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : "";
    if (level == 0xf) {
        snprintf(buf, size, "%u.%u.%u", major, minor, micro);
    } else {
        snprintf(buf, size, "%u.%u.%u%s%u", major, minor, micro, tag, serial);
    }
}

const char *layout_supported(void)
{
    return "2.7 and 3.6 to 3.15";
}

void layout_apply_gen(const struct layout_gen *g, struct py_layout *L)
{
    /* Defaults for what only some versions have; a version's own reader overrides them. */
    L->frames = FRAMES_INTERPRETER;
    L->frame.instr_width = 8;
    L->thread.cframe = LAYOUT_NONE;
    L->runtime.main_thread = LAYOUT_NONE;
    L->runtime.gil_locked = LAYOUT_NONE;
    L->runtime.gil_holder = LAYOUT_NONE;
    L->runtime.gc = LAYOUT_NONE;
    L->runtime.gc_collecting = LAYOUT_NONE;
    L->gc.frame = LAYOUT_NONE;
    L->gc.generation_stats = LAYOUT_NONE;
    L->type.name = layout_gen_offset(g->type_name);
    L->interp.threads_main = layout_gen_offset(g->interp_threads_main);
    L->interp.code_object_generation = LAYOUT_NONE;
    L->interp.func_next_version = LAYOUT_NONE;
    L->interp.size = LAYOUT_NONE;
    L->code.version = layout_gen_offset(g->code_version);
    /* Where the headers declare the global counter new code objects take co_version from
     * (Objects/codeobject.c, init_code), it is the marker; a version's reader may name another. */
    L->code_marker = g->code_next_version_global == 4 && layout_has(L->code.version)
                         ? CODE_MARKER_GLOBAL_NEXT_VERSION
                         : CODE_MARKER_NONE;
    L->thread.base_frame = LAYOUT_NONE;
    L->thread.holds_gil = layout_gen_offset(g->thread_holds_gil);
    L->thread.holds_gil_bit = (int)g->thread_holds_gil_bit;
    L->gil_switch_from_holder = layout_gen_offset(g->gil_switch_from_holder);
    L->wait.gil_holder_at = layout_gen_offset(g->gil_holder_at);
    L->wait.gil_size = layout_gen_offset(g->gil_size);
    L->wait.code_names = layout_gen_offset(g->code_localsplusnames >= 0 ? g->code_localsplusnames
                                                                        : g->code_varnames);
    L->wait.frame_globals = layout_gen_offset(g->iframe_globals >= 0 ? g->iframe_globals
                                                                     : g->frameobj_globals);
    L->wait.frame_locals = layout_gen_offset(g->iframe_locals >= 0 ? g->iframe_locals
                                                                   : g->frameobj_locals);
    L->wait.tuple_size = layout_gen_offset(g->tuple_ob_size);
    L->wait.tuple_items = layout_gen_offset(g->tuple_ob_item);
    L->thread.gil_requested = LAYOUT_NONE;
    L->thread.current_exception = layout_gen_offset(g->thread_current_exception);
    L->thread.exc_state_value = layout_gen_offset(g->thread_exc_state_value);
    L->thread.exc_info = layout_gen_offset(g->thread_exc_info);
    L->thread.exc_state = layout_gen_offset(g->thread_exc_state);
    L->errstack.size = layout_gen_offset(g->err_stackitem_size);
    L->errstack.value = layout_gen_offset(g->err_stackitem_value);
    L->errstack.previous = layout_gen_offset(g->err_stackitem_previous);
    L->code.firsttraceable = layout_gen_offset(g->code_firsttraceable);
    L->frame.owner_generator = (int)g->frame_owned_by_generator;
    L->frame.owner_cstack = (int)g->frame_owned_by_cstack;
    L->frame.owner_interpreter = (int)g->frame_owned_by_interpreter;
    L->frame.running = layout_gen_offset(g->frameobj_executing);
    L->frame.running_value = (int)g->frameobj_executing_value;
    L->frame.unwinding_value = (int)g->frameobj_unwinding_value;
    L->frame.executable_tag_mask = g->stackref_tag_bits < 0 ? 0 : (uint64_t)g->stackref_tag_bits;
    L->unicode.compact_size = layout_gen_offset(g->unicode_compact_size);
    L->unicode.kind_shift = (unsigned)g->unicode_kind_shift;
    L->unicode.compact_bit = (unsigned)g->unicode_compact_bit;
    L->unicode.ascii_bit = (unsigned)g->unicode_ascii_bit;

    L->gen.size = LAYOUT_NONE;
    L->gen.gi_iframe = LAYOUT_NONE;
    L->gen.gi_frame_state = LAYOUT_NONE;
    L->gen.exc_state_before_frame = g->gen_iframe > g->gen_exc_state && g->gen_exc_state >= 0
                                        ? (uint64_t)(g->gen_iframe - g->gen_exc_state)
                                        : LAYOUT_NONE;
    L->gen.state_yield_from = (int)g->frame_suspended_yield_from_byte;
    L->gen.state_yield_from_locked = (int)g->frame_suspended_yield_from_locked_byte;
    L->gen.state_cleared = (int)g->frame_cleared_byte;
    L->gen.await_slot = 0;
    L->frame_stackpointer = LAYOUT_NONE;
    L->llist_next = LAYOUT_NONE;
    L->set.size = LAYOUT_NONE;
    L->set.used = LAYOUT_NONE;
    L->set.table = LAYOUT_NONE;
    L->set.mask = LAYOUT_NONE;
    L->flag_long_subclass = g->tpflags_long_subclass < 0 ? 0 : (uint64_t)g->tpflags_long_subclass;
    L->flag_str_subclass =
        g->tpflags_str_subclass < 0 ? 0 : (uint64_t)g->tpflags_str_subclass;

    L->module_dict = layout_gen_offset(g->module_md_dict);
    L->dict.size = layout_gen_offset(g->dict_size);
    L->dict.ma_keys = layout_gen_offset(g->dict_ma_keys);
    L->dict.ma_values = layout_gen_offset(g->dict_ma_values);
    L->dict.log2_size = layout_gen_offset(g->dict_keys_log2_size);
    L->dict.keys_size = layout_gen_offset(g->dict_keys_size);
    L->dict.log2_index_bytes = layout_gen_offset(g->dict_keys_log2_index_bytes);
    L->dict.kind = layout_gen_offset(g->dict_keys_kind);
    L->dict.nentries = layout_gen_offset(g->dict_keys_nentries);
    L->dict.indices = layout_gen_offset(g->dict_keys_indices);
    L->dict.kind_general = (int)g->dict_kind_general;
    L->dict.entry_size = layout_gen_offset(g->dict_entry_size);
    L->dict.entry_key = layout_gen_offset(g->dict_entry_key);
    L->dict.entry_value = layout_gen_offset(g->dict_entry_value);
    L->dict.uentry_size = layout_gen_offset(g->dict_uentry_size);
    L->dict.uentry_key = layout_gen_offset(g->dict_uentry_key);
    L->dict.uentry_value = layout_gen_offset(g->dict_uentry_value);
    L->dict.values_valid = layout_gen_offset(g->dict_values_valid);
    /* Before 3.11 a split dict's ma_values points at the values array itself. */
    L->dict.values_values = g->dict_values_values >= 0 ? (uint64_t)g->dict_values_values : 0;
    L->type.flags = layout_gen_offset(g->type_flags);
    L->type.basicsize = layout_gen_offset(g->type_basicsize);
    L->type.cached_keys = layout_gen_offset(g->heaptype_cached_keys);
    L->type.flag_inline_values = g->tpflags_inline_values < 0 ? 0 : (uint64_t)g->tpflags_inline_values;
    L->type.flag_managed_dict = g->tpflags_managed_dict < 0 ? 0 : (uint64_t)g->tpflags_managed_dict;
    L->type.managed_dict_offset = g->managed_dict_offset;
    L->type.has_managed_values = g->managed_values_ptr_offset != -1;
    L->type.managed_values_at = g->managed_values_ptr_offset;
    L->type.has_dict_or_values = g->managed_dict_or_values_offset != -1;
    L->type.dict_or_values_at = g->managed_dict_or_values_offset;
    L->type.dictoffset = layout_gen_offset(g->type_dictoffset);
    L->type.instance_in_dict = layout_gen_offset(g->instance_in_dict);
    L->type.instance_size = layout_gen_offset(g->instance_size);
    L->pylong.tag = layout_gen_offset(g->long_tag);
    L->pylong.ob_size = layout_gen_offset(g->long_ob_size);
    L->pylong.digits = layout_gen_offset(g->long_digits >= 0 ? g->long_digits : g->long_ob_digit);
    L->pylong.digit_bits = (unsigned)g->long_digit_bits;
    L->pylong.int_ival = layout_gen_offset(g->int_ob_ival);
    L->dict.ma_table = layout_gen_offset(g->dict_ma_table);
    L->dict.ma_mask = layout_gen_offset(g->dict_ma_mask);
    L->str_is_bytes = g->unicode_ascii_size < 0 && g->bytes_ob_sval >= 0;
    /* Of 2.7's dict (its small table inline) only the head is read: up to its table and mask. */
    if (layout_has(L->dict.ma_table) && layout_has(L->dict.ma_mask)) {
        uint64_t last = L->dict.ma_table > L->dict.ma_mask ? L->dict.ma_table : L->dict.ma_mask;
        uint64_t end = last + 8;
        L->dict.size = end < L->dict.size ? end : L->dict.size;
    }
    L->pylong.non_size_bits = (unsigned)g->long_non_size_bits;
}

/* An offset of a field of WIDTH bytes that must lie inside a struct of SIZE bytes, if present. */
static bool field_fits(uint64_t off, uint64_t width, uint64_t size)
{
    return off == LAYOUT_NONE || layout_field_fits(off, width, size);
}

void layout_pick_build(struct py_layout *L, bool ref_debug)
{
    size_t n = 0;
    const struct layout_build_gen *v =
        layout_build_variants(LAYOUT_VERSION_KEY(L->hexversion), &n);
    const struct layout_build_gen *pick = NULL;
    bool ambiguous = false;
    for (size_t i = 0; i < n; i++) {
        if ((v[i].ref_debug == 1) != ref_debug) {
            continue;
        }
        ambiguous |=
            pick != NULL && pick->interp_func_next_version != v[i].interp_func_next_version;
        pick = &v[i];
    }
    L->interp.func_next_version = LAYOUT_NONE;
    /* Two families of one kind that disagree leave the field unknown rather than guessed; the
     * interpreter state's size, where the debug offsets give it, bounds it. */
    if (pick != NULL && !ambiguous && pick->interp_func_next_version >= 0 &&
        (uint64_t)pick->interp_func_next_version < LIMIT_OBJECT_READ * 16ull &&
        (!layout_has(L->interp.size) ||
         field_fits((uint64_t)pick->interp_func_next_version, 4, L->interp.size))) {
        L->interp.func_next_version = (uint64_t)pick->interp_func_next_version;
    }
    if (L->code_marker == CODE_MARKER_NEXT_VERSION && !layout_has(L->interp.func_next_version)) {
        L->code_marker = CODE_MARKER_NONE;
    }
}

static int check_struct(const char *what, uint64_t size, uint64_t max, const uint64_t *offs,
                        size_t n, struct pt_error *err)
{
    if (size == 0 || size > max) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "%s size %" PRIu64 " is implausible", what,
                            size);
    }
    for (size_t i = 0; i < n; i++) {
        if (!field_fits(offs[i], 8, size)) {
            return pt_error_set(err, PT_E_BADLAYOUT, 0,
                                "%s field %zu at offset %" PRIu64 " lies outside its %" PRIu64
                                " bytes",
                                what, i, offs[i], size);
        }
    }
    return 0;
}

/* The GIL's switch_number beside its last_holder at HOLDER; LAYOUT_NONE when either is unknown. */
static uint64_t gil_switch(const struct py_layout *L, uint64_t holder)
{
    uint64_t off;
    if (!layout_has(holder) || !layout_has(L->gil_switch_from_holder) ||
        L->gil_switch_from_holder > 64 ||
        __builtin_add_overflow(holder, L->gil_switch_from_holder, &off) || off == LAYOUT_NONE) {
        return LAYOUT_NONE;
    }
    return off;
}

/* Every struct pytop reads whole must hold the fields it takes from it. */
int layout_validate(struct py_layout *L, struct pt_error *err)
{
    L->gil_source = layout_has(L->thread.holds_gil) ? GIL_FROM_THREAD
                    : L->thread.holds_gil_bit >= 0  ? GIL_FROM_STATUS_BIT
                                                    : GIL_FROM_HOLDER;
    L->runtime.gil_switch = gil_switch(L, L->runtime.gil_holder);
    L->interp.gil_switch = gil_switch(L, L->interp.gil_holder);
    const uint64_t thread[] = {L->thread.next, L->thread.interp, L->thread.current_frame,
                               L->thread.base_frame,
                               L->thread.thread_id, L->thread.native_thread_id,
                               L->thread.datastack_chunk, L->thread.status,
                               L->thread.holds_gil, L->thread.gil_requested,
                               L->thread.current_exception, L->thread.exc_state_value,
                               L->thread.exc_info};
    const uint64_t frame[] = {L->frame.previous, L->frame.executable, L->frame.instr_ptr};
    const uint64_t code[] = {L->code.filename, L->code.name, L->code.qualname,
                             L->code.linetable, L->object.ob_type};
    const uint64_t bytes[] = {L->bytes.ob_size, L->object.ob_type};
    const uint64_t runtime[] = {L->runtime.interpreters_head};
    /* Structs read whole must fit the read buffers; the runtime is only read field by field. */
    if (check_struct("thread state", L->thread.size, LIMIT_OBJECT_READ, thread,
                     sizeof thread / sizeof thread[0], err) < 0 ||
        check_struct("interpreter frame", L->frame.size, LAYOUT_FRAME_HEADER_MAX, frame,
                     sizeof frame / sizeof frame[0], err) < 0 ||
        check_struct("code object", L->code.size, LIMIT_OBJECT_READ, code,
                     sizeof code / sizeof code[0], err) < 0 ||
        check_struct("bytes object", L->bytes.size, LIMIT_OBJECT_READ, bytes,
                     sizeof bytes / sizeof bytes[0], err) < 0 ||
        check_struct("runtime state", L->runtime.size, UINT32_MAX, runtime, 1, err) < 0) {
        return -1;
    }
    if (!field_fits(L->frame.owner, 1, L->frame.size) ||
        !field_fits(L->frame.running, 1, L->frame.size) ||
        !field_fits(L->code.firstlineno, 4, L->code.size) ||
        !field_fits(L->code.firsttraceable, 4, L->code.size) ||
        !field_fits(L->code.version, 4, L->code.size) ||
        (layout_has(L->thread.exc_state) &&
         (!field_fits(L->thread.exc_state, L->errstack.size, L->thread.size) ||
          L->errstack.size > 64 || !field_fits(L->errstack.value, 8, L->errstack.size) ||
          !field_fits(L->errstack.previous, 8, L->errstack.size))) ||
        (layout_has(L->gen.exc_state_before_frame) &&
         L->gen.exc_state_before_frame > LAYOUT_FRAME_PREFIX_MAX) ||
        L->code.code_adaptive > L->code.size + 64 || L->bytes.ob_sval > L->bytes.size ||
        /* 2.7 has no compact (PEP 393) strings: no unicode layout at all. */
        (layout_has(L->unicode.ascii_size) &&
         (L->unicode.ascii_size > 256 || !field_fits(L->unicode.state, 4, L->unicode.ascii_size) ||
          !field_fits(L->unicode.length, 8, L->unicode.ascii_size) ||
          L->unicode.kind_shift > 29 || L->unicode.compact_bit > 31 ||
          L->unicode.ascii_bit > 31)) ||
        (layout_has(L->unicode.compact_size) && L->unicode.compact_size > 256) ||
        L->thread.holds_gil_bit > 31 ||
        (layout_has(L->pylong.tag) && (L->pylong.digit_bits == 0 || L->pylong.digit_bits > 32 ||
                                       L->pylong.non_size_bits > 8))) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "debug offsets are inconsistent");
    }
    L->max_struct = L->thread.size > L->code.size ? L->thread.size : L->code.size;
    return 0;
}

int layout_from_debug_offsets(const uint8_t *blob, size_t len, struct py_layout *L,
                              struct pt_error *err)
{
    uint64_t version;
    uint64_t free_threaded;
    if (len < DEBUG_OFFSETS_HEADER || memcmp(blob, DEBUG_COOKIE, sizeof DEBUG_COOKIE) != 0) {
        return pt_error_set(err, PT_E_NOTPY, 0, "no _Py_DebugOffsets cookie");
    }
    layout_read_u64(blob, len, DEBUG_OFFSETS_VERSION_AT, &version);
    layout_read_u64(blob, len, DEBUG_OFFSETS_FREE_THREADED_AT, &free_threaded);
    memset(L, 0, sizeof *L);
    L->hexversion = version;
    L->free_threaded = free_threaded != 0;

    char vs[32];
    layout_version_string(version, vs, sizeof vs);
    if (L->free_threaded) {
        return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                            "Python %s free-threaded build is not supported yet (GIL builds of "
                            "%s are)",
                            vs, layout_supported());
    }
    unsigned major = (unsigned)(version >> 24) & 0xff;
    unsigned minor = (unsigned)(version >> 16) & 0xff;
    const struct layout_debug_gen *d = major == 3 ? layout_debug_of(minor) : NULL;
    if (d == NULL) {
        return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                            "Python %s is not supported (pytop reads %s)", vs,
                            layout_supported());
    }
    int rc = debug_offsets_fill(d, minor, blob, len, L, err);
    if (rc < 0 || layout_validate(L, err) < 0) {
        return pt_error_prefix(err, "Python %s", vs);
    }
    return 0;
}
