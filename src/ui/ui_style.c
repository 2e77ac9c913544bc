/* ui_style: how the screen is drawn here: colours or plain attributes, UTF-8 or ASCII glyphs. */
#include "config.h"

#include "ui/ui_style.h"

#include <langinfo.h>
#include <string.h>

void ui_style_init(struct ui_style *s, bool color)
{
    const char *codeset = nl_langinfo(CODESET);
    s->utf8 = codeset != NULL && strcmp(codeset, "UTF-8") == 0;
    s->hline = s->utf8 ? "\u2500" : "-";
    s->ellipsis = s->utf8 ? "\u2026" : "~";
    s->up = s->utf8 ? "\u25b2" : "^";
    s->down = s->utf8 ? "\u25bc" : "v";
    s->tree_tee = s->utf8 ? "\u251c\u2500\u2500 " : "|-- ";
    s->tree_last = s->utf8 ? "\u2514\u2500\u2500 " : "`-- ";
    s->tree_pipe = s->utf8 ? "\u2502   " : "|   ";
    s->folded = s->utf8 ? "\u25b8" : "+";
    s->unfolded = s->utf8 ? "\u25be" : "-";
    attr_t plain[UI_ATTR_COUNT] = {
        [UI_NORMAL] = A_NORMAL,
        [UI_TITLE] = A_REVERSE,
        [UI_SELECTED] = A_REVERSE | A_BOLD,
        [UI_GIL] = A_BOLD,
        [UI_CPU] = A_NORMAL,
        [UI_WAIT] = A_NORMAL,
        [UI_GC] = A_NORMAL,
        [UI_DIM] = A_DIM,
        [UI_ALERT] = A_REVERSE | A_BOLD,
        [UI_MATCH] = A_BOLD | A_UNDERLINE,
        [UI_KEY] = A_BOLD,
        [UI_HEADER] = A_BOLD,
    };
    memcpy(s->attr, plain, sizeof plain);
    if (!color || !has_colors() || start_color() == ERR) {
        return;
    }
    /* The terminal's own background and foreground stay; only a few things are tinted. */
    use_default_colors();
    init_pair(1, COLOR_GREEN, -1);
    init_pair(2, COLOR_YELLOW, -1);
    init_pair(3, COLOR_MAGENTA, -1);
    init_pair(4, COLOR_CYAN, -1);
    init_pair(5, COLOR_RED, -1);
    init_pair(6, COLOR_BLUE, -1);
    s->attr[UI_GIL] = COLOR_PAIR(1) | A_BOLD;
    s->attr[UI_CPU] = COLOR_PAIR(2);
    s->attr[UI_WAIT] = COLOR_PAIR(3);
    s->attr[UI_GC] = COLOR_PAIR(4);
    s->attr[UI_ALERT] = COLOR_PAIR(5) | A_BOLD | A_REVERSE;
    s->attr[UI_MATCH] = COLOR_PAIR(2) | A_BOLD;
    s->attr[UI_KEY] = COLOR_PAIR(4) | A_BOLD;
    s->attr[UI_TITLE] = COLOR_PAIR(6) | A_REVERSE;
}
