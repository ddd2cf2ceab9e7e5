#!/usr/bin/env bash
# Builds srsRAN_4G with the enb-patches series, out of the source tree: clones srsRAN_4G at the base tag (BASE)
# when the source folder does not exist, applies the series with apply.sh, configures with CMake (ZeroMQ on, Release),
# builds srsenb, srsue, srsepc and the RF plugins with make, runs the series' unit tests with ctest, and prints the
# line to export for `rnf run` and the tests:  export SRSRAN_BUILD=/abs/build/dir
#
#   enb-patches/build.sh [options]            (`make srsran` runs it with --dir ../srsran)
#
# Options (--option value or --option=value):
#   --repo URL          where to clone srsRAN_4G from (env SRSRAN_REPO; default upstream,
#                       https://github.com/srsran/srsRAN_4G.git); a local path or mirror works too
#   --dir DIR           the folder holding srsRAN_4G/ and build/ (env SRSRAN_DIR; default: the current directory)
#   --source DIR        the srsRAN_4G checkout (default DIR/srsRAN_4G)
#   --build DIR         the build tree (default DIR/build)
#   --jobs N            parallel compile jobs (env SRSRAN_JOBS; default nproc)
#   --nice N            niceness of the compiler (env SRSRAN_NICE; default 10), so the machine stays usable
#   --cmake-arg ARG     one more CMake argument after the script's own, repeatable (env SRSRAN_CMAKE_ARGS: several,
#                       separated by spaces), e.g. --cmake-arg -DCMAKE_INSTALL_PREFIX=/opt/srsran
#   --target T          build T instead of the default targets, repeatable (env SRSRAN_TARGETS: several, separated
#                       by spaces). Default: srsenb srsue srsepc srsran_rf_zmq, and srsran_rf_uhd when CMake found UHD
#   --no-tests          neither build nor run the series' unit tests (env SRSRAN_TESTS=0; default: run them)
#   --vectors DIR       the telemetry golden vectors for the tests (env SRSRAN_VECTORS; default
#                       telemetry/vectors of the repository holding this script)
#   --clone-depth N     history depth of a new clone (default 1; 0: full history)
#   --sparse-exclude P  paths left out of a new clone's work tree, sparse-checkout patterns separated by spaces
#                       (default '*.data': srsRAN's captured I/Q test signals, which the build never reads; '' none)
#   --force             build even when the build tree's stamp says it is up to date
#   --check-source      only check the source folder, change nothing: exit 0 when it is absent, at the base tag or
#                       holds exactly the series on it; exit 1 with the reason otherwise
#
# The source folder, when it exists, must be at the base commit (the series is then applied) or hold exactly the
# series on it (HEAD's parents are the series' commits, by subject, on the base commit: nothing is applied again).
# Anything else is refused with one line naming the folder and why; nothing is changed then. UHD (USRPs) is built
# when srsRAN's CMake finds it, i.e. where libuhd-dev is installed. A stamp in the build tree (rnf-build.stamp)
# records what a successful run built; a run that would build the same again, on an unmodified source, only prints
# the export line. Needs git, cmake, make (and ctest with the tests), a C++ compiler and libzmq (libzmq3-dev).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
me="build.sh"
upstream="https://github.com/srsran/srsRAN_4G.git"
test_targets=(telemetry_message_test telemetry_config_test telemetry_exporter_test)

fail() {
    echo "$me: $*" >&2
    exit 1
}
usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
}
usage_fail() {
    echo "$me: $* (see $me --help)" >&2
    exit 2
}

# --- Options: the environment first, flags over it -------------------------------------------------------------
repo="${SRSRAN_REPO:-$upstream}"
dir="${SRSRAN_DIR:-$PWD}"
src=""
build=""
jobs="${SRSRAN_JOBS:-}"
nice_n="${SRSRAN_NICE:-10}"
read -r -a cmake_extra <<< "${SRSRAN_CMAKE_ARGS:-}"
read -r -a targets <<< "${SRSRAN_TARGETS:-}"
tests="${SRSRAN_TESTS:-1}"
vectors="${SRSRAN_VECTORS:-$here/../telemetry/vectors}"
depth=1
sparse_exclude="*.data"
force=0
check_only=0

while [ "$#" -gt 0 ]; do
    case "$1" in
        --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;; # --option=value: as --option value
    esac
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --no-tests) tests=0 ;;
        --force) force=1 ;;
        --check-source) check_only=1 ;;
        --repo | --dir | --source | --build | --jobs | --nice | --cmake-arg | --target | --vectors | --clone-depth | --sparse-exclude)
            [ "$#" -ge 2 ] || usage_fail "$1 needs a value"
            case "$1" in
                --repo) repo="$2" ;;
                --dir) dir="$2" ;;
                --source) src="$2" ;;
                --build) build="$2" ;;
                --jobs) jobs="$2" ;;
                --nice) nice_n="$2" ;;
                --cmake-arg) cmake_extra+=("$2") ;;
                --target) targets+=("$2") ;;
                --vectors) vectors="$2" ;;
                --clone-depth) depth="$2" ;;
                --sparse-exclude) sparse_exclude="$2" ;;
            esac
            shift
            ;;
        *) usage_fail "unknown option '$1'" ;;
    esac
    shift
done

[ -n "$dir" ] || usage_fail "--dir is empty"
src="${src:-$dir/srsRAN_4G}"
build="${build:-$dir/build}"
[ -n "$repo" ] || usage_fail "--repo is empty"
{ [[ "$nice_n" =~ ^-?[0-9]+$ ]] && [ "$nice_n" -ge -20 ] && [ "$nice_n" -le 19 ]; } ||
    usage_fail "--nice must be an integer from -20 to 19, not '$nice_n'"
[[ "$depth" =~ ^[0-9]+$ ]] || usage_fail "--clone-depth must be 0 (full history) or a positive integer, not '$depth'"
[[ "$tests" =~ ^[01]$ ]] || usage_fail "SRSRAN_TESTS must be 0 or 1, not '$tests'"

# --- Tools ------------------------------------------------------------------------------------------------------
needed=(git)
[ "$check_only" = 1 ] || needed+=(cmake make nice)
[ "$check_only" = 1 ] || [ "$tests" = 0 ] || needed+=(ctest)
missing=()
for tool in "${needed[@]}"; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
[ "${#missing[@]}" -eq 0 ] ||
    fail "not installed: ${missing[*]} (Debian: apt-get install git cmake make build-essential, or 'sudo make srsran' does it)"

if [ -z "$jobs" ]; then
    jobs="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
fi
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || usage_fail "--jobs must be a positive integer, not '$jobs'"

# --- The series: BASE and the patches of `series`, with the subjects git am gives their commits ----------------
[ -f "$here/BASE" ] || fail "$here/BASE is missing (it names the base tag and its commit)"
[ -f "$here/series" ] || fail "$here/series is missing (it lists the patches in order)"
[ -f "$here/apply.sh" ] || fail "$here/apply.sh is missing (it applies the series)"
read -r base_tag base_commit < "$here/BASE" || true
[[ "${base_tag:-}" != "" && "${base_commit:-}" =~ ^[0-9a-f]{40}$ ]] ||
    fail "$here/BASE must hold 'TAG COMMIT' (a 40-hex commit id), it holds '$(head -c 200 "$here/BASE")'"
patches=()
subjects=()
while IFS= read -r line || [ -n "$line" ]; do
    line="${line%%#*}"
    line="$(echo "$line" | tr -d '[:space:]')"
    [ -z "$line" ] && continue
    [ -f "$here/$line" ] || fail "series lists $line, which is not in $here"
    patches+=("$here/$line")
    subjects+=("$(git mailinfo /dev/null /dev/null < "$here/$line" | sed -n 's/^Subject: //p')")
done < "$here/series"
n="${#patches[@]}"
[ "$n" -gt 0 ] || fail "$here/series lists no patch"

# --- The source folder: absent, at the base commit, or exactly the series on it ---------------------------------
refuse() {
    fail "$src $*: it is neither $base_tag nor the series applied on it; move it away or give another --source (nothing was changed)"
}
source_state() {
    if [ ! -e "$src" ] || { [ -d "$src" ] && [ -z "$(ls -A "$src")" ]; }; then
        echo absent
        return
    fi
    [ -d "$src" ] || refuse "is not a directory"
    local top head described count k have
    top="$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" || refuse "is not a git work tree"
    [ "$top" = "$(cd "$src" && pwd -P)" ] || refuse "is inside the git work tree $top, not its top"
    local gitdir state
    gitdir="$(git -C "$src" rev-parse --absolute-git-dir)"
    for state in rebase-apply rebase-merge; do
        [ ! -e "$gitdir/$state" ] || refuse "has a git am or rebase in progress ($state)"
    done
    head="$(git -C "$src" rev-parse --verify -q HEAD)" || refuse "has no commit"
    if [ "$head" = "$base_commit" ]; then
        echo base
        return
    fi
    described="$(git -C "$src" describe --tags --always HEAD 2>/dev/null || echo "${head:0:9}")"
    git -C "$src" merge-base --is-ancestor "$base_commit" "$head" 2>/dev/null ||
        refuse "is at $head ($described), not on $base_tag ($base_commit)"
    count="$(git -C "$src" rev-list --count "$base_commit..$head")"
    { [ "$count" = "$n" ] && [ "$(git -C "$src" rev-parse -q --verify "$head~$n" || true)" = "$base_commit" ]; } ||
        refuse "is at $head ($described), $count commit(s) past $base_tag; the series has $n patches"
    k=0
    while IFS= read -r have; do
        [ "$have" = "${subjects[$k]}" ] ||
            refuse "is at $head ($described): commit $((k + 1)) past $base_tag is '$have', patch $((k + 1)) of the series is '${subjects[$k]}'"
        k=$((k + 1))
    done < <(git -C "$src" log --reverse --first-parent --format=%s "$base_commit..$head")
    echo applied
}

state="$(source_state)" || exit 1
if [ "$check_only" = 1 ]; then
    case "$state" in
        absent) echo "$me: $src does not exist: it will be cloned" ;;
        base) echo "$me: $src is at $base_tag: the series will be applied" ;;
        applied) echo "$me: $src holds the series ($n patches on $base_tag)" ;;
    esac
    exit 0
fi

# libzmq: the ZeroMQ radio and the telemetry exporter need it. pkg-config's word when it is there (libzmq3-dev
# installs libzmq.pc), else its header in the usual places.
if command -v pkg-config >/dev/null; then
    pkg-config --exists libzmq || fail "libzmq is not installed (pkg-config knows no libzmq): apt-get install libzmq3-dev"
elif [ ! -f /usr/include/zmq.h ] && [ ! -f /usr/local/include/zmq.h ]; then
    fail "libzmq is not installed (no zmq.h in /usr/include or /usr/local/include): apt-get install libzmq3-dev"
fi
if [ "$tests" = 1 ]; then
    [ -d "$vectors" ] || fail "the telemetry golden vectors $vectors are not there (--vectors DIR, or --no-tests)"
    vectors="$(cd "$vectors" && pwd)"
fi

# --- Clone (blobless, shallow, without the I/Q test signals) and apply ----------------------------------------
case "$state" in
    absent)
        mkdir -p "$(dirname "$src")"
        clone=(clone --quiet --filter=blob:none --no-checkout --branch "$base_tag")
        [ "$depth" = 0 ] || clone+=(--depth "$depth")
        echo "$me: cloning $repo at $base_tag into $src"
        git "${clone[@]}" "$repo" "$src" || fail "cloning $repo at $base_tag into $src failed (git's words above)"
        read -r -a excluded <<< "$sparse_exclude"
        if [ "${#excluded[@]}" -gt 0 ]; then
            git -C "$src" sparse-checkout set --no-cone '/*' "${excluded[@]/#/!}" ||
                fail "git sparse-checkout in $src failed"
        fi
        git -C "$src" checkout --quiet --detach "$base_tag" || fail "checking out $base_tag in $src failed"
        bash "$here/apply.sh" "$src"
        ;;
    base)
        bash "$here/apply.sh" "$src"
        ;;
    applied)
        echo "$me: $src holds the series already ($n patches on $base_tag, at $(git -C "$src" rev-parse --short HEAD)): not applied again"
        ;;
esac
src="$(cd "$src" && pwd)"
head="$(git -C "$src" rev-parse HEAD)"
# Local changes on top of the series are built (a developer's edits), and said so; missing *.data files (I/Q test
# signals of an incomplete clone) are not changes the build sees.
changes="$(git -C "$src" status --porcelain --untracked-files=no | grep -v '^ D .*\.data$' || true)"
if [ -n "$changes" ]; then
    echo "$me: note: $src has local changes to $(wc -l <<< "$changes") tracked file(s); they are built: $(head -3 <<< "$changes" | cut -c4- | tr '\n' ' ')"
fi

mkdir -p "$build"
build="$(cd "$build" && pwd)"
case "$build/" in
    "$src"/*) echo "$me: note: the build tree $build is inside the source tree" ;;
esac

cmake_args=(-DENABLE_ZEROMQ=ON -DCMAKE_BUILD_TYPE=Release)
[ "$tests" = 0 ] || cmake_args+=("-DSRSENB_TELEMETRY_VECTORS=$vectors")
cmake_args+=("${cmake_extra[@]}")

# --- The stamp: what a successful run built; the same again on an unmodified source is not built again ---------
stamp="$build/rnf-build.stamp"
uhd="$(pkg-config --modversion uhd 2>/dev/null || echo none)"
fingerprint() {
    echo "# $me: what this build tree holds; $me does not build it again while this matches (--force does)"
    echo "source=$src"
    echo "head=$head"
    echo "series_sha256=$(cat "$here/BASE" "$here/series" "${patches[@]}" "$here/apply.sh" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
    echo "cmake_args=${cmake_args[*]}"
    echo "targets=${targets[*]:-default (uhd: $uhd)}"
    echo "tests=$tests"
    if [ "$tests" = 1 ]; then
        echo "vectors_sha256=$(cd "$vectors" && find . -type f | LC_ALL=C sort | xargs -r sha256sum | sha256sum | cut -d' ' -f1)"
    fi
}
built_all() {
    local program
    for program in srsenb srsue srsepc; do
        if [ "${#targets[@]}" -eq 0 ] || [[ " ${targets[*]} " == *" $program "* ]]; then
            [ -x "$build/$program/src/$program" ] || return 1
        fi
    done
}
wanted="$(fingerprint)"
if [ "$force" = 0 ] && [ -z "$changes" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && built_all; then
    echo "$me: $build is up to date ($n patches on $base_tag, the same options; $stamp): nothing to build (--force builds anyway)"
    echo "export SRSRAN_BUILD=$build"
    exit 0
fi
rm -f "$stamp"

# --- Configure, build, test -------------------------------------------------------------------------------------
echo "$me: configuring $build: cmake $src ${cmake_args[*]}"
(cd "$build" && cmake "$src" "${cmake_args[@]}") || fail "cmake failed in $build (its output above; $build/CMakeFiles/CMakeError.log)"

if [ "${#targets[@]}" -eq 0 ]; then
    targets=(srsenb srsue srsepc srsran_rf_zmq)
    if (cd "$build" && make help 2>/dev/null) | grep -qw srsran_rf_uhd; then
        targets+=(srsran_rf_uhd)
        echo "$me: UHD found: building srsran_rf_uhd (USRPs) too"
    else
        echo "$me: UHD not found: ZeroMQ radio only (for a USRP install libuhd-dev and run $me again)"
    fi
fi
[ "$tests" = 0 ] || targets+=("${test_targets[@]}")

echo "$me: building in $build: nice -n $nice_n make -j $jobs ${targets[*]}"
(cd "$build" && nice -n "$nice_n" make -j "$jobs" "${targets[@]}") || fail "make failed in $build (its output above)"

if [ "$tests" = 1 ]; then
    echo "$me: running the series' unit tests: ctest -R telemetry --output-on-failure"
    output="$(cd "$build" && ctest -R telemetry --output-on-failure 2>&1)" && status=0 || status=$?
    echo "$output"
    [ "$status" = 0 ] || fail "the series' unit tests failed in $build (ctest's output above)"
    ! grep -q "No tests were found" <<< "$output" ||
        fail "ctest found no telemetry test in $build: is SRSENB_TELEMETRY_VECTORS set in its CMakeCache.txt?"
fi

echo "$wanted" > "$stamp"
echo "$me: built ${targets[*]} in $build from $src ($n patches on $base_tag, at ${head:0:9})"
echo "export SRSRAN_BUILD=$build"
