"""The documentation stands alone: every relative link in the repository's Markdown resolves to
a file or folder inside the repository, every `#anchor` to a heading of the page it points at,
and no link leaves the repository (a clone has nothing beside it).

Pure Python: no sidecar binary is started. (The suite's conftest still asks for one at start;
`SIDECAR_BIN=/bin/true pytest Tests/integration/test_docs.py` runs these alone.)
"""
import re
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {".build", ".git", ".swiftpm", "node_modules"}
SKIPPED_PREFIXES = (".build-", ".build_")  # second build folders (scripts/fuzz's .build-fuzz)

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_ATTRIBUTE = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files():
    """README.md, Docs/, Benchmarks/, Examples/ and any other Markdown file in the repository."""
    found = []
    for path in sorted(ROOT.rglob("*.md")):
        relative = path.relative_to(ROOT)
        if SKIPPED_DIRS.intersection(relative.parts[:-1]) or any(p.startswith(SKIPPED_PREFIXES) for p in relative.parts[:-1]):
            continue
        found.append(path)
    return found


def without_code(text, inline=True):
    """The text with fenced code blocks (and with `inline`, inline code) blanked out, line
    numbers kept."""
    lines, fence = [], None
    for line in text.split("\n"):
        opening = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            lines.append("")
            continue
        if opening:
            fence = opening.group(1)
            lines.append("")
            continue
        lines.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "``", line) if inline else line)
    return "\n".join(lines)


def links(text):
    """(line number, target) of every link and image in the Markdown `text`."""
    found = []
    for number, line in enumerate(without_code(text).split("\n"), 1):
        for pattern in (INLINE_LINK, HTML_ATTRIBUTE):
            found += [(number, match.group(1)) for match in pattern.finditer(line)]
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            found.append((number, definition.group(1)))
    return found


def slug(heading):
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation other than
    `-` and `_` removed, each space a `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor the headings of `path` define (repeats get -1, -2, ... as on GitHub)."""
    seen, result = {}, set()
    for line in without_code(path.read_text(encoding="utf-8"), inline=False).split("\n"):
        heading = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else "%s-%d" % (base, count))
    return result


def problems(path):
    """What is wrong with the links of one Markdown file, one line each."""
    found = []
    name = path.relative_to(ROOT)
    for number, target in links(path.read_text(encoding="utf-8")):
        where = "%s:%d: %s" % (name, number, target)
        if SCHEME.match(target) or target.startswith("//"):
            continue  # another site (https:, mailto:): not this repository's to check
        if target.startswith("/"):
            found.append(where + ": a path from the site root; link relative to this file")
            continue
        file_part, _, fragment = target.partition("#")
        file_part = unquote(file_part.split("?")[0])
        resolved = (path.parent / file_part).resolve() if file_part else path
        try:
            resolved.relative_to(ROOT)
        except ValueError:
            found.append(where + ": leaves the repository")
            continue
        if not resolved.exists():
            found.append(where + ": no such file in the repository")
            continue
        if fragment and resolved.suffix == ".md" and unquote(fragment) not in anchors(resolved):
            found.append(where + ": no heading with that anchor in %s" % resolved.relative_to(ROOT))
    return found


def test_the_documents_exist():
    names = {str(path.relative_to(ROOT)) for path in markdown_files()}
    for required in ("README.md", "Docs/configuration.md", "Docs/operations.md", "Docs/security.md",
                     "Benchmarks/RESULTS.md", "Examples/README.md"):
        assert required in names, sorted(names)


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(path):
    assert problems(path) == []


# What the release tarball carries besides Docs/ (scripts/package): a link from a user's page
# to anything else is dead once the tarball is unpacked.
SHIPPED = ("Docs/", "Examples/", "README.md", "CONTRIBUTING.md", "LICENSE", "sidecar.yaml",
           "Benchmarks/RESULTS.md")


def test_user_pages_link_only_to_what_the_tarball_carries():
    pages = sorted((ROOT / "Docs").glob("*.md")) + [ROOT / "README.md"]
    for path in pages:
        for target in re.findall(r"\]\(([^)#\s]+)", path.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            relative = str((path.parent / unquote(target)).resolve().relative_to(ROOT))
            assert relative.startswith(SHIPPED), "%s links %s, which the tarball does not carry" % (
                path.relative_to(ROOT), target)


def test_every_page_of_docs_links_back_to_the_readme():
    for path in sorted((ROOT / "Docs").glob("*.md")):
        head = path.read_text(encoding="utf-8").split("\n## ")[0]
        assert "](../README.md)" in head, "%s: its opening lines link back to the README" % path.name


def test_the_link_checker_itself(tmp_path, monkeypatch):
    """Each kind of broken link is found; code, other sites and good links are not."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "Docs").mkdir()
    (tmp_path / "Docs" / "a.md").write_text("# A page\n\n## Second: `x.y` (more)\n\n## Second: `x.y` (more)\n")
    page = tmp_path / "README.md"
    page.write_text("\n".join([
        "# Title",
        "[ok](Docs/a.md) [ok](Docs/a.md#a-page) [ok](Docs/a.md#second-xy-more-1) [ok](#title)",
        "![img](Docs/a.md) [web](https://example.com/x) [mail](mailto:a@example.com)",
        "`[code](nowhere.md)`",
        "```",
        "[code](nowhere.md)",
        "```",
        "[missing](Docs/b.md) [anchor](Docs/a.md#nope) [out](../shared/SPEC.md) [root](/README.md)",
        "[ref]: ../outside.md",
        '<img src="Docs/missing.png">',
    ]))
    found = problems(page)
    assert [line.split(": ", 1)[0] for line in found] == ["README.md:8"] * 4 + ["README.md:9", "README.md:10"], found
    assert any("leaves the repository" in line and "../shared/SPEC.md" in line for line in found), found
