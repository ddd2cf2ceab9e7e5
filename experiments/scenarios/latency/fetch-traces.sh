#!/usr/bin/env bash
# The recorded cellular traces of the latency suite (ATT-LTE-driving-2016, TMobile-LTE-driving) and of the validation
# scenarios (../validation-traces.toml, ../validation-stretches.toml, ../validation-midpoints.toml: the others), into
# ./traces next to this script, from two public repositories, neither redistributed here:
# - Mahimahi's drive traces (GPL-3). MAHIMAHI_REPO: a clone or URL of Mahimahi (default: upstream on GitHub).
# - C2TCP's LTE recordings in New York City, with cross traffic (Abbasloo et al., MIT license). C2TCP_REPO: a clone
#   or URL of C2TCP (default: upstream on GitHub).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mahimahi_repo="${MAHIMAHI_REPO:-https://github.com/ravinet/mahimahi}"
mahimahi_traces=(ATT-LTE-driving-2016.down TMobile-LTE-driving.down ATT-LTE-driving.down TMobile-LTE-short.down
    TMobile-UMTS-driving.down Verizon-EVDO-driving.down Verizon-LTE-short.down ATT-LTE-driving-2016.up
    ATT-LTE-driving.up TMobile-UMTS-driving.up Verizon-EVDO-driving.up)
c2tcp_repo="${C2TCP_REPO:-https://github.com/Soheil-ab/c2tcp}"
c2tcp_traces=(downlink-4g-with-cross-subway.pps downlink-4g-with-cross-times)
mkdir -p "$here/traces"

# fetch REPO VARIABLE TRACE...: copy each TRACE not here yet from the repository's traces/ folder
fetch() {
    local repo="$1" variable="$2" source_dir trace missing=()
    shift 2
    for trace in "$@"; do [ -s "$here/traces/$trace" ] || missing+=("$trace"); done
    [ "${#missing[@]}" -gt 0 ] || return 0
    if [ -d "$repo" ]; then
        source_dir="$repo"
    else
        source_dir="$(mktemp -d)"
        git clone --quiet --depth 1 "$repo" "$source_dir" 2>/dev/null || {
            rm -rf "$source_dir"
            echo "fetch-traces.sh: cannot clone $repo ($variable: a clone or URL of it)" >&2
            exit 1
        }
    fi
    for trace in "${missing[@]}"; do
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
    [ -d "$repo" ] || rm -rf "$source_dir"
}

fetch "$mahimahi_repo" MAHIMAHI_REPO "${mahimahi_traces[@]}"
fetch "$c2tcp_repo" C2TCP_REPO "${c2tcp_traces[@]}"
echo "fetch-traces.sh: the traces are in $here/traces"
