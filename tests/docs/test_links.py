#!/usr/bin/python3
"""Checks every relative link of the repository's Markdown files, and README.md's length.

For each Markdown file git knows (tracked, or new and not ignored), every link
`[text](target)`, image `![alt](target)` and reference definition `[name]: target` whose
target is not a URL must name a file or folder that exists, relative to the Markdown
file's folder; a `#anchor` on a Markdown target (or alone, for the same file) must match
one of that file's headings under GitHub's rules. Links in fenced code blocks and inline
code are not links and are skipped. README.md must be at most 300 lines.

Standard library only: /usr/bin/python3 tests/docs/test_links.py
"""
import os
import re
import subprocess
import sys
import unittest
import urllib.parse

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
README_MAX_LINES = 300

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
HTML_ANCHOR = re.compile(r"""<a\s[^>]*?(?:name|id)\s*=\s*["']([^"']+)["']""", re.I)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files():
    """Repository-relative paths of the Markdown files git tracks or would track."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
            cwd=ROOT, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        paths = sorted({p for p in out.decode().split("\0") if p})
        return [p for p in paths if os.path.isfile(os.path.join(ROOT, p))]
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout: every .md outside hidden and build folders.
        found = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not d.startswith("build")]
            found += [os.path.relpath(os.path.join(folder, f), ROOT)
                      for f in files if f.endswith(".md")]
        return sorted(found)


def prose_lines(text):
    """(line number, line) for each line outside fenced code blocks, inline code removed."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, INLINE_CODE.sub("", line)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                and not line.strip()[len(match.group(1)):].strip():
            fence = None


def slug(heading):
    """GitHub's anchor for a heading's text (before duplicates are numbered)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML tags
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)               # _emphasis_, not snake_case
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Every anchor a Markdown file defines: its headings' slugs, numbered as GitHub does,
    and explicit <a name=...> / id=... anchors."""
    seen = {}
    result = set()
    fence = None
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        result.update(HTML_ANCHOR.findall(line))
        heading = ATX_HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(text):
    """(line number, target) for each link, image and reference definition in prose."""
    for number, line in prose_lines(text):
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)


def broken_links(root=ROOT, files=None):
    """'file:line -> target (why)' for every relative link that does not resolve."""
    anchor_cache = {}

    def anchors_of(path):
        if path not in anchor_cache:
            with open(path, encoding="utf-8") as f:
                anchor_cache[path] = anchors(f.read())
        return anchor_cache[path]

    problems = []
    for name in files if files is not None else markdown_files():
        source = os.path.join(root, name)
        with open(source, encoding="utf-8") as f:
            text = f.read()
        for number, raw in links(text):
            target = raw[1:-1] if raw.startswith("<") and raw.endswith(">") else raw
            if SCHEME.match(target) or target.startswith("//"):
                continue  # http(s), mailto and other URLs
            path_part, _, anchor = target.partition("#")
            path_part = urllib.parse.unquote(path_part)
            anchor = urllib.parse.unquote(anchor)
            if path_part:
                resolved = os.path.normpath(os.path.join(os.path.dirname(source), path_part))
            else:
                resolved = source
            where = f"{name}:{number} -> {raw}"
            if not os.path.exists(resolved):
                problems.append(f"{where} (no such file)")
                continue
            if os.path.relpath(resolved, root).startswith(".."):
                problems.append(f"{where} (outside the repository)")
                continue
            if anchor and os.path.isfile(resolved) and resolved.endswith(".md"):
                if anchor not in anchors_of(resolved):
                    problems.append(f"{where} (no heading #{anchor} in "
                                    f"{os.path.relpath(resolved, root)})")
    return problems


class LinkTest(unittest.TestCase):
    def test_every_relative_link_resolves(self):
        files = markdown_files()
        self.assertIn("README.md", files)
        problems = broken_links(files=files)
        if problems:
            self.fail(f"{len(problems)} broken link(s), as file:line -> target:\n  "
                      + "\n  ".join(problems))

    def test_readme_is_at_most_300_lines(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            count = len(f.read().splitlines())
        self.assertLessEqual(count, README_MAX_LINES,
                             f"README.md has {count} lines; at most {README_MAX_LINES}: "
                             "move reference material to docs/ and link it")


class SlugTest(unittest.TestCase):
    """The heading rules the link check relies on."""

    def test_github_slugs(self):
        self.assertEqual(slug("Measured (this machine: 2 cores, no GPU)"),
                         "measured-this-machine-2-cores-no-gpu")
        self.assertEqual(slug("A cluster on one machine: netns hosts"),
                         "a-cluster-on-one-machine-netns-hosts")
        self.assertEqual(slug("One push/reply cycle (`bench/core/bench_cycle`)"),
                         "one-pushreply-cycle-benchcorebench_cycle")
        self.assertEqual(slug("GPU workers (`--device=cuda`)"), "gpu-workers---devicecuda")
        self.assertEqual(slug("Speedup at 1 to 128 workers, in virtual time (docs/speedup.png)"),
                         "speedup-at-1-to-128-workers-in-virtual-time-docsspeeduppng")

    def test_duplicate_headings_are_numbered(self):
        self.assertEqual(anchors("# A\n## A\n### A\n"), {"a", "a-1", "a-2"})

    def test_code_is_not_a_link(self):
        text = "```\n[x](missing.md)\n```\n`[y](missing.md)` and [z](here.md#h)\n"
        self.assertEqual(list(links(text)), [(4, "here.md#h")])


if __name__ == "__main__":
    unittest.main(verbosity=2)
