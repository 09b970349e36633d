#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_rooms.sh - docs/architecture.md's table of rooms says what each room
# may use; check_rooms.py holds it against the build: every header a room's
# objects were compiled with and every ranktrace symbol they call that
# another room defines must be in the room's row, and every room the row
# names must be used (nothing more is claimed than is true). A control
# copy of the page with one true entry taken out must fail.
source "$(dirname "$0")/lib.sh"
S=$(cd "$(dirname "$0")/../.." && pwd)
command -v nm > /dev/null || { echo "nm not found"; exit 77; }

check "the rooms use what docs/architecture.md's table says, no more, no less" \
  timeout -k 5 300 python3 "$(dirname "$0")/check_rooms.py" "$S" "$B"
# control: the viewer's row without util/ (it escapes and writes JSON through util/)
sed -E '/^\| `viewer\/` \|/ s/`util\/`//' "$S/docs/architecture.md" > "$T/arch.md"
timeout -k 5 300 python3 "$(dirname "$0")/check_rooms.py" "$S" "$B" "$T/arch.md" > "$T/control" 2>&1
check "control: a row that leaves out a room it uses fails ($(grep -m1 'viewer/ uses util/' "$T/control" | sed 's/^ *//'))" \
  grep -q 'viewer/ uses util/' "$T/control"
finish
