/* fuzz_cpyrec: CPython binary profiles (cpyrec_open_mem) on arbitrary bytes, scanned twice.
 *
 * Seeds: tests/fuzz/cpyrec/, recordings made by tests/unit/data/cpyrec/make-recordings. Either
 * the file is refused as a format error, or every sample it delivers points at frames and codes
 * whose bytes can be read, and the scan ends cleanly or with its damage named; a second scan
 * delivers the same samples. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/record/cpyrec.h"
#include "core/util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct tally {
    size_t samples;
    uint64_t sum;
};

static void visit_thread(struct tally *t, const struct rec_thread *th)
{
    t->samples++;
    for (size_t i = 0; i < th->n_frames; i++) {
        const struct rec_frame *f = &th->frames[i];
        t->sum += (uint64_t)f->line + f->kind;
        if (f->code == NULL) {
            continue;
        }
        /* touch every byte, so that a name pointing outside the tables is caught */
        for (size_t k = 0; k < f->code->function.len; k++) {
            t->sum += (uint8_t)f->code->function.ptr[k];
        }
        for (size_t k = 0; k < f->code->file.len; k++) {
            t->sum += (uint8_t)f->code->file.ptr[k];
        }
        t->sum += f->code->id;
    }
}

static int visit(void *ctx, const struct rec_sample *s)
{
    struct tally *t = ctx;
    if (s->n_threads == 0 || s->threads == NULL) {
        abort();
    }
    for (size_t i = 0; i < s->n_threads; i++) {
        visit_thread(t, &s->threads[i]);
    }
    return 0;
}

static int scan(struct cpyrec *r, struct tally *t)
{
    struct pt_error err = {0};
    int rc = cpyrec_scan(r, -1e300, 1e300, visit, t, &err);
    if (rc == 0) {
        if (cpyrec_damage(r)[0] != '\0') {
            abort();
        }
        return 0;
    }
    if (rc != -1 || err.msg[0] == '\0') {
        abort();
    }
    if (err.code == PT_E_FORMAT && strcmp(cpyrec_damage(r), err.msg) != 0) {
        abort();
    }
    if (err.code != PT_E_FORMAT && err.code != PT_E_NOMEM) {
        abort();
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so that reading one byte past the file is caught. */
    uint8_t *buf = malloc(size > 0 ? size : 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    struct pt_error err = {0};
    struct cpyrec *r = cpyrec_open_mem(buf, size, &err);
    if (r == NULL) {
        if (err.code != PT_E_FORMAT && err.code != PT_E_NOMEM) {
            abort();
        }
        if (err.msg[0] == '\0') {
            abort();
        }
        free(buf);
        return 0;
    }
    (void)cpyrec_sniff(buf, size);
    const struct rec_header *h = cpyrec_header(r);
    if (h->format.ptr == NULL || cpyrec_duration(r) < 0) {
        abort();
    }
    struct tally a = {0, 0};
    struct tally b = {0, 0};
    int rc_a = scan(r, &a);
    int rc_b = scan(r, &b);
    if (rc_a != rc_b || a.samples != b.samples || a.sum != b.sum) {
        abort();
    }
    cpyrec_close(r);
    free(buf);
    return 0;
}
