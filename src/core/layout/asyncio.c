/* layout/asyncio: how to read asyncio's task registries, from tools/gen-asyncio-layout's
 * tables. */
#include "config.h"

#include "core/layout/asyncio.h"

#include <stdbool.h>
#include <stddef.h>

#include "core/util/error.h"
#include "core/layout/debug_offsets.h"
#include "core/layout/gen_asyncio.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"

/* The generated table of each version, by LAYOUT_VERSION_KEY(). */
static const struct layout_asyncio_gen *table_of(unsigned key)
{
    switch (key) {
    case 0x0306:
        return &layout_asyncio_gen_3_6;
    case 0x0307:
        return &layout_asyncio_gen_3_7;
    case 0x0308:
        return &layout_asyncio_gen_3_8;
    case 0x0309:
        return &layout_asyncio_gen_3_9;
    case 0x030a:
        return &layout_asyncio_gen_3_10;
    case 0x030b:
        return &layout_asyncio_gen_3_11;
    case 0x030c:
        return &layout_asyncio_gen_3_12;
    case 0x030d:
        return &layout_asyncio_gen_3_13;
    case 0x030e:
        return &layout_asyncio_gen_3_14;
    case 0x030f:
        return &layout_asyncio_gen_3_15;
    default:
        return NULL;
    }
}

/* A field that is either absent or inside SIZE bytes. */
static bool absent_or_within(uint64_t off, uint64_t size)
{
    return !layout_has(off) || off < size;
}

/* The frame fields: a frame object behind gi_frame (up to 3.10), or the interpreter frame
 * embedded at gi_iframe (3.11+). Which stack fields the headers have says where the stack's top
 * is; which opcodes they have, how a delegating coroutine is recognised. */
static bool fill_frames(const struct layout_asyncio_gen *g, const struct py_layout *L,
                        struct layout_asyncio *A)
{
    A->gen_frame = layout_gen_offset(g->gen_frame);
    A->gen_iframe = layout_gen_offset(g->gen_iframe);
    A->gen_frame_state = layout_gen_offset(g->gen_frame_state);
    A->code_code = layout_gen_offset(g->code_code);
    A->op_yield_from = (int)g->op_yield_from;
    A->state_created = (int)g->frame_created_byte;
    /* f_lasti counts code units from 3.10, bytes before (as code.c reads it). */
    A->lasti_scale = L->linetable == LINETABLE_V310 ? 2 : 1;
    const int64_t ops[LAYOUT_ASYNCIO_RESUME_OPS] = {g->op_resume, g->op_resume_quick,
                                                    g->op_instrumented_resume, g->op_resume_check};
    for (size_t i = 0; i < LAYOUT_ASYNCIO_RESUME_OPS; i++) {
        A->op_resume[i] = (int)ops[i];
    }
    if (g->frameobj_stacktop >= 0) {
        A->stack = LAYOUT_STACK_POINTER;
        A->stack_top = (uint64_t)g->frameobj_stacktop;
        A->stack_base = LAYOUT_NONE;
    } else if (g->frameobj_stackdepth >= 0) {
        A->stack = LAYOUT_STACK_DEPTH;
        A->stack_top = (uint64_t)g->frameobj_stackdepth;
        A->stack_base = layout_gen_offset(g->frameobj_valuestack);
    } else if (g->iframe_stackpointer >= 0) {
        /* How far below the stack pointer a suspended `await` keeps its delegate is the
         * version's debug-offsets knowledge (py_layout). */
        A->stack = LAYOUT_STACK_FRAME_POINTER;
        A->stack_top = (uint64_t)g->iframe_stackpointer;
        A->stack_base = LAYOUT_NONE;
        A->await_slot = L->gen.await_slot;
    } else {
        A->stack = LAYOUT_STACK_LOCALSPLUS;
        A->stack_top = layout_gen_offset(g->iframe_stacktop);
        A->stack_base = layout_gen_offset(g->iframe_localsplus);
    }
    if (g->gen_frame >= 0) {
        A->yield_from = LAYOUT_YF_NEXT_OPCODE;
        return g->op_yield_from >= 0 && g->code_code >= 0 && L->frames == FRAMES_OBJECTS &&
               (A->stack != LAYOUT_STACK_DEPTH || layout_has(A->stack_base));
    }
    /* 3.13 marks a generator suspended in a delegation by its state. */
    A->yield_from = L->gen.state_yield_from >= 0 ? LAYOUT_YF_FRAME_STATE : LAYOUT_YF_RESUME_OPARG;
    bool stack_ok = A->stack == LAYOUT_STACK_FRAME_POINTER
                        ? A->await_slot > 0 && A->await_slot <= 4 &&
                              A->yield_from == LAYOUT_YF_FRAME_STATE &&
                              A->stack_top + 8 <= L->frame.size
                        : A->stack == LAYOUT_STACK_LOCALSPLUS && layout_has(A->stack_top) &&
                              layout_has(A->stack_base);
    /* Where the debug offsets also say where things are, the two sources must agree. */
    bool agrees = (!layout_has(L->gen.gi_iframe) || L->gen.gi_iframe == A->gen_iframe) &&
                  (!layout_has(L->gen.gi_frame_state) ||
                   L->gen.gi_frame_state == A->gen_frame_state) &&
                  (!layout_has(L->frame_stackpointer) || A->stack != LAYOUT_STACK_FRAME_POINTER ||
                   L->frame_stackpointer == A->stack_top);
    return L->frames == FRAMES_INTERPRETER && layout_has(A->gen_iframe) &&
           layout_has(A->gen_frame_state) && stack_ok && agrees && g->op_resume >= 0 &&
           L->gen.state_cleared >= 0;
}

int layout_asyncio_select(const struct py_layout *L, struct layout_asyncio *A, struct pt_error *err)
{
    const struct layout_asyncio_gen *g = table_of(LAYOUT_VERSION_KEY(L->hexversion));
    if (g == NULL) {
        return pt_error_set(err, PT_E_UNSUPPORTED, 0, "no asyncio table for this version");
    }
    A->registry_weak = g->registry_weak;
    A->registry_strong = g->registry_strong;
    A->registry_owner = g->registry_owner;
    A->registry_c_symbol = g->registry_c_symbol;
    A->task.size = layout_gen_offset(g->task_size);
    A->task.loop = layout_gen_offset(g->task_loop);
    A->task.callback0 = layout_gen_offset(g->task_callback0);
    A->task.callbacks = layout_gen_offset(g->task_callbacks);
    A->task.state = layout_gen_offset(g->task_state);
    A->task.fut_waiter = layout_gen_offset(g->task_fut_waiter);
    A->task.coro = layout_gen_offset(g->task_coro);
    A->task.name = layout_gen_offset(g->task_name);
    A->state_pending = (int)g->state_pending;
    A->state_cancelled = (int)g->state_cancelled;
    A->state_finished = (int)g->state_finished;
    A->weakref_object = layout_gen_offset(g->weakref_object);
    A->set.size = layout_gen_offset(g->set_size);
    A->set.used = layout_gen_offset(g->set_used);
    A->set.mask = layout_gen_offset(g->set_mask);
    A->set.table = layout_gen_offset(g->set_table);
    A->set.entry_size = layout_gen_offset(g->setentry_size);
    A->set.entry_key = layout_gen_offset(g->setentry_key);
    A->set.entry_hash = layout_gen_offset(g->setentry_hash);
    A->list_size = layout_gen_offset(g->list_ob_size);
    A->list_item = layout_gen_offset(g->list_ob_item);
    A->tuple_size = layout_gen_offset(g->tuple_ob_size);
    A->tuple_item = layout_gen_offset(g->tuple_ob_item);
    A->method_func = layout_gen_offset(g->method_func);
    A->method_self = layout_gen_offset(g->method_self);
    A->function_name = layout_gen_offset(g->function_name);
    A->type_base = layout_gen_offset(g->type_base);
    A->module_md_state = layout_gen_offset(g->module_md_state);
    A->modstate.size = layout_gen_offset(g->modstate_size);
    A->modstate.non_asyncio_tasks = layout_gen_offset(g->modstate_non_asyncio_tasks);
    A->modstate.non_asyncio_eager_tasks = layout_gen_offset(g->modstate_non_asyncio_eager_tasks);
    A->modstate.debug_offsets = layout_gen_offset(g->modstate_debug_offsets);
    A->int_task_names = g->modstate_int_task_names > 0;
    uint64_t end = 0;
    bool task_ok = A->task.size <= LIMIT_OBJECT_READ && A->task.loop < A->task.size &&
                   absent_or_within(A->task.callback0, A->task.size) &&
                   A->task.callbacks < A->task.size && A->task.state < A->task.size &&
                   A->task.fut_waiter < A->task.size && A->task.coro < A->task.size &&
                   absent_or_within(A->task.name, A->task.size);
    bool set_ok = A->set.size <= LIMIT_OBJECT_READ && A->set.used < A->set.size &&
                  A->set.mask < A->set.size && A->set.table < A->set.size &&
                  A->set.entry_size >= 16 && A->set.entry_key < A->set.entry_size &&
                  A->set.entry_hash < A->set.entry_size;
    /* The state's fields are used only when all of them fit in it. */
    bool state_ok = A->modstate.size <= LIMIT_OBJECT_READ &&
                    A->modstate.non_asyncio_tasks < A->modstate.size &&
                    A->modstate.non_asyncio_eager_tasks < A->modstate.size &&
                    A->modstate.debug_offsets < A->modstate.size;
    if (!state_ok) {
        A->modstate.non_asyncio_tasks = LAYOUT_NONE;
        A->modstate.non_asyncio_eager_tasks = LAYOUT_NONE;
        A->modstate.debug_offsets = LAYOUT_NONE;
    }
    if (!task_ok || !set_ok || A->registry_weak == NULL || !layout_has(A->weakref_object) ||
        !layout_has(A->list_item) || !layout_has(A->tuple_item) || !layout_has(A->method_self) ||
        !layout_has(A->function_name) || !layout_has(A->type_base) || !fill_frames(g, L, A) ||
        __builtin_add_overflow(A->gen_iframe == LAYOUT_NONE ? 0 : A->gen_iframe, L->frame.size,
                               &end)) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "asyncio table inconsistent");
    }
    return 0;
}
