#!/bin/bash
# The terminal is restored however pytop ends: q, Ctrl-C, SIGTERM, and even a crash (SIGSEGV):
# the shell prompt is back, the alternate screen left, the cursor visible, the tty sane.
. "$(dirname "$0")/lib.sh"
need_tmux
need_python
start_target

tmux -L "$SOCK" -f /dev/null new-session -d -s t -x 100 -y 30 \
    "cd '$WORK' && env LC_ALL=C.UTF-8 PS1='tui\$ ' sh -i" || fail "tmux could not start"
wait_for '^tui\$'

# Runs pytop from the shell, ends it with $1 (a tmux key, or a signal name), and checks.
check_ending() {
    local how=$1
    keys 'clear' Enter
    keys "'$PYTOP' -p $TARGET_PID; echo ended=\$?" Enter
    wait_for 'alpha-spinner'
    [ "$(tmux -L "$SOCK" display -p -t t '#{alternate_on}')" = 1 ] ||
        fail "pytop should draw on the alternate screen"
    case $how in
        SIG*)
            local shell pid
            shell=$(tmux -L "$SOCK" display -p -t t '#{pane_pid}')
            pid=$(ps -o pid= --ppid "$shell" | tr -d ' ' | head -1)
            [ -n "$pid" ] || fail "pytop's PID not found"
            kill -s "${how#SIG}" "$pid"
            ;;
        *) keys "$how" ;;
    esac
    wait_for '^ended=[0-9]+'
    wait_for '^tui\$ ?$'
    local flags
    flags=$(tmux -L "$SOCK" display -p -t t '#{alternate_on} #{cursor_flag} #{keypad_cursor_flag}')
    [ "$flags" = "0 1 0" ] || fail "after $how: alternate screen, cursor, keypad flags: $flags"
    keys 'stty -a | tr " ;" "\n\n" | grep -xE -- "-?(icanon|echo|isig|icrnl|opost)" | tr "\n" " "; echo' Enter
    wait_for '^icanon isig icrnl opost echo $|^isig icanon echo|icanon.*echo'
    screen | grep -E -- '(^| )-(icanon|echo|isig|icrnl|opost)( |$)' &&
        fail "after $how the tty is not sane"
}

check_ending q
wait_for '^ended=0'
check_ending C-c
wait_for '^ended=0'
check_ending SIGTERM
check_ending SIGSEGV
wait_for '^ended=139'
pass
