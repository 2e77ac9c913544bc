/* runtime_int.h: what runtime.c and runtime_check.c share. Not for use outside them. */
#ifndef PYTOP_CORE_RUNTIME_INT_H
#define PYTOP_CORE_RUNTIME_INT_H

#include <stdint.h>

struct proc;
struct pt_error;
struct runtime;

/* Refuses RT's layout on this process, saying WHY (PT_E_BADLAYOUT). Returns -1. */
int runtime_misfit(const struct runtime *rt, const char *why, struct pt_error *err);

/* Checks RT's layout against the target before it is trusted: _PyRuntime has the size the
 * layout says (RUNTIME_SIZE, 0 if the binary does not tell); an interpreter alone in the list
 * is the main one (id 0); its first thread state points back to it; PyCode_Type is named
 * "code"; and that thread's newest frame runs a code object. 0, or -1 with PT_E_BADLAYOUT (a
 * misfit) or the read's error (PT_E_GONE: the process went away). */
int runtime_check_layout(struct proc *p, const struct runtime *rt, uint64_t runtime_size,
                         struct pt_error *err);

#endif
