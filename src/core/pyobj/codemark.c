/* codemark: whether the target's code marker may vouch for the code cache, checked as read. */
#include "config.h"

#include "core/pyobj/codemark.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void codemark_init(struct codemark *m, enum layout_code_marker kind)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
}

/* A counter new code objects take their co_version from, rather than a generation. */
static bool counts_versions(const struct codemark *m)
{
    return m->kind == CODE_MARKER_NEXT_VERSION || m->kind == CODE_MARKER_GLOBAL_NEXT_VERSION;
}

bool codemark_is_vouching(const struct codemark *m)
{
    return m->kind != CODE_MARKER_NONE && !m->broken && !m->worn_out;
}

static uint64_t fail(struct codemark *m, const char *what, uint64_t was, uint64_t now)
{
    m->broken = true;
    snprintf(m->why, sizeof m->why, "%s (%" PRIu64 ", then %" PRIu64 ")", what, was, now);
    return CODE_GENERATION_NONE;
}

uint64_t codemark_take(struct codemark *m, uint64_t interp, bool read, uint64_t raw)
{
    /* The first interpreter of the list is the newest: a subinterpreter made or gone changes
     * it, and its marker counts on its own (a generation, a 3.13 counter). */
    if (interp != m->interp) {
        m->interp = interp;
        m->epoch++;
        m->last = 0;
        m->max_version = 0;
    }
    if (!codemark_is_vouching(m) || !read) {
        return CODE_GENERATION_NONE;
    }
    if (!counts_versions(m)) {
        /* A generation only grows: one atomic add per code object freed. */
        if (raw < m->last) {
            return fail(m, "the code-object generation went back", m->last, raw);
        }
        m->last = raw;
        return raw;
    }
    /* A uint32_t that a new code object bumps unless it is 0 (Objects/codeobject.c, init_code):
     * once it wraps to 0 it stays 0, and its co_versions prove nothing. */
    raw &= UINT32_MAX;
    if (raw == 0) {
        m->worn_out = true;
        return CODE_GENERATION_NONE;
    }
    if (raw < m->last) {
        return fail(m, "the co_version counter went back", m->last, raw);
    }
    /* A code object read after an earlier value was taken from it: it bumped the counter past
     * its own co_version. */
    if (raw <= m->max_version) {
        return fail(m, "the co_version counter is not above a co_version read after it",
                    m->max_version, raw);
    }
    m->last = raw;
    return raw;
}

uint64_t codemark_version_below(const struct codemark *m, uint64_t generation)
{
    return counts_versions(m) && generation != CODE_GENERATION_NONE ? generation : 0;
}

void codemark_fail(struct codemark *m, const char *why)
{
    m->broken = true;
    snprintf(m->why, sizeof m->why, "%s", why);
}

void codemark_saw_version(struct codemark *m, uint64_t version)
{
    if (counts_versions(m) && version > m->max_version) {
        m->max_version = version;
    }
}
