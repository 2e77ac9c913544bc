/* runtime_check: the checks a chosen layout passes before pytop trusts it on a target: the
 * runtime's size, the main interpreter where the layout says, its first thread state pointing
 * back to it, PyCode_Type named "code", and that thread's newest frame running a code object
 * (looked at again while the thread runs). A neighbour version's table fails them. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/target/runtime_int.h"
#include "core/util/error.h"

/* The newest frame of the thread state at TSTATE, following the cframe where there is one. */
static int newest_frame(struct proc *p, const struct py_layout *L, uint64_t tstate,
                        uint64_t *frame)
{
    uint64_t at = tstate;
    *frame = 0;
    if (layout_has(L->thread.cframe)) {
        if (proc_read_bytes(p, tstate + L->thread.cframe, &at, 8, NULL) < 0 || at == 0) {
            return -1;
        }
    }
    return proc_read_bytes(p, at + L->thread.current_frame, frame, 8, NULL);
}

static int check_frame(struct proc *p, const struct runtime *rt, uint64_t interp,
                       uint64_t tstate, struct pt_error *err);

/* How often the checks look again at a running target: a miss counts only when what was read
 * stayed the same while it was read (check_frame() takes STABLE_MISSES of them). */
enum { CHECK_FRAME_TRIES = 16, CHECK_FRAME_STABLE_MISSES = 3 };

int runtime_misfit(const struct runtime *rt, const char *why, struct pt_error *err)
{
    return pt_error_set(err, PT_E_BADLAYOUT, 0,
                        "the Python %s layout does not fit this process (%s); refusing to guess",
                        rt->version, why);
}

int runtime_check_layout(struct proc *p, const struct runtime *rt, uint64_t runtime_size,
                         struct pt_error *err)
{
    const struct py_layout *L = &rt->layout;
    uint64_t interp = 0;
    uint64_t next = 0;
    int64_t id = 0;
    uint64_t tstate = 0;
    uint64_t back = 0;
    uint64_t name = 0;
    char code[5] = "";
    if (runtime_size != 0 && runtime_size != L->runtime.size) {
        return runtime_misfit(rt, "_PyRuntime's size is not this version's", err);
    }
    if (proc_read_bytes(p, rt->runtime_addr + L->runtime.interpreters_head, &interp, 8, err) < 0 ||
        (interp != 0 &&
         (proc_read_bytes(p, interp + L->interp.threads_head, &tstate, 8, err) < 0 ||
          proc_read_bytes(p, interp + L->interp.next, &next, 8, err) < 0 ||
          (layout_has(L->interp.id) &&
           proc_read_bytes(p, interp + L->interp.id, &id, 8, err) < 0))) ||
        (tstate != 0 && proc_read_bytes(p, tstate + L->thread.interp, &back, 8, err) < 0)) {
        /* Nothing readable where the layout points: the layout is wrong, or the process
         * went away meanwhile. */
        if (err != NULL && err->code == PT_E_GONE) {
            return -1;
        }
        return runtime_misfit(rt, "its interpreter state is not where the layout says", err);
    }
    if (interp == 0 || (next == 0 && id != 0)) {
        return runtime_misfit(rt, "no main interpreter where it should be", err);
    }
    /* The first thread state may be freed (its thread ended) between the two reads: only one
     * that stays first and still does not point back tells of a wrong layout. */
    for (int i = 0; tstate != 0 && back != interp && i < CHECK_FRAME_TRIES; i++) {
        uint64_t again = 0;
        if (proc_read_bytes(p, interp + L->interp.threads_head, &again, 8, err) < 0) {
            return -1;
        }
        if (again == tstate) {
            return runtime_misfit(rt, "its thread state does not point back to its interpreter",
                                 err);
        }
        tstate = again;
        if (tstate != 0 && proc_read_bytes(p, tstate + L->thread.interp, &back, 8, NULL) < 0) {
            back = 0;
        }
    }
    if (tstate != 0 && back != interp) {
        return runtime_misfit(rt, "its thread state does not point back to its interpreter", err);
    }
    if (rt->code_type_addr != 0 && layout_has(L->type.name) &&
        (proc_read_bytes(p, rt->code_type_addr + L->type.name, &name, 8, NULL) < 0 ||
         proc_read_bytes(p, name, code, sizeof code, NULL) < 0 || memcmp(code, "code", 5) != 0)) {
        return runtime_misfit(rt, "PyCode_Type is not named \"code\"", err);
    }
    return check_frame(p, rt, interp, tstate, err);
}

/* One look at the newest frame of TSTATE: 1 it runs a code object (or nothing, or None: entry
 * frames the interpreter pushes itself, 3.14+), 0 it does not, -1 the frame moved meanwhile
 * (a running thread: the look tells nothing). */
static int frame_runs_code(struct proc *p, const struct runtime *rt, uint64_t tstate)
{
    const struct py_layout *L = &rt->layout;
    uint64_t frame = 0;
    uint64_t again = 0;
    uint64_t exec = 0;
    uint64_t type = 0;
    if (newest_frame(p, L, tstate, &frame) < 0 || frame == 0) {
        return 1;
    }
    bool read = proc_read_bytes(p, frame + L->frame.executable, &exec, 8, NULL) == 0;
    exec &= ~L->frame.executable_tag_mask;
    if (read && (exec == 0 || exec == rt->none_addr)) {
        return 1;
    }
    if (read && proc_read_bytes(p, exec + L->object.ob_type, &type, 8, NULL) == 0 &&
        type == rt->code_type_addr) {
        return 1;
    }
    if (newest_frame(p, L, tstate, &again) < 0 || again != frame) {
        return -1;
    }
    return 0;
}

/* The newest frame of thread state TSTATE, the first of interpreter INTERP's, if it has one,
 * must run a code object. The thread may be running: what its frame pointer named may be gone
 * by the time it is read, so the check looks again, and a wrong layout shows as misses on a
 * frame that stays put. The thread may also end, and its freed thread state hold anything: a
 * look counts only while that state is still the interpreter's first; otherwise the check
 * goes on with the one that is now. */
static int check_frame(struct proc *p, const struct runtime *rt, uint64_t interp,
                       uint64_t tstate, struct pt_error *err)
{
    const struct py_layout *L = &rt->layout;
    int misses = 0;
    if (tstate == 0 || rt->code_type_addr == 0) {
        return 0;
    }
    for (int i = 0; i < CHECK_FRAME_TRIES; i++) {
        int rc = frame_runs_code(p, rt, tstate);
        uint64_t first = 0;
        if (rc == 0 &&
            (proc_read_bytes(p, interp + L->interp.threads_head, &first, 8, NULL) < 0 ||
             first != tstate)) {
            tstate = first;
            if (tstate == 0) {
                return 0;
            }
            continue;
        }
        if (rc == 1) {
            return 0;
        }
        if (rc == 0 && ++misses == CHECK_FRAME_STABLE_MISSES) {
            return runtime_misfit(rt, "its newest frame does not run a code object", err);
        }
    }
    return 0;
}
