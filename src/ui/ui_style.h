/* ui_style: how the screen is drawn here: colours or plain attributes, UTF-8 or ASCII glyphs. */
#ifndef PYTOP_UI_UI_STYLE_H
#define PYTOP_UI_UI_STYLE_H

#include <stdbool.h>

#include "ui/view.h"

/* Fills S for the terminal curses has set up and the locale: glyphs from the locale's
 * character set, colours when COLOR and the terminal has them (its own foreground and
 * background kept), else bold, reverse, dim and underline only. */
void ui_style_init(struct ui_style *s, bool color);

#endif
