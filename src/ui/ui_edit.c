/* ui_edit: a one-line text field typed into (the filter): its keys. */
#include "config.h"

#include "ui/ui_edit.h"

#include <stdbool.h>
#include <string.h>

static bool is_sym(const TermKeyKey *key, TermKeySym sym)
{
    return key->type == TERMKEY_TYPE_KEYSYM && key->code.sym == sym;
}

static bool is_ctrl(const TermKeyKey *key, long c)
{
    return key->type == TERMKEY_TYPE_UNICODE && key->code.codepoint == c &&
           key->modifiers == TERMKEY_KEYMOD_CTRL;
}

enum ui_edit ui_edit_key(char *text, size_t size, const TermKeyKey *key)
{
    size_t n = strlen(text);
    if (is_sym(key, TERMKEY_SYM_ENTER)) {
        return UI_EDIT_DONE;
    }
    if (is_sym(key, TERMKEY_SYM_ESCAPE)) {
        return UI_EDIT_CANCEL;
    }
    if (is_sym(key, TERMKEY_SYM_BACKSPACE) || is_sym(key, TERMKEY_SYM_DEL) || is_ctrl(key, 'h')) {
        /* Back over a whole UTF-8 character: its continuation bytes, then its lead. */
        while (n > 0 && (text[n - 1] & 0xC0) == 0x80) {
            n--;
        }
        text[n > 0 ? n - 1 : 0] = '\0';
    } else if (is_ctrl(key, 'u')) {
        text[0] = '\0';
    } else if (key->type == TERMKEY_TYPE_UNICODE &&
               (key->modifiers & (TERMKEY_KEYMOD_CTRL | TERMKEY_KEYMOD_ALT)) == 0) {
        size_t k = strlen(key->utf8);
        if (n + k < size) {
            memcpy(text + n, key->utf8, k + 1);
        }
    }
    return UI_EDIT_GOES_ON;
}
