#!/usr/bin/env bash
# Runs one command and prints its JSON report with the peak anonymous resident memory
# (RssAnon: heap and device buffers of a software driver; mapped file pages, which the page
# cache holds, are not counted), sampled every 0.2 s.
#   benches/streaming/measure.sh target/release/wgpu-unsupervised kmeans --input /tmp/big.npy ...
set -euo pipefail
out=$(mktemp)
"$@" > "$out" &
pid=$!
peak=0
while kill -0 "$pid" 2>/dev/null; do
    a=$(awk '/RssAnon/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [[ -n "$a" && "$a" -gt "$peak" ]]; then peak=$a; fi
    sleep 0.2
done
wait "$pid"
echo "$(cat "$out") peak_rss_anon_mib=$((peak / 1024))"
rm -f "$out"
