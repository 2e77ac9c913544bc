/* export_fixture: the hand-built sample streams and the export plumbing the exporter's tests
 * share (test_export, test_export_pprof). */
#ifndef PYTOP_TESTS_UNIT_EXPORT_FIXTURE_H
#define PYTOP_TESTS_UNIT_EXPORT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/export/export.h"
#include "core/model/snapshot.h"
#include "core/record/recsample.h"

enum { C_MAIN, C_WORK, C_WEIRD, C_UNKNOWN, C_MAIN_AGAIN, N_CODES };
/* main (/app/main.py), Worker.run (/app/work.py), a name with ';', a newline, a byte that is
 * not UTF-8 and 'é' (/app/we\ird.py), one whose strings are all unknown, and main again as
 * another code object. */
extern struct rec_code codes[N_CODES];
extern const double PERIOD;            /* 10 ms */
extern const struct rec_header header; /* pid 4242, 100 Hz, started at 1700000000.5 */

/* Fills CODES; call first. */
void export_fixture_init(void);
struct snap_str str(const char *s);
struct rec_frame py(int code, int line);
struct rec_frame synthetic(enum snap_frame_kind kind, enum snap_unreadable why);
/* The stream most tests export: three threads over five samples and a failed one (see
 * export_fixture.c). */
void feed(struct exporter *x);
/* One sample of thread 1 "one" at T with FRAMES, and thread 2 "two", holding the GIL or not,
 * at main:1. */
void add_one(struct exporter *x, double t, const struct rec_frame *frames, size_t n,
             bool two_has_gil);
/* Every thread-sample, in wall mode, with PERIOD and HEADER. */
struct export_opts opts_all(void);
/* The export of the samples FEED_FN gives in format F with OPTS, NUL-terminated (*LEN bytes
 * before it; LEN may be NULL); export_to_memory() with feed(). Free it. */
char *export_stream(enum export_format f, const struct export_opts *opts,
                    void (*feed_fn)(struct exporter *), size_t *len);
char *export_to_memory(enum export_format f, const struct export_opts *opts, size_t *len);
/* Runs SCRIPT (python3) on DATA; its standard output (free it), or NULL when there is no
 * python3. */
char *run_python(const char *script, const char *data, size_t len);
/* Fails unless GOT holds exactly the lines of EXPECTED (each ending in "\n"), in any order. */
void check_lines(const char *got, const char *const *expected, size_t n);

#endif
