/* heat_text: the source heat view's counts (struct sampler_heat) as annotated source: which
 * lines of the function to show, and the text the `d` key writes of them. */
#ifndef PYTOP_CORE_HEAT_TEXT_H
#define PYTOP_CORE_HEAT_TEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "core/sampler/sampler.h"
#include "core/write/snapshot_write.h"

struct pt_error;

enum {
    HEAT_SOURCE_LINES_MAX = 20000, /* lines of one function shown, at most */
};

/* The lines of H's function that are shown: from its first line as long as its body goes on
 * (deeper-indented, blank or closing-bracket lines, its decorators and header), the whole file
 * for a module's code, and in any case every counted line. READABLE: SRC gave the source; when
 * not, FIRST..LAST only spans the counted lines (and only those are shown). FIRST is 0 when
 * there is nothing to show. */
struct heat_range {
    int first;
    int last;
    bool readable;
};
struct heat_range heat_source_range(const struct sampler_heat *h, const struct snapshot_source *src);

/* The counts of line LINE of H, or NULL when it was never counted. */
const struct sampler_heat_line *heat_find_line(const struct sampler_heat *h, int line);

/* The share (0-100) PART is of H's thread-samples; 0 when there are none. */
double heat_pct(const struct sampler_heat *h, uint64_t part);

/* Writes H as annotated source: a header naming the function, what the shares are of, the
 * mode and span (WHO: a line naming the process, or NULL), then each line shown with its own
 * and total shares and its text (escaped as every target string pytop writes), and under
 * each its instructions when H has them. Errors: PT_E_IO, PT_E_NOMEM. */
int heat_write_text(const struct sampler_heat *h, const struct snapshot_source *src,
                    const char *who, FILE *out, struct pt_error *err);

#endif
