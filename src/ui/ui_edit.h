/* ui_edit: a one-line text field typed into (the filter): its keys. */
#ifndef PYTOP_UI_UI_EDIT_H
#define PYTOP_UI_UI_EDIT_H

#include <stddef.h>

#include <termkey.h>

enum ui_edit {
    UI_EDIT_GOES_ON, /* the text may have changed; typing goes on */
    UI_EDIT_DONE,    /* Enter: keep the text */
    UI_EDIT_CANCEL,  /* Esc: the caller puts the text back as it was */
};

/* Applies KEY to TEXT (NUL-terminated UTF-8 in SIZE bytes): a character is added if it fits,
 * Backspace removes the last character, Ctrl-U all of them. */
enum ui_edit ui_edit_key(char *text, size_t size, const TermKeyKey *key);

#endif
