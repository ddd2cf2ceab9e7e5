#!/usr/bin/env bash
# Applies the enb-patches series to a srsRAN_4G checkout at the base tag (BASE), with git am, in the order of
# `series`. Stops with one clear message on the first problem; never applies on top of anything else.
#
#   enb-patches/apply.sh SRSRAN_DIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
me="apply.sh"

fail() {
    echo "$me: $*" >&2
    exit 1
}

if [ "$#" -ne 1 ]; then
    echo "usage: $me SRSRAN_DIR   (a srsRAN_4G git checkout at the base tag in $here/BASE)" >&2
    exit 2
fi
dir="$1"

command -v git >/dev/null || fail "git is not installed"
[ -f "$here/BASE" ] || fail "$here/BASE is missing (it names the base tag and its commit)"
[ -f "$here/series" ] || fail "$here/series is missing (it lists the patches in order)"
read -r base_tag base_commit < "$here/BASE" || true
[[ "${base_tag:-}" != "" && "${base_commit:-}" =~ ^[0-9a-f]{40}$ ]] ||
    fail "$here/BASE must hold 'TAG COMMIT' (a 40-hex commit id), it holds '$(head -c 200 "$here/BASE")'"

[ -d "$dir" ] || fail "$dir is not a directory"
[ "$(git -C "$dir" rev-parse --is-inside-work-tree 2>/dev/null || true)" = "true" ] ||
    fail "$dir is not a git work tree (clone srsRAN_4G and check out $base_tag first)"
top="$(git -C "$dir" rev-parse --show-toplevel)"

# The patches, in order; every line of `series` names a file next to it (blank lines and # comments aside).
patches=()
while IFS= read -r line || [ -n "$line" ]; do
    line="${line%%#*}"
    line="$(echo "$line" | tr -d '[:space:]')"
    [ -z "$line" ] && continue
    [ -f "$here/$line" ] || fail "series lists $line, which is not in $here"
    patches+=("$here/$line")
done < "$here/series"
[ "${#patches[@]}" -gt 0 ] || fail "$here/series lists no patch"

# No git am or rebase half done.
gitdir="$(git -C "$top" rev-parse --absolute-git-dir)"
for state in rebase-apply rebase-merge; do
    [ ! -e "$gitdir/$state" ] ||
        fail "a git am or rebase is in progress in $top ($state); finish it or run 'git -C $top am --abort'"
done

# Exactly the base commit: the tag's name is checked against its commit too, since a tag can be moved.
head="$(git -C "$top" rev-parse --verify -q HEAD || true)"
if [ "$head" != "$base_commit" ]; then
    described="$(git -C "$top" describe --tags --always HEAD 2>/dev/null || echo "$head")"
    fail "$top is at ${head:-no commit} ($described), not $base_tag ($base_commit); run 'git -C $top checkout $base_tag' on a clean tree first (is the series already applied? 'git -C $top log --oneline -${#patches[@]}' shows it)"
fi
tag_commit="$(git -C "$top" rev-parse --verify -q "refs/tags/$base_tag^{commit}" || true)"
if [ -n "$tag_commit" ] && [ "$tag_commit" != "$base_commit" ]; then
    fail "tag $base_tag in $top points to $tag_commit, not to $base_commit: this is not the upstream $base_tag"
fi

# Nothing staged, and no local change to a file the series touches. A tracked file missing from the work tree
# elsewhere (an incomplete clone: srsRAN's large test-data blobs) does not stop git am and is only reported.
touched="$(sed -n 's|^diff --git a/\(.*\) b/.*$|\1|p' "${patches[@]}" | sort -u)"
git -C "$top" diff --cached --quiet ||
    fail "$top has staged changes: $(git -C "$top" diff --cached --name-only | head -5 | tr '\n' ' ')"
missing=()
while IFS= read -r entry; do
    [ -z "$entry" ] && continue
    status="${entry:0:2}"
    path="${entry:3}"
    if [ "$status" = " D" ] && ! grep -qxF "$path" <<< "$touched"; then
        missing+=("$path")
    else
        fail "$top has a local change to $path ($status); commit, stash or discard it first"
    fi
done < <(git -C "$top" status --porcelain --untracked-files=no)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "$me: note: ${#missing[@]} tracked file(s) missing from the work tree, not touched by the series: ${missing[*]}" >&2
    # git am writes trees from the index. With the index read again from HEAD (its content is HEAD's: nothing is
    # staged), its tree cache holds the trees of the folders the series leaves alone, so git never needs the content
    # of those files. Files and HEAD stay as they are.
    git -C "$top" read-tree HEAD || fail "git read-tree HEAD failed in $top"
    git -C "$top" update-index -q --refresh >/dev/null || true
fi

# git am needs a committer; use the repository's, else a neutral one (said so).
if ! git -C "$top" var GIT_COMMITTER_IDENT >/dev/null 2>&1; then
    export GIT_COMMITTER_NAME="enb-patches apply.sh" GIT_COMMITTER_EMAIL="apply.sh@localhost"
    echo "$me: note: no git identity configured in $top; committing as '$GIT_COMMITTER_NAME <$GIT_COMMITTER_EMAIL>'" >&2
fi

# One git am session: on failure, --abort returns the checkout to the base commit.
if ! output="$(git -C "$top" am "${patches[@]}" 2>&1)"; then
    git -C "$top" am --abort >/dev/null 2>&1 || true
    failed="$(sed -n 's/^Patch failed at \([0-9]*\) .*/\1/p' <<< "$output" | head -1)"
    which="the series"
    if [ -n "$failed" ]; then
        k=$((10#$failed))
        which="patch $k/${#patches[@]} $(basename "${patches[$((k - 1))]}")"
    fi
    now="$(git -C "$top" rev-parse --verify -q HEAD || true)"
    if [ "$now" = "$base_commit" ]; then
        where="it is back at $base_tag"
    else
        where="it is at ${now:-no commit}, not back at $base_tag: check it with git status"
    fi
    echo "$me: $which does not apply to $top; $where." >&2
    echo "$me: git am said:" >&2
    sed 's/^/    /' <<< "$output" >&2
    if grep -q "invalid object\|unable to read" <<< "$output"; then
        echo "$me: (git lacks an object of $base_tag: the clone is incomplete; clone srsRAN_4G again)" >&2
    fi
    exit 1
fi
sed -n 's/^Applying: /applied: /p' <<< "$output"

applied="$(git -C "$top" rev-list --count "$base_commit..HEAD")"
[ "$applied" = "${#patches[@]}" ] || fail "after git am, $top is $applied commits past $base_tag, expected ${#patches[@]}"
echo "$me: $top is at $(git -C "$top" rev-parse --short HEAD), ${#patches[@]} patches on $base_tag (${base_commit:0:9})"
