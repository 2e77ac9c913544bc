/* test_ui_keys: the live view's key tables: matching keys, the help made from them, and the man
 * page's Keys list checked against them. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ui/ui.h"
#include "ui/ui_keys.h"
#include "ui/ui_sort.h"

enum {
    LINES_MAX = 64,
    ITEMS_MAX = 64,
    NAMES_MAX = 16,
    NAME_BYTES = 32,
};

/* The keys one label names ("p, Space, Z": p, Space and Z). */
struct names {
    char name[NAMES_MAX][NAME_BYTES];
    size_t n;
};

static void trim_into(char *dst, const char *src, size_t len)
{
    while (len > 0 && *src == ' ') {
        src++;
        len--;
    }
    while (len > 0 && src[len - 1] == ' ') {
        len--;
    }
    snprintf(dst, NAME_BYTES, "%.*s", (int)len, src);
}

static void add_name(struct names *ns, const char *src, size_t len)
{
    assert_true(ns->n < NAMES_MAX);
    trim_into(ns->name[ns->n], src, len);
    if (ns->name[ns->n][0] != '\0') {
        ns->n++;
    }
}

/* Splits LABEL into key names: at ',' and, within a part that is not "/" alone, at '/'. */
static struct names names_of(const char *label)
{
    struct names ns = {.n = 0};
    const char *p = label;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char part[NAME_BYTES];
        trim_into(part, p, len);
        if (strcmp(part, "/") == 0) {
            add_name(&ns, part, 1);
        } else {
            for (const char *q = part; *q != '\0';) {
                const char *slash = strchr(q, '/');
                size_t n = slash != NULL ? (size_t)(slash - q) : strlen(q);
                add_name(&ns, q, n);
                q += n + (slash != NULL);
            }
        }
        p += len + (end != NULL);
    }
    return ns;
}

/* The text a font macro line (.B, .BR, .RB, ...) puts on the page: its arguments run together,
 * a quoted one with its spaces, with the escapes the Keys list uses made plain. */
static void roff_text(const char *line, char *out, size_t size)
{
    size_t n = 0;
    const char *p = strchr(line, ' ');
    while (p != NULL && *p != '\0' && *p != '\n' && n + 1 < size) {
        if (*p == ' ') {
            p++;
        } else if (*p == '"') {
            for (p++; *p != '"' && *p != '\0' && n + 1 < size; p++) {
                out[n++] = *p;
            }
            p += *p == '"';
        } else if (strncmp(p, "\\(en", 4) == 0) {
            out[n++] = '-';
            p += 4;
        } else if (strncmp(p, "\\-", 2) == 0) {
            out[n++] = '-';
            p += 2;
        } else if (strncmp(p, "\\&", 2) == 0) {
            p += 2;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
}

/* The key names of each item of the man page's Keys list (the line after each .TP). */
static size_t man_items(struct names *items, size_t cap)
{
    FILE *f = fopen(TOP_SRCDIR "/man/pytop.1", "r");
    assert_non_null(f);
    char line[512];
    bool in_keys = false;
    bool after_tp = false;
    size_t n = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, ".SS Keys", 8) == 0) {
            in_keys = true;
        } else if (in_keys && (strncmp(line, ".SS", 3) == 0 || strncmp(line, ".SH", 3) == 0)) {
            break;
        } else if (in_keys && strncmp(line, ".TP", 3) == 0) {
            after_tp = true;
        } else if (after_tp) {
            char text[512];
            roff_text(line, text, sizeof text);
            assert_true(n < cap);
            items[n++] = names_of(text);
            after_tp = false;
        }
    }
    fclose(f);
    assert_true(n > 0);
    return n;
}

/* The man page's item that names NAME; -1 if none does. */
static int item_of(const struct names *items, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < items[i].n; k++) {
            if (strcmp(items[i].name[k], name) == 0) {
                return (int)i;
            }
        }
    }
    return -1;
}

static size_t help_lines(struct ui_help_line *lines)
{
    size_t n = ui_help(lines, LINES_MAX);
    assert_true(n > 0 && n < LINES_MAX);
    return n;
}

/* Every key of the tables is in the man page, and the keys bound together are one item there. */
static void test_ui_keys_man_page_lists_every_key_of_the_tables(void **state)
{
    struct ui_help_line lines[LINES_MAX];
    size_t n = help_lines(lines);
    struct names items[ITEMS_MAX];
    size_t n_items = man_items(items, ITEMS_MAX);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (lines[i].title || lines[i].keys[0] == '\0') {
            continue;
        }
        struct names ns = names_of(lines[i].keys);
        int first = item_of(items, n_items, ns.name[0]);
        for (size_t k = 0; k < ns.n; k++) {
            int at = item_of(items, n_items, ns.name[k]);
            if (at < 0) {
                print_error("key '%s' (help: \"%s\") is not in man/pytop.1's Keys list\n",
                            ns.name[k], lines[i].keys);
                bad++;
            } else if (at != first) {
                print_error("keys \"%s\" are one binding but apart in man/pytop.1's Keys list\n",
                            lines[i].keys);
                bad++;
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* Every key the man page lists is bound in the tables. */
static void test_ui_keys_tables_bind_every_key_of_the_man_page(void **state)
{
    struct ui_help_line lines[LINES_MAX];
    size_t n = help_lines(lines);
    struct names items[ITEMS_MAX];
    size_t n_items = man_items(items, ITEMS_MAX);
    int bad = 0;
    for (size_t i = 0; i < n_items; i++) {
        for (size_t k = 0; k < items[i].n; k++) {
            bool found = false;
            for (size_t j = 0; j < n && !found; j++) {
                struct names ns = names_of(lines[j].keys);
                for (size_t m = 0; m < ns.n && !found; m++) {
                    found = strcmp(ns.name[m], items[i].name[k]) == 0;
                }
            }
            if (!found) {
                print_error("key '%s' of man/pytop.1's Keys list is in no key table\n",
                            items[i].name[k]);
                bad++;
            }
        }
    }
    assert_int_equal(bad, 0);
}

static void test_ui_keys_names_split_at_commas_and_slashes(void **state)
{
    struct names ns = names_of("arrows, j/k");
    assert_int_equal(ns.n, 3);
    assert_string_equal(ns.name[2], "k");
    ns = names_of("/");
    assert_int_equal(ns.n, 1);
    assert_string_equal(ns.name[0], "/");
    ns = names_of("+ / -");
    assert_int_equal(ns.n, 2);
    assert_string_equal(ns.name[1], "-");
    char text[128];
    roff_text(".RB \"arrows, \" j / k \", \" PgUp / PgDn", text, sizeof text);
    assert_string_equal(text, "arrows, j/k, PgUp/PgDn");
    roff_text(".BR Tab \", \" 1 \\(en 4", text, sizeof text);
    assert_string_equal(text, "Tab, 1-4");
}

static void test_ui_keys_find_matches_characters_ctrl_and_named_keys(void **state)
{
    TermKeyKey q = {.type = TERMKEY_TYPE_UNICODE, .code.codepoint = 'q'};
    TermKeyKey ctrl_c = {
        .type = TERMKEY_TYPE_UNICODE, .code.codepoint = 'c', .modifiers = TERMKEY_KEYMOD_CTRL};
    TermKeyKey alt_q = {
        .type = TERMKEY_TYPE_UNICODE, .code.codepoint = 'q', .modifiers = TERMKEY_KEYMOD_ALT};
    TermKeyKey shift_tab = {.type = TERMKEY_TYPE_KEYSYM,
                            .code.sym = TERMKEY_SYM_TAB,
                            .modifiers = TERMKEY_KEYMOD_SHIFT};
    const struct ui_binding *quit = ui_keys_find(ui_bindings, &q);
    assert_non_null(quit);
    assert_ptr_equal(ui_keys_find(ui_bindings, &ctrl_c), quit);
    assert_null(ui_keys_find(ui_bindings, &alt_q));
    const struct ui_binding *tab = ui_keys_find(ui_bindings, &shift_tab);
    assert_non_null(tab);
    assert_string_equal(tab->keys_text, "Tab, 1-4");
}

static void test_ui_keys_sort_keys_go_round_the_columns(void **state)
{
    struct ui_sort s = {.column = 0, .n_columns = 3};
    TermKeyKey big_s = {.type = TERMKEY_TYPE_UNICODE, .code.codepoint = 'S'};
    TermKeyKey inv = {.type = TERMKEY_TYPE_UNICODE, .code.codepoint = 'I'};
    const struct ui_binding *b = ui_keys_find(ui_sort_bindings, &big_s);
    assert_non_null(b);
    assert_int_equal(b->action(&s, NULL, &big_s), UI_REDRAW_VIEW);
    assert_int_equal(s.column, 2);
    b = ui_keys_find(ui_sort_bindings, &inv);
    b->action(&s, NULL, &inv);
    assert_true(s.invert);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ui_keys_man_page_lists_every_key_of_the_tables),
        cmocka_unit_test(test_ui_keys_tables_bind_every_key_of_the_man_page),
        cmocka_unit_test(test_ui_keys_names_split_at_commas_and_slashes),
        cmocka_unit_test(test_ui_keys_find_matches_characters_ctrl_and_named_keys),
        cmocka_unit_test(test_ui_keys_sort_keys_go_round_the_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
