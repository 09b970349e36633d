#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_tracer_rooms.sh - libranktrace.so's rooms use only the rooms below them
# (tracer/base/base.h draws them): no call and no include goes up, so there is
# no circle across rooms. Calls: every symbol an object file of a room needs
# (nm -u) is defined by its own room or one below (the injector's objects,
# inject/, take their place between device/ and interpose/: the wrappers call
# it, it records through core/). Includes: a file includes the headers of its
# own room or of one below. And each room has its own header, ROOM/ROOM.h.
source "$(dirname "$0")/lib.sh"
S=$(cd "$(dirname "$0")/../.." && pwd)
ORDER="base identity store core device inject interpose"
OBJ="$B/tracer/CMakeFiles/ranktrace.dir"

rank_of() { # the room's place in ORDER (0: the bottom)
  local i=0 r
  for r in $ORDER; do [ "$r" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done
  echo -1
}

# room<TAB>object for every object file of the library
objects() {
  local r o
  for r in $ORDER; do
    if [ "$r" = inject ]; then
      for o in "$B"/inject/CMakeFiles/rtinject.dir/*.o "$B"/inject/CMakeFiles/rtplan.dir/*.o; do
        [ -e "$o" ] && printf 'inject\t%s\n' "$o"
      done
    else
      for o in "$OBJ/$r"/*.o; do [ -e "$o" ] && printf '%s\t%s\n' "$r" "$o"; done
    fi
  done
}

objects > "$T/objects"
for r in $ORDER; do
  grep -q "^$r	" "$T/objects" || bad "room $r has object files under $B (is the tracer built?)"
  if [ "$r" != inject ]; then
    check "room $r has its own header ($r/$r.h)" test -f "$S/tracer/$r/$r.h"
  fi
done

# symbol<TAB>room of every symbol a room defines
while IFS=$'\t' read -r room o; do
  nm -g --defined-only "$o" 2>/dev/null | awk -v r="$room" 'NF >= 3 { print $3 "\t" r }'
done < "$T/objects" | sort -u > "$T/defined"
check "the rooms' objects define symbols (nm reads them)" test -s "$T/defined"
dups=$(cut -f1 "$T/defined" | sort | uniq -d)
[ -z "$dups" ] || bad "symbols defined in two rooms: $dups"

# every use: room<TAB>object<TAB>symbol<TAB>the room defining it
while IFS=$'\t' read -r room o; do
  nm -u "$o" 2>/dev/null | awk -v r="$room" -v o="${o##*/}" '{ print $NF "\t" r "\t" o }'
done < "$T/objects" | sort > "$T/used"
join -t $'\t' "$T/used" "$T/defined" > "$T/edges"
check "calls across rooms are found (the wrappers call core)" \
  grep -q $'\tinterpose\t.*\tcore$' "$T/edges"

up=0
while IFS=$'\t' read -r sym from obj to; do
  if [ "$(rank_of "$to")" -gt "$(rank_of "$from")" ]; then
    bad "call up: $from/$obj uses $sym, defined in $to"
    up=$((up + 1))
  fi
done < "$T/edges"
[ "$up" -eq 0 ] && ok "no call goes up a room ($(wc -l < "$T/edges") uses of symbols across files)"

# includes: "X.h" found in a room's folder is that room's header
up=0
for r in $ORDER; do
  [ -d "$S/tracer/$r" ] || continue
  for f in "$S/tracer/$r"/*.[ch]; do
    while read -r h; do
      for hr in $ORDER; do
        [ -f "$S/tracer/$hr/$h" ] || continue
        if [ "$(rank_of "$hr")" -gt "$(rank_of "$r")" ]; then
          bad "include up: tracer/$r/${f##*/} includes $hr/$h"
          up=$((up + 1))
        fi
      done
    done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]+"([^"]+)".*/\1/p' "$f")
  done
done
[ "$up" -eq 0 ] && ok "no include goes up a room"
finish
