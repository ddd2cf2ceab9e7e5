"""Write the files a patch series creates under given folders into a build directory, byte for byte.

The standalone build of the telemetry library (enb-patches/standalone/Makefile) takes its sources straight from
the series instead of from copies kept in the repository. Only new-file hunks are read (`new file mode`, one
`@@ -0,0 +1,N @@` hunk); each extracted file is checked against the blob id on the patch's `index` line, so a
mangled patch or a parsing slip stops the build. A later patch of the series that modifies one of those files
would make the extraction stale, so that is refused too.

    extract.py SERIES_DIR OUT_DIR PREFIX [PREFIX ...]
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

_HUNK = re.compile(r"^@@ -0,0 \+1(?:,(\d+))? @@")


class PatchError(ValueError):
    """The series does not yield the files cleanly."""


@dataclass(frozen=True)
class NewFile:
    path: str
    blob: str  # abbreviated git blob id from the `index 000000000..BLOB` line
    content: bytes


def _sections(text: str) -> list[list[str]]:
    sections: list[list[str]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            sections.append([])
        if sections:
            sections[-1].append(line)
    return sections


def _path_of(header: str) -> str:
    match = re.match(r"^diff --git a/(\S+) b/(\S+)$", header.rstrip("\n"))
    if match is None:
        raise PatchError(f"unexpected header {header!r}")
    return match.group(2)


def new_files(patch: Path) -> tuple[list[NewFile], list[str]]:
    """The files `patch` creates, and the paths it modifies."""
    created: list[NewFile] = []
    modified: list[str] = []
    for section in _sections(patch.read_text(encoding="utf-8")):
        path = _path_of(section[0])
        if not any(line.startswith("new file mode") for line in section[1:4]):
            modified.append(path)
            continue
        index = next((line for line in section if line.startswith("index ")), None)
        hunk_at = next((i for i, line in enumerate(section) if line.startswith("@@")), None)
        if index is None or hunk_at is None:
            raise PatchError(f"{patch.name}: {path}: no index line or no hunk")
        hunk = _HUNK.match(section[hunk_at])
        if hunk is None:
            raise PatchError(f"{patch.name}: {path}: {section[hunk_at].strip()} is not a new-file hunk")
        count = int(hunk.group(1) or 1)
        body = section[hunk_at + 1 : hunk_at + 1 + count]
        if len(body) != count or any(not line.startswith("+") for line in body):
            raise PatchError(f"{patch.name}: {path}: the hunk does not hold {count} added lines")
        rest = section[hunk_at + 1 + count :]
        content = "".join(line[1:] for line in body)
        if rest and rest[0].startswith("\\ No newline at end of file"):
            content = content.removesuffix("\n")
        blob = index.split()[1].split("..")[1]
        created.append(NewFile(path, blob, content.encode("utf-8")))
    return created, modified


def git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def extract(series_dir: Path, out: Path, prefixes: list[str]) -> list[Path]:
    """Write the new files under `prefixes` of every patch listed in SERIES_DIR/series; return their paths."""
    names = [line.split("#")[0].strip() for line in (series_dir / "series").read_text().splitlines()]
    written: list[Path] = []
    wanted: set[str] = set()
    for name in filter(None, names):
        created, modified = new_files(series_dir / name)
        stale = [path for path in modified if path in wanted]
        if stale:
            raise PatchError(f"{name} modifies {', '.join(stale)}: extracting new files alone would be stale")
        for new in created:
            if not any(new.path.startswith(prefix) for prefix in prefixes):
                continue
            if not git_blob_id(new.content).startswith(new.blob):
                raise PatchError(f"{name}: {new.path}: extracted content does not match blob {new.blob}")
            target = out / new.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(new.content)
            wanted.add(new.path)
            written.append(target)
    if not written:
        raise PatchError(f"no new file under {', '.join(prefixes)} in the series of {series_dir}")
    return written


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        written = extract(Path(argv[1]), Path(argv[2]), argv[3:])
    except (PatchError, OSError) as error:
        print(f"extract.py: {error}", file=sys.stderr)
        return 1
    print(f"extract.py: {len(written)} files from the series into {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
