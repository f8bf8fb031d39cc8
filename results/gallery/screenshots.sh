#!/usr/bin/env bash
# Regenerates the report screenshots of results/gallery/ (README, "Reports"): runs the compare,
# serving (with hf-naive), multi-folder and sweep examples into a temporary folder, reports the
# committed capacity folder, and opens each report in headless Chromium. Each PNG must stay under
# 400 KB; the script says so where one does not.
#   results/gallery/screenshots.sh            # from the repository root
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out="$root/results/gallery"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
chromium="${CHROMIUM:-/usr/bin/chromium}"

./kvsim compare --quiet -o "$tmp/compare" >/dev/null
./kvsim serving requests:preset=sharegpt,count=300 --system vllm,orca-max,hf-naive -q -o "$tmp/serving" >/dev/null
./kvsim report results/gallery/capacity-opt13b-sharegpt -o "$tmp/capacity.html" >/dev/null
./kvsim replay churn:ops=1500,seed=1 -a first-fit,best-fit,slab --quiet -o "$tmp/base" >/dev/null
./kvsim replay churn:ops=1500,seed=2 -a first-fit,best-fit,slab --quiet -o "$tmp/new" >/dev/null
./kvsim report "$tmp/base" "$tmp/new" --label seed-1,seed-2 -o "$tmp/multi.html" >/dev/null
printf 'workloads: ["churn:ops=1000"]\nallocators: [first-fit, best-fit, buddy, pytorch-caching]\nseeds: 1..10\n' >"$tmp/grid.yaml"
./kvsim sweep "$tmp/grid.yaml" -q -o "$tmp/sweep" >/dev/null

shot() { # NAME HTML HEIGHT
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
    --window-size=1200,"$3" --screenshot="$out/report-$1.png" "file://$2" 2>/dev/null
  local size
  size=$(stat -c %s "$out/report-$1.png")
  if ((size > 400000)); then
    echo "screenshots: report-$1.png is $size bytes, over 400 KB; lower its height" >&2
    exit 1
  fi
  echo "results/gallery/report-$1.png ($size bytes)"
}
shot compare "$tmp/compare/report.html" 1500
shot serving-hf-naive "$tmp/serving/report.html" 2300
shot capacity "$tmp/capacity.html" 1500
shot multi-folder "$tmp/multi.html" 1500
shot sweep "$tmp/sweep/report.html" 1500
