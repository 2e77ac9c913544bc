/* layout/asyncio: how to read asyncio's task registries (every task of 3.6-3.13, which have no
 * _asyncio debug offsets; the tasks not of the C type from 3.14), from pytop's generated
 * per-version tables. */
#ifndef PYTOP_CORE_LAYOUT_ASYNCIO_H
#define PYTOP_CORE_LAYOUT_ASYNCIO_H

#include <stdbool.h>
#include <stdint.h>

struct py_layout;
struct pt_error;

/* How a suspended coroutine says it is delegating to another (`await`, `yield from`); what it
 * delegates to is then on top of its frame's value stack (Objects/genobject.c, _PyGen_yf). */
enum layout_yield_from {
    LAYOUT_YF_NEXT_OPCODE,  /* frame objects: the next instruction in co_code is YIELD_FROM */
    LAYOUT_YF_RESUME_OPARG, /* the next instruction is a RESUME whose oparg is at least 2 */
    LAYOUT_YF_FRAME_STATE,  /* gi_frame_state is FRAME_SUSPENDED_YIELD_FROM */
};

/* Where the top of a suspended frame's value stack is. */
enum layout_stack_top {
    LAYOUT_STACK_POINTER,    /* a pointer past the top item (f_stacktop), NULL while running */
    LAYOUT_STACK_DEPTH,      /* an item count (int) above a base pointer (f_valuestack) */
    LAYOUT_STACK_LOCALSPLUS, /* an item count (int) above the frame's localsplus array */
    LAYOUT_STACK_FRAME_POINTER, /* a tagged pointer (stackpointer) past the top item, in the
                                 * embedded frame; the delegate sits await_slot items below */
};

enum { LAYOUT_ASYNCIO_RESUME_OPS = 4 };

struct layout_asyncio {
    /* The task registries in asyncio.tasks: a WeakSet, and a plain set or NULL. */
    const char *registry_weak;
    const char *registry_strong;
    /* 3.6: the WeakSet is a class attribute of this class in asyncio.tasks (_PyTask); NULL: a
     * module attribute. */
    const char *registry_owner;
    /* 3.6: C tasks go to a WeakSet that only this static of the _asyncio module's binary
     * holds (all_tasks, found by symbol); NULL: registry_weak is it (3.7+ rebind the name to
     * the C module's set). */
    const char *registry_c_symbol;
    struct {
        uint64_t size;
        uint64_t loop;
        uint64_t callback0; /* LAYOUT_NONE before 3.7 */
        uint64_t callbacks; /* a list of (callback, context) tuples, or NULL */
        uint64_t state;     /* int */
        uint64_t fut_waiter;
        uint64_t coro;
        uint64_t name; /* LAYOUT_NONE before 3.8: tasks had no names */
    } task; /* TaskObj, Modules/_asynciomodule.c */
    int state_pending;
    int state_cancelled;
    int state_finished;

    /* Generators and coroutines. Frame objects (gi_frame): the frame's code, f_lasti and header
     * size are py_layout's frame fields; an embedded interpreter frame (gi_iframe) likewise. */
    uint64_t gen_frame;       /* pointer to the frame object; LAYOUT_NONE: embedded frame */
    uint64_t gen_iframe;      /* the embedded frame */
    uint64_t gen_frame_state; /* int8 */
    int state_created;        /* gi_frame_state byte of a coroutine not started; -1: none */
    enum layout_yield_from yield_from;
    enum layout_stack_top stack;
    uint64_t stack_top;   /* in the frame: f_stacktop, f_stackdepth, stacktop or stackpointer */
    unsigned await_slot;  /* LAYOUT_STACK_FRAME_POINTER: items below it the delegate is */
    uint64_t stack_base;  /* in the frame: f_valuestack, or where localsplus starts */
    uint64_t code_code;   /* co_code, for LAYOUT_YF_NEXT_OPCODE */
    unsigned lasti_scale; /* bytes per unit of f_lasti */
    int op_yield_from;
    int op_resume[LAYOUT_ASYNCIO_RESUME_OPS]; /* RESUME and its variants; -1 unused */

    uint64_t weakref_object; /* wr_object */
    struct {
        uint64_t size;
        uint64_t used;
        uint64_t mask;
        uint64_t table;
        uint64_t entry_size;
        uint64_t entry_key;
        uint64_t entry_hash;
    } set;
    uint64_t list_size; /* ob_size */
    uint64_t list_item; /* ob_item, a pointer to the items */
    uint64_t tuple_size;
    uint64_t tuple_item; /* the items themselves */
    uint64_t method_func;
    uint64_t method_self;
    uint64_t function_name;
    uint64_t type_base; /* tp_base */

    uint64_t module_md_state; /* md_state in a module object */
    /* asyncio_state, the _asyncio module's state (Modules/_asynciomodule.c); LAYOUT_NONE where
     * the version lacks a field. */
    struct {
        uint64_t size;
        uint64_t non_asyncio_tasks;       /* a WeakSet: tasks registered through the C
                                           * _register_task that are not C tasks (3.14+) */
        uint64_t non_asyncio_eager_tasks; /* a set: the same, during their eager first step */
        uint64_t debug_offsets;           /* the address of the module's .AsyncioDebug data */
    } modstate;
    /* A C task without a given name keeps the int its module's counter gave it, formatted as
     * "Task-N" only when asked for (3.12+); before, the name is always a str. */
    bool int_task_names;
};

/* Fills A for the version of L (its hexversion) from the generated table of that minor version.
 * Errors: PT_E_UNSUPPORTED (no table), PT_E_BADLAYOUT (a table lacking what its kind of frame
 * needs, or disagreeing with L's debug offsets). */
int layout_asyncio_select(const struct py_layout *L, struct layout_asyncio *A,
                          struct pt_error *err);

#endif
