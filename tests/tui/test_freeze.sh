#!/bin/bash
# p, Space and Z freeze the picture: it holds still (two captures seconds apart are identical)
# while it can still be moved in; unfreezing lets it change again.
. "$(dirname "$0")/lib.sh"
start_watching
wait_for 'rate [0-9]+/100 Hz'

keys p
wait_for 'FROZEN'
sleep 0.3
before=$(screen)
sleep 2.5
after=$(screen)
[ "$before" = "$after" ] || fail "the frozen screen changed: $(diff <(echo "$before") <(echo "$after"))"
# Still moves while frozen.
keys j
wait_for 'Thread [0-9]+ "alpha-spinner"'
keys p
wait_gone 'FROZEN'
# Live again: the picture changes (uptime, rates) within a few refreshes.
snap=$(screen)
for i in $(seq 60); do
    [ "$(screen)" != "$snap" ] && break
    sleep 0.1
done
[ "$(screen)" != "$snap" ] || fail "the screen did not change after unfreezing"

keys Space
wait_for 'FROZEN'
keys Space
wait_gone 'FROZEN'
keys Z
wait_for 'FROZEN'
keys Z
wait_gone 'FROZEN'
pass
