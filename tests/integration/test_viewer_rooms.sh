#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_viewer_rooms.sh - the viewer's rooms follow its stages, one way (the
# floors of docs/architecture.md's "The viewer's rooms", bottom first):
# read/ (files to events), model/ (each rank's model), analyse/ (what
# needs every rank: findings, verdict), load/ (the pipeline: the pass, the
# live state, the analyses), render/ (what the outputs print). A room uses
# its own floor and the ones below: no call (nm -u of its objects, matched
# to the room defining the symbol) and no include goes up, so no arrow runs
# back up a floor and no circle crosses rooms. The table in the docs is
# checked against the folders too, and each room says what it is; model/
# and analyse/ ask the system nothing (the live state is an input).
source "$(dirname "$0")/lib.sh"
S=$(cd "$(dirname "$0")/../.." && pwd)
ORDER="read model analyse load render"
OBJ="$B/viewer/CMakeFiles/rtviewer.dir"
command -v nm > /dev/null || { echo "nm not found"; exit 77; }

floor() { # the room's place in ORDER (0: the bottom), -1 for none
  local i=0 r
  for r in $ORDER; do [ "$r" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done
  echo -1
}

# -- the rooms are the folders, and the docs say so, in this order ---------------
rooms=$(cd "$S/viewer" && ls -d */ | tr -d / | tr '\n' ' ')
check "viewer/'s folders are the rooms ($rooms)" [ "$(echo $rooms | tr ' ' '\n' | sort)" = "$(echo $ORDER | tr ' ' '\n' | sort)" ]
loose=$(cd "$S/viewer" && ls *.c *.h 2>/dev/null | tr '\n' ' ')
check "no source file outside a room${loose:+ (loose: $loose)}" [ -z "$loose" ]
doc=$(sed -n '/^## The viewer.s rooms/,/^## /p' "$S/docs/architecture.md" |
  sed -nE 's/^\| `viewer\/([a-z]+)\/` .*/\1/p' | tr '\n' ' ')
check "docs/architecture.md's viewer rooms are these, bottom first ($doc)" [ "$(echo $doc)" = "$(echo $ORDER)" ]

# -- calls: nm -u of each room's objects ------------------------------------------
for r in $ORDER; do
  ls "$OBJ/$r"/*.o > /dev/null 2>&1 || bad "room $r has object files under $OBJ (is the viewer built?)"
done
for r in $ORDER; do
  for o in "$OBJ/$r"/*.o; do
    [ -e "$o" ] && nm -g --defined-only "$o" 2>/dev/null | awk -v r="$r" 'NF >= 3 { print $3 "\t" r }'
  done
done | sort -u > "$T/defined"
check "the rooms' objects define symbols (nm reads them)" test -s "$T/defined"
dups=$(cut -f1 "$T/defined" | sort | uniq -d | tr '\n' ' ')
check "no symbol defined in two rooms${dups:+: $dups}" [ -z "$dups" ]
for r in $ORDER; do
  for o in "$OBJ/$r"/*.o; do
    [ -e "$o" ] && nm -u "$o" 2>/dev/null | awk -v r="$r" -v o="${o##*/}" '{ print $NF "\t" r "\t" o }'
  done
done | sort > "$T/used"
join -t $'\t' "$T/used" "$T/defined" > "$T/edges"
check "calls across rooms are found (load runs the analyses)" grep -q $'\tload\t.*\tanalyse$' "$T/edges"
up=0
while IFS=$'\t' read -r sym from obj to; do
  if [ "$(floor "$to")" -gt "$(floor "$from")" ]; then
    bad "call up: $from/${obj%.o} uses $sym, defined in $to/"
    up=$((up + 1))
  fi
done < "$T/edges"
[ "$up" -eq 0 ] && ok "no call goes up a floor ($(wc -l < "$T/edges") uses of symbols across files)"

# -- the model and the analyses ask the system nothing -----------------------------
# What the job's processes are doing now (stream locks, /proc, the clock) is
# asked once by the pipeline (load/ through read/live.c) and handed to the
# analyses as an input; model/ and analyse/ read files and the system never.
ASKS='^(__)?(open|open64|openat|fopen|fopen64|opendir|readdir|readdir64|stat|lstat|fstat|access|read|pread|fgets|fread|gethostname|uname|realpath|clock_gettime|time|gettimeofday|fcntl|fcntl64|flock|kill|getpid)(_chk|_2)?$|^rt_vw_(list_streams|stream_locked|trace_now|live_ask)$'
asks=$(for r in model analyse; do
  for o in "$OBJ/$r"/*.o; do
    [ -e "$o" ] && nm -u "$o" 2>/dev/null | awk '{ print $NF }' | sed 's/@.*//' |
      grep -E "$ASKS" | sed "s|^|$r/${o##*/}: |"
  done
done | tr '\n' ' ')
check "model/ and analyse/ ask the system nothing (the live state is load/'s input to them)${asks:+: $asks}" [ -z "$asks" ]
check "load/ asks the live state (read/live.c's rt_vw_live_ask)" grep -q $'^rt_vw_live_ask\tload\t.*\tread$' "$T/edges"

# -- includes: "X.h" is the header of the room whose folder holds it ---------------
up=0
for r in $ORDER; do
  for f in "$S/viewer/$r"/*.[ch]; do
    while read -r h; do
      for hr in $ORDER; do
        [ -f "$S/viewer/$hr/$h" ] || continue
        if [ "$(floor "$hr")" -gt "$(floor "$r")" ]; then
          bad "include up: viewer/$r/${f##*/} includes $hr/$h"
          up=$((up + 1))
        fi
      done
    done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]+"([^"]+)".*/\1/p' "$f")
  done
done
[ "$up" -eq 0 ] && ok "no include goes up a floor"

# -- each file says what it is (SPDX, then its name and purpose) -------------------
nohead=$(for f in "$S"/viewer/*/*.[ch]; do
  n=${f##*/}
  sed -n 2p "$f" | grep -q "^/\* $n - " || echo "${f#$S/}"
done | tr '\n' ' ')
check "every file's second line names it and says what it is${nohead:+ (not: $nohead)}" [ -z "$nohead" ]
finish
