#!/usr/bin/env bash
# The recorded cellular traces of the latency suite (ATT-LTE-driving-2016, TMobile-LTE-driving) and of the validation
# scenario (../validation-traces.toml: the others), from Mahimahi's repository (GPL-3, not redistributed here), into
# ./traces next to this script. MAHIMAHI_REPO: a clone or URL of Mahimahi (default: upstream on GitHub).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="${MAHIMAHI_REPO:-https://github.com/ravinet/mahimahi}"
traces=(ATT-LTE-driving-2016.down TMobile-LTE-driving.down ATT-LTE-driving.down TMobile-LTE-short.down
    TMobile-UMTS-driving.down Verizon-EVDO-driving.down Verizon-LTE-short.down ATT-LTE-driving-2016.up)
mkdir -p "$here/traces"
missing=0
for trace in "${traces[@]}"; do [ -s "$here/traces/$trace" ] || missing=1; done
if [ "$missing" = 0 ]; then echo "fetch-traces.sh: the traces are in $here/traces"; exit 0; fi
if [ -d "$repo" ]; then
    source_dir="$repo"
else
    source_dir="$(mktemp -d)"
    trap 'rm -rf "$source_dir"' EXIT
    git clone --quiet --depth 1 "$repo" "$source_dir" 2>/dev/null \
        || { echo "fetch-traces.sh: cannot clone $repo (MAHIMAHI_REPO: a clone or URL of Mahimahi)" >&2; exit 1; }
fi
for trace in "${traces[@]}"; do
    if [ -f "$source_dir/traces/$trace" ]; then
        cp "$source_dir/traces/$trace" "$here/traces/$trace"
    else  # a bare repository or mirror: read the file from HEAD
        git --git-dir="$source_dir" show "HEAD:traces/$trace" > "$here/traces/$trace" 2>/dev/null \
            || git -C "$source_dir" show "HEAD:traces/$trace" > "$here/traces/$trace" 2>/dev/null \
            || { rm -f "$here/traces/$trace"; echo "fetch-traces.sh: $repo has no traces/$trace" >&2; exit 1; }
    fi
    [ -s "$here/traces/$trace" ] || { echo "fetch-traces.sh: $trace is empty in $repo" >&2; exit 1; }
    echo "fetch-traces.sh: $here/traces/$trace ($(wc -l < "$here/traces/$trace") delivery opportunities)"
done
