"""The documentation runs: every ```python block of README.md and docs/**/*.md executes as
written, and every relative link in them points to a file of the repository.

Each block runs in a fresh namespace, with the working directory a new temporary
directory (so a block may write files) that holds a link to the repository's
``scenarios/`` folder (so ``run_scenario("scenarios/survey.toml")`` works as it does from
the repository root). Blocks are meant to be quick (well under ~2 s each); fenced blocks in
other languages (bash, toml, text, plain output) are not run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

#: A fenced block: opening fence at the start of a line, its info string, the body.
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", flags=re.S | re.M)
#: Inline and reference-style targets of markdown links and images: ``[text](target)``.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _blocks() -> list[tuple[str, int, str]]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        python = [body for info, body in _FENCE.findall(text) if info.strip().split(" ")[0] == "python"]
        out.extend((_rel(page), i, body) for i, body in enumerate(python))
    return out


BLOCKS = _blocks()


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page``: lower case, punctuation other than
    ``-`` and ``_`` dropped, spaces to hyphens."""
    out = set()
    for line in _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return out


def _outside_code(text: str) -> str:
    """``text`` without fenced blocks, inline code spans and inline maths (``$...$``): what
    looks like a link there (``T[P, R](\\alpha)``) is not one."""
    text = _FENCE.sub("", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"\$[^$\n]+\$", "", text)


def test_docs_have_examples():
    pages_with_code = {page for page, _, _ in BLOCKS}
    assert "README.md" in pages_with_code
    assert len(BLOCKS) >= 12, f"expected the guides to carry their examples, found {len(BLOCKS)} blocks"


@pytest.mark.parametrize(("page", "index", "code"), BLOCKS, ids=[f"{p}#{i}" for p, i, _ in BLOCKS])
def test_python_block_runs(page, index, code, tmp_path, monkeypatch, capsys):
    os.symlink(ROOT / "scenarios", tmp_path / "scenarios", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page} python block {index}", "exec"), {"__name__": f"docs_block_{index}"})


@pytest.mark.parametrize("page", PAGES, ids=[_rel(p) for p in PAGES])
def test_relative_links_resolve(page):
    broken = []
    for target in _LINK.findall(_outside_code(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # an absolute URL (https:, mailto:)
        if target.startswith("#"):
            if target[1:] not in _anchors(page):
                broken.append(f"{target} (no such heading)")
            continue
        file_part, _, anchor = target.partition("#")
        path = (page.parent / file_part).resolve()
        if path.exists():
            if anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{target} (no such heading)")
            continue
        inside = path.is_relative_to(ROOT)
        broken.append(target if inside else f"{target} (outside the repository)")
    assert not broken, f"{_rel(page)}: links to missing files: {broken}"


#: Mentions of the project's notes that live outside the repository (a sibling folder and its
#: two upper-case Markdown files); written as patterns so that this file names none of them.
OUTSIDE = re.compile(r"\.\./s[h]ared|\bT[H]EORY\.md|\bD[E]SIGN\.md")


def test_no_links_outside_the_repository():
    for page in PAGES:
        found = OUTSIDE.findall(page.read_text(encoding="utf-8"))
        assert not found, f"{_rel(page)} mentions {found}: cite docs/ and docs/references.md instead"


def test_the_outside_pattern_matches_what_it_guards_against():
    for text in ("see ../" + "sh" + "ared" + "/x", "the " + "THEORY" + ".md formulas", "DESIGN" + ".md"):
        assert OUTSIDE.search(text), text
    assert not OUTSIDE.search("docs/theory.md and docs/design.md")
