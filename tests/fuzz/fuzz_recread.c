/* fuzz_recread: a .pyrec recording read back from arbitrary bytes: opened, every sample scanned,
 * the sample and snapshot at a few moments. Bytes come in through a memfd (the reader opens a
 * path). Whatever it says, it must not crash, and a sample it hands on must be well formed. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/model/snapshot.h"
#include "core/record/recconv.h"
#include "core/record/recording.h"
#include "core/walk/sample.h"
#include "core/util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
    size_t n;
    struct recconv *conv; /* each sample as the replay converts it */
};

static int look(void *ctx, const struct rec_sample *s)
{
    struct seen *seen = ctx;
    seen->n++;
    if (!s->failed && seen->conv != NULL) {
        const enum snap_bool *on_cpu = NULL;
        const struct sample *smp = recconv_compact(seen->conv, s, &on_cpu, NULL);
        for (size_t i = 0; smp != NULL && i < smp->n_threads; i++) {
            if (smp->threads[i].n_frames != s->threads[i].n_frames) {
                abort();
            }
            for (size_t k = 0; k < smp->threads[i].n_frames; k++) {
                const struct sample_frame *f = &smp->threads[i].frames[k];
                if ((f->code == NULL) != (s->threads[i].frames[k].code == NULL)) {
                    abort();
                }
            }
        }
    }
    if (s->failed) {
        return s->error.ptr != NULL && s->error.len > 0 && s->error.ptr[0] == 0 ? 0 : 0;
    }
    for (size_t i = 0; i < s->n_threads; i++) {
        const struct rec_thread *t = &s->threads[i];
        for (size_t k = 0; k < t->n_frames; k++) {
            const struct rec_frame *f = &t->frames[k];
            if (f->code != NULL && f->code->function.ptr != NULL && f->code->function.len > 0) {
                /* Every byte of a name must be readable. */
                volatile char last = f->code->function.ptr[f->code->function.len - 1];
                (void)last;
            }
            if ((unsigned)f->kind > SNAP_FRAME_UNREADABLE) {
                abort();
            }
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_recread", MFD_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct pt_error err = {0};
    struct recording *r = recording_open(path, &err);
    if (r == NULL) {
        if (err.msg[0] == '\0') {
            abort();
        }
        close(fd);
        return 0;
    }
    struct seen seen = {0, recconv_new(&err)};
    recording_scan(r, -1, 1e18, look, &seen, &err);
    recconv_free(seen.conv);
    double end = recording_duration(r);
    double at[] = {0, end / 2, end, -5, 1e300};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        struct snapshot *s = recording_snapshot_at(r, at[i], &err);
        snapshot_free(s);
    }
    recording_close(r);
    close(fd);
    return 0;
}
