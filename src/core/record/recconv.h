/* recconv: samples converted between the unwinder's compact form (struct sample, whose frames
 * are code objects in the code cache) and a recording's (struct rec_sample): a live target
 * exported straight into a profile, and a recording counted by the sampler as live samples are. */
#ifndef PYTOP_CORE_RECCONV_H
#define PYTOP_CORE_RECCONV_H

#include "core/model/snapshot.h"
#include "core/record/recsample.h"

struct sample;
struct py_layout;
struct pt_error;
struct recconv;

/* Errors: PT_E_NOMEM. */
struct recconv *recconv_new(struct pt_error *err);
void recconv_free(struct recconv *c);

/* SMP taken at T seconds, with the threads' CPU states ON_CPU (NULL unknown) and the layout L
 * that reads lines, as a recording would hand it on. Valid until the next call, and only while
 * SMP's code objects are (until the unwinder's next sample). NULL: PT_E_NOMEM. */
const struct rec_sample *recconv_sample(struct recconv *c, const struct sample *smp,
                                        const enum snap_bool *on_cpu, const struct py_layout *L,
                                        double t, struct pt_error *err);

/* RS as a compact sample for sampler_add_sample(), with its threads' CPU states in *ON_CPU;
 * each rec_code becomes a code object of the converter's own, kept by id for its life (strings
 * copied), whose frames carry their line in place of an offset (offsets_are_lines: the source
 * heat view counts lines; a recording's instructions are not counted). Valid until the next
 * call. NULL: PT_E_NOMEM, PT_E_LIMIT (too many functions). */
const struct sample *recconv_compact(struct recconv *c, const struct rec_sample *rs,
                                     const enum snap_bool **on_cpu, struct pt_error *err);

#endif
