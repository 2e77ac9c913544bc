/* ui_keys: keys bound to named actions in tables, what an action changed, and the help screen
 * made from the tables. */
#include "config.h"

#include "ui/ui_keys.h"

#include <stdio.h>
#include <string.h>

static const char *const PART_TITLES[UI_HELP_PARTS] = {NULL, "Views", "The picture",
                                                        "A replay (pytop --replay FILE)"};

bool ui_keys_is(const struct ui_key *k, const TermKeyKey *key)
{
    switch (k->kind) {
    case UI_KEY_CHAR:
        return key->type == TERMKEY_TYPE_UNICODE && key->code.codepoint == k->code &&
               (key->modifiers & (TERMKEY_KEYMOD_CTRL | TERMKEY_KEYMOD_ALT)) == 0;
    case UI_KEY_CTRL:
        return key->type == TERMKEY_TYPE_UNICODE && key->code.codepoint == k->code &&
               key->modifiers == TERMKEY_KEYMOD_CTRL;
    case UI_KEY_SYM:
        return key->type == TERMKEY_TYPE_KEYSYM && key->code.sym == k->code;
    case UI_KEY_END:
        break;
    }
    return false;
}

const struct ui_binding *ui_keys_find(const struct ui_binding *table, const TermKeyKey *key)
{
    for (const struct ui_binding *b = table; b != NULL && b->keys_text != NULL; b++) {
        for (size_t i = 0; i < UI_BINDING_KEYS && b->keys[i].kind != UI_KEY_END; i++) {
            if (ui_keys_is(&b->keys[i], key)) {
                return b;
            }
        }
    }
    return NULL;
}

/* Adds the lines of HELP (split at '\n') under KEYS, the first after PREFIX. Returns the new
 * count. */
static size_t add_lines(struct ui_help_line *out, size_t n, size_t cap, const char *keys,
                        const char *prefix, const char *help)
{
    const char *line = help;
    while (n < cap) {
        const char *end = strchr(line, '\n');
        int len = end != NULL ? (int)(end - line) : (int)strlen(line);
        out[n] = (struct ui_help_line){.keys = line == help ? keys : ""};
        snprintf(out[n].text, sizeof out[n].text, "%s%s%.*s", line == help ? "" : "   ",
                 line == help ? prefix : "", len, line);
        n++;
        if (end == NULL) {
            break;
        }
        line = end + 1;
    }
    return n;
}

/* The binding of a view's TABLE with the keys KEYS, or NULL. */
static const struct ui_binding *find_text(const struct ui_binding *table, const char *keys)
{
    for (const struct ui_binding *b = table; b->keys_text != NULL; b++) {
        if (strcmp(b->keys_text, keys) == 0) {
            return b;
        }
    }
    return NULL;
}

/* True when the keys of B were listed already, from a view's table before T. */
static bool listed(const struct ui_keys_table *tables, size_t t, const struct ui_binding *b)
{
    for (size_t i = 0; i < t; i++) {
        if (tables[i].view != NULL && find_text(tables[i].bindings, b->keys_text) != NULL) {
            return true;
        }
    }
    return false;
}

/* Lists B, a view's binding: once when every view binds its keys to the same help, else per
 * view, each named. */
static size_t add_view_keys(const struct ui_keys_table *tables, size_t n_tables, size_t t,
                            const struct ui_binding *b, struct ui_help_line *out, size_t n,
                            size_t cap)
{
    bool alike = true;
    for (size_t i = 0; i < n_tables; i++) {
        const struct ui_binding *o =
            tables[i].view != NULL ? find_text(tables[i].bindings, b->keys_text) : b;
        alike &= o != NULL && strcmp(o->help, b->help) == 0;
    }
    if (alike) {
        return add_lines(out, n, cap, b->keys_text, "", b->help);
    }
    const char *keys = b->keys_text;
    for (size_t i = t; i < n_tables; i++) {
        const struct ui_binding *o =
            tables[i].view != NULL ? find_text(tables[i].bindings, b->keys_text) : NULL;
        if (o != NULL) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "%s%s: ", keys[0] == '\0' ? "   " : "", tables[i].view);
            n = add_lines(out, n, cap, keys, prefix, o->help);
            keys = "";
        }
    }
    return n;
}

size_t ui_keys_help(const struct ui_keys_table *tables, size_t n_tables, struct ui_help_line *out,
                    size_t cap)
{
    size_t n = 0;
    for (int part = 0; part < UI_HELP_PARTS; part++) {
        if (PART_TITLES[part] != NULL && n < cap) {
            out[n] = (struct ui_help_line){.title = true, .keys = ""};
            snprintf(out[n].text, sizeof out[n].text, "%s", PART_TITLES[part]);
            n++;
        }
        for (size_t t = 0; t < n_tables; t++) {
            for (const struct ui_binding *b = tables[t].bindings; b->keys_text != NULL; b++) {
                if ((int)b->part != part) {
                    continue;
                }
                if (tables[t].view == NULL) {
                    n = add_lines(out, n, cap, b->keys_text, "", b->help);
                } else if (!listed(tables, t, b)) {
                    n = add_view_keys(tables, n_tables, t, b, out, n, cap);
                }
            }
        }
    }
    return n;
}
