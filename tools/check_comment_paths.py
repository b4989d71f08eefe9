#!/usr/bin/env python3
"""Source comments name only files and folders that exist.

A comment that points the reader at src/..., include/..., tests/..., tools/... or docs/... must
name a path of this repository: a file renamed or removed leaves comments that send readers
nowhere. A stem names the files it starts (tests/golden/<name> for its .json and .bin). Paths with
placeholders (<model>, *, {a,b}, $VAR, ...) are patterns, not names, and
are not checked.

Usage: tools/check_comment_paths.py [REPO_ROOT]   (exit 0: clean; 1: each stale path printed)
"""

import pathlib
import re
import sys

ROOTS = ("src", "include", "tests", "tools", "docs", "bench", "cli", "python", "cmake", "fuzz",
         "examples")
C_LIKE = {".h", ".hpp", ".cpp", ".cc", ".c", ".cu"}
HASH = {".py", ".sh", ".cmake", ".txt", ".toml"}
# A path token: one of the named top folders, then path characters; not part of a longer word
# or of a URL (the character before it is not a letter, digit, '/', '.', '_' or '-').
PATH = re.compile(r"(?<![\w/.\-])((?:src|include|tests|tools|docs)/[\w./\-]*[\w/])")
SKIP_AFTER = re.compile(r"[<*{$…]")  # a placeholder right after the token: a pattern


def comments(path, text):
    """The comment text of a file, line by line: (line number, text)."""
    if path.suffix in C_LIKE:
        in_block = False
        for n, line in enumerate(text.splitlines(), 1):
            if in_block:
                end = line.find("*/")
                yield n, line if end < 0 else line[:end]
                in_block = end < 0
                continue
            i = line.find("//")
            j = line.find("/*")
            if i >= 0 and (j < 0 or i < j):
                yield n, line[i + 2:]
            elif j >= 0:
                end = line.find("*/", j + 2)
                yield n, line[j + 2:] if end < 0 else line[j + 2:end]
                in_block = end < 0
    elif path.suffix in HASH or path.name == "CMakeLists.txt":
        for n, line in enumerate(text.splitlines(), 1):
            i = line.find("#")
            if i >= 0:
                yield n, line[i + 1:]
        if path.suffix == ".py":  # docstrings: the module's and the functions'
            for m in re.finditer(r'"""(.*?)"""', text, re.S):
                first = text.count("\n", 0, m.start()) + 1
                for k, line in enumerate(m.group(1).splitlines()):
                    yield first + k, line


def stale_paths(root):
    files = [p for top in ROOTS if (root / top).is_dir() for p in sorted((root / top).rglob("*"))
             if p.is_file() and "golden" not in p.parts]
    files.append(root / "CMakeLists.txt")
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in comments(path, text):
            for m in PATH.finditer(line):
                token = m.group(1).rstrip(".")
                if SKIP_AFTER.match(line, m.end()) or token.endswith("/..."):
                    continue
                # A stem that names files by their start (a golden's .json and .bin) counts.
                target = root / token
                if not target.exists() and not any(target.parent.glob(target.name + ".*")):
                    yield f"{path.relative_to(root)}:{n}: {token}"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    bad = list(stale_paths(root))
    for b in bad:
        print(b)
    print(f"{len(bad)} stale paths in comments")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
