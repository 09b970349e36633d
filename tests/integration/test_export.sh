#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_export.sh - Perfetto JSON passes a schema check and shows each
# finding on its ranks' tracks, on its collective; the HTML report is
# self-contained, renders in headless Chromium and escapes every name; its
# device section names a rank slowed on the device (20 ms per all-gather) as
# the straggler and a healthy run's none, and damaged device traces draw no
# NaN or Infinity.
source "$(dirname "$0")/lib.sh"
RT="$B/bin/ranktrace"
HERE=$(cd "$(dirname "$0")" && pwd)
sim "$RT" run -o "$T/good" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 > /dev/null 2>&1
sim "$RT" run -o "$T/bad" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 --trainer-version 4.53.0 > /dev/null 2>&1

"$RT" export "$T/good" --perfetto "$T/good.json" 2> /dev/null
check "export exits 0" [ $? -eq 0 ]
check "Perfetto JSON passes the schema check, all 21 collectives linked across 4 ranks" python3 "$HERE/check_perfetto.py" "$T/good.json" 4 21
check "device memory counters are there" grep -q '"name":"device 3 memory"' "$T/good.json"
# findings on their ranks' tracks: 4.53.0 (a finding on every rank), and rank 1
# skipping its 4th collective (a mismatch at #4: on rank 1's own AllGather #4)
sim "$RT" run -o "$T/skip" -- "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 2 --skip-collective 1:4 > /dev/null 2>&1
for t in bad skip; do
  "$RT" export "$T/$t" --perfetto "$T/$t.pf.json" > /dev/null 2>&1
  "$RT" view "$T/$t" --json > "$T/$t.view.json" 2> /dev/null
done
check "Perfetto (4.53.0): each finding of view --json an instant on each of its ranks' tracks" \
  python3 "$HERE/check_perfetto.py" "$T/bad.pf.json" 4 --findings "$T/bad.view.json"
check "Perfetto (a skipped collective): the mismatch sits on rank 1's call of it, named as its flows" \
  bash -c "python3 '$HERE/check_perfetto.py' '$T/skip.pf.json' 4 --findings '$T/skip.view.json' | grep '^ok: [0-9]* finding instants, 1 on their collective' > /dev/null"
"$RT" export "$T/bad" --perfetto /proc/cannot/write.json > /dev/null 2>&1
check "export to an unwritable path fails cleanly (1)" [ $? -eq 1 ]

# a hostile name in the trace: the report must show it as text
sed -i 's|hostname = "[^"]*";|hostname = "<script>alert(1)</script>";|' "$T"/bad/rank-00001/metadata
"$RT" report "$T/bad" -o "$T/bad.html" 2> /dev/null
check "report exits 0" [ $? -eq 0 ]
check "report: self-contained (nothing loaded: no src= or href=)" bash -c "! grep -qE '(src|href)=' '$T/bad.html'"
check "report: no <script> element at all" bash -c "! grep -qi '<script' '$T/bad.html'"
check "report: the hostile name is escaped" grep -qF '&lt;script&gt;alert(1)&lt;/script&gt;' "$T/bad.html"
# a parameter named <script> (reported through the probe API) is text in the heatmap
"$RT" run -o "$T/param" -- python3 -c "
import ctypes
lib = ctypes.CDLL(None)
lib.rt_param(b'<script>alert(1)</script>', 0, 0, 0, ctypes.c_uint64(10), ctypes.c_uint64(40), None)
lib.rt_param(b'model.embed_tokens.weight', 2, -1, 0, ctypes.c_uint64(10), ctypes.c_uint64(0), None)
" > /dev/null 2>&1
"$RT" report "$T/param" -o "$T/param.html" 2> /dev/null
check "report: a parameter named <script> is escaped in the heatmap" bash -c "grep -qF '<tr><td>&lt;script&gt;alert(1)&lt;/script&gt;</td>' '$T/param.html' && ! grep -qi '<script' '$T/param.html'"
check "report: the heatmap shows the meta parameter" grep -q 'title="meta"' "$T/param.html"

# collectives on the device (async simulator, the profiler plugin): rank 2's all-gathers 20 ms late
sim timeout -k 5 120 "$RT" run -o "$T/slow" --inject 'ncclAllGather:devdelay=20ms:rank=2' -- \
  "$B/bin/rt-launch" -n 4 "$B/bin/fsdp_mini" --steps 3 > /dev/null 2>&1
"$RT" report "$T/slow" -o "$T/slow.html" 2> /dev/null
timeout 60 "$RT" view --json "$T/slow" > "$T/slow.json"
"$RT" report "$T/good" -o "$T/good.html" 2> /dev/null
check "device report: rank 2 named the straggler, in view's words" bash -c "grep -o 'rank 2 is the straggler: last into [^;]*' '$T/slow.html' | grep -qF \"\$(timeout 60 '$RT' view '$T/slow' | grep -o 'rank 2 is the straggler: last into [^;]*')\""
check "device report (healthy): a device section, no straggler" bash -c "grep -q '<table id=\"device\">' '$T/good.html' && grep -q '<p id=\"straggler\">No straggler' '$T/good.html'"
check "a trace without device records (no NCCL): no device section" bash -c "! grep -q 'id=\"device\"' '$T/param.html'"
python3 "$HERE/../../scripts/damage-corpus.py" "$T/slow" "$T/dcorpus" > "$T/dvariants"
nd=0
while read -r v; do
  timeout -k 5 60 "$RT" report "$T/dcorpus/$v" -o "$T/d.html" > /dev/null 2>&1 < /dev/null
  [ -s "$T/d.html" ] || continue
  nd=$((nd + 1))
  grep -oiE '<(svg|rect|polyline|line)[^>]*>' "$T/d.html" | grep -qiE '"[^"]*(nan|inf)' && bad "$v: NaN or Infinity in the report's SVG"
  grep -qi '<script' "$T/d.html" && bad "$v: a script element in the report"
  rm -f "$T/d.html"
done < "$T/dvariants"
check "damaged device traces: $nd reports written, every SVG finite" [ "$nd" -ge 10 ]

if command -v chromium > /dev/null; then
  timeout 120 chromium --headless --no-sandbox --disable-gpu --window-size=1200,1400 \
    --screenshot="$T/bad.png" "file://$T/bad.html" > /dev/null 2>&1
  check "headless Chromium takes a screenshot" [ -s "$T/bad.png" ]
  check "the screenshot is not blank (PNG > 20 kB)" [ "$(stat -c %s "$T/bad.png")" -gt 20000 ]
  timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$T/bad.html" > "$T/dom.html" 2> /dev/null
  check "rendered page shows the verdict" grep -q 'skipped-fsdp-root</span>' "$T/dom.html"
  check "rendered page shows the finding" grep -q 'FSDP root forward never ran' "$T/dom.html"
  check "rendered page has a lane per rank" [ "$(grep -o '<div class="lane">rank [0-3]</div>' "$T/dom.html" | wc -l)" -eq 4 ]
  check "rendered report (4.53.0): timeline active >= 60 % of its width, a legend per device plotted, text in every placement cell" \
    python3 "$HERE/check_report.py" "$T/dom.html"
  "$RT" report "$T/good" -o "$T/good.html" 2> /dev/null
  timeout 120 chromium --headless --no-sandbox --disable-gpu --window-size=1200,1400 \
    --screenshot="$T/good.png" "file://$T/good.html" > /dev/null 2>&1
  check "healthy report: a non-blank screenshot" [ "$(stat -c %s "$T/good.png" 2>/dev/null || echo 0)" -gt 20000 ]
  timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$T/good.html" > "$T/gdom.html" 2> /dev/null
  check "rendered report (healthy): timeline active >= 60 %, a legend per device plotted, text in every placement cell" \
    python3 "$HERE/check_report.py" "$T/gdom.html"
  check "rendered report: the zoom is CSS only (radio buttons), the charts stretch in their viewBox" \
    bash -c "grep -q 'id=\"z4\"' '$T/gdom.html' && grep -q 'preserveAspectRatio=\"none\"' '$T/gdom.html'"
  timeout 120 chromium --headless --no-sandbox --disable-gpu --window-size=1200,1600 \
    --screenshot="$T/slow.png" "file://$T/slow.html" > /dev/null 2>&1
  check "device report: a non-blank screenshot" [ "$(stat -c %s "$T/slow.png" 2>/dev/null || echo 0)" -gt 20000 ]
  timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$T/slow.html" > "$T/sdom.html" 2> /dev/null
  check "rendered device report: rank 2 the straggler, its all-gathers 20 ms late within 20 %, view's figures, bars inside their charts" \
    python3 "$HERE/check_report_device.py" "$T/sdom.html" --straggler 2 --late-ms 20 --view-json "$T/slow.json"
  check "rendered device report: the rest of the page as before" python3 "$HERE/check_report.py" "$T/sdom.html"
  check "rendered device report (healthy): no straggler, no lateness chart" \
    python3 "$HERE/check_report_device.py" "$T/gdom.html" --none
  check "the hostile name stayed text in the DOM" grep -qF '&lt;script&gt;alert(1)&lt;/script&gt;' "$T/dom.html"
  timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$T/param.html" > "$T/pdom.html" 2> /dev/null
  check "rendered heatmap: the <script> parameter is a text cell, no script element" bash -c "grep -qF '&lt;script&gt;alert(1)&lt;/script&gt;</td>' '$T/pdom.html' && ! grep -qi '<script' '$T/pdom.html'"
else
  bad "chromium is not installed (scripts/setup.sh installs it)"
fi
finish
