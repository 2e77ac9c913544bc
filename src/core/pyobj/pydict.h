/* pydict: look up str keys in target dicts and instance attributes. */
#ifndef PYTOP_CORE_PYDICT_H
#define PYTOP_CORE_PYDICT_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct py_layout;
struct pt_error;

/* Finds the ASCII str key KEY in the dict at DICT_ADDR. Returns 1 and sets *VALUE (an object
 * address), 0 when absent, -1 on a read or format error (PT_E_READ, PT_E_FORMAT, PT_E_LIMIT for
 * more than LIMIT_DICT_ENTRIES entries). */
int pydict_get_str(struct proc *p, const struct py_layout *L, uint64_t dict_addr, const char *key,
                   uint64_t *value, struct pt_error *err);

enum { PYDICT_KEYS_MAX = 8 }; /* keys pydict_get_strs() looks for at once, at most */

/* Finds the ASCII str keys KEYS[0..N) (N <= PYDICT_KEYS_MAX) in the dict at DICT_ADDR, reading
 * its keys once: VALUES[i] is the value of KEYS[i], 0 when absent. Returns how many were found,
 * or -1 on an error as pydict_get_str(). */
int pydict_get_strs(struct proc *p, const struct py_layout *L, uint64_t dict_addr,
                    const char *const *keys, size_t n, uint64_t *values, struct pt_error *err);

/* Calls FN(CTX, key, value) for each live entry of the dict at DICT_ADDR, in insertion order,
 * at most LIMIT_DICT_ENTRIES of them; FN returning nonzero stops the walk. */
int pydict_items(struct proc *p, const struct py_layout *L, uint64_t dict_addr,
                 int (*fn)(void *ctx, uint64_t key, uint64_t value), void *ctx,
                 struct pt_error *err);

/* pydict_items() of the attributes of the instance at OBJ_ADDR (its __dict__, a managed dict
 * or its inline values); 0 without calling FN when it has none yet. */
int pydict_instance_items(struct proc *p, const struct py_layout *L, uint64_t obj_addr,
                          int (*fn)(void *ctx, uint64_t key, uint64_t value), void *ctx,
                          struct pt_error *err);

/* Finds attribute NAME in the __dict__ of the instance at OBJ_ADDR (a managed dict or inline
 * values, 3.13+). Returns 1 and sets *VALUE, 0 when absent, -1 on error. */
int pydict_instance_attr(struct proc *p, const struct py_layout *L, uint64_t obj_addr,
                         const char *name, uint64_t *value, struct pt_error *err);

/* The attributes NAMES[0..N_NAMES) (N_NAMES <= PYDICT_KEYS_MAX) of each instance OBJS[0..N), as
 * pydict_instance_attr() finds them, in a few batched reads for all (instances of one type
 * share where they keep attributes): VALUES[i * N_NAMES + q] is attribute q of instance i, 0
 * when absent; RCS[i] how many instance i has, or -1 when they could not be read. Returns 0, or
 * -1 (PT_E_NOMEM, PT_E_LIMIT) with nothing filled in. */
int pydict_instances_attrs(struct proc *p, const struct py_layout *L, const uint64_t *objs,
                           size_t n, const char *const *names, size_t n_names, uint64_t *values,
                           int *rcs, struct pt_error *err);

#endif
