"""The repository is self-contained: what its code, tests and docs cite is in the clone.

Two checks. (1) No file under mpi_privopt/, tests/, docs/, README.md or launch/ cites a
document a clone does not contain: the private implementation notes (by number, section,
possessive or path; the examples are in the tests below), the old shared architecture
file, or a tracker issue by number. Derivations and choices are written out on
docs/methods/*.md and cited from there. (2) Every docs page path cited in mpi_privopt/ and
docs/ exists, and every section a citation names (the page's path, a comma and the
heading in double quotes; or a markdown link with an anchor between docs pages) is a
heading of that page.

The patterns are assembled from pieces so that this file does not match them itself.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("mpi_privopt", "tests", "docs", "README.md", "launch")
#: generated run outputs, not prose (their "notes" keys are the ledger's)
SKIPPED_DIRS = ("tests/golden/data",)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".ini", ".yaml", ".yml", ""}

NOTE = "no" + "tes"
ISSUE = "is" + "sue"
FORBIDDEN = {
    "a numbered note": re.compile(rf"\b{NOTE}? (?:[0-9]|[A-Z][0-9]|[Ss]ec(?:tion|\.))"),
    "a possessive": re.compile(rf"\b{NOTE}'"),
    "a cited note in brackets": re.compile(rf"(?<![\w.])\({NOTE}[),;]"),
    "a shared file": re.compile(r"shared/(?:" + NOTE + "|pap" + "ers)/"),
    "the shared architecture file": re.compile("ARCHI" + r"TECTURE\.md"),
    "a bare list item": re.compile(r"[(;,] ?[AE][0-9]{1,2}[);]"),
    "a tracker issue": re.compile(rf"\b[{ISSUE[0].upper()}{ISSUE[0]}]{ISSUE[1:]}s? #?[0-9]+"),
}


def scanned_files() -> list[Path]:
    """The tracked (and new, not ignored) text files under the scanned paths."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          "--", *SCANNED], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    files = []
    for name in sorted(set(out)):
        path = ROOT / name
        if (path.is_file() and path.suffix in TEXT_SUFFIXES
                and not name.startswith(SKIPPED_DIRS)):
            files.append(path)
    return files


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def test_the_scan_sees_the_package_docs_and_tests():
    names = {p.relative_to(ROOT).as_posix() for p in scanned_files()}
    assert {"README.md", "mpi_privopt/cli.py", "docs/methods/chen2025.md",
            "tests/unit/test_self_contained.py"} <= names


@pytest.mark.parametrize("label, text", [
    ("a numbered note", "as in " + NOTE + " 3.7 and"),
    ("a numbered note", "(" + NOTE + " A3)"),
    ("a numbered note", NOTE + " sec. 7 item 12"),
    ("a possessive", "the " + NOTE + "' grid"),
    ("a cited note in brackets", "Expected (" + NOTE + "), not"),
    ("a shared file", "`shared/" + NOTE + "/x.md`"),
    ("the shared architecture file", "../shared/ARCHI" + "TECTURE.md"),
    ("a bare list item", "convex (" + "A4): strongly"),
    ("a bare list item", "outside (23); " + "A6)"),
    ("a tracker issue", "(" + ISSUE + " 14 part 2)"),
    ("a tracker issue", ISSUE.capitalize() + " 12's speed goal"),
])
def test_each_pattern_catches_its_kind_of_citation(label, text):
    assert FORBIDDEN[label].search(text)


@pytest.mark.parametrize("text", [
    'privacy["' + NOTE + '"]', "the " + NOTE + " that appeared", "its thread " + NOTE + " when",
    "MPICH's open " + ISSUE + " of a hang",
])
def test_ordinary_words_are_not_flagged(text):
    assert not any(pattern.search(text) for pattern in FORBIDDEN.values())


def test_nothing_cites_notes_or_issues_outside_the_clone():
    found = []
    for path in scanned_files():
        for number, line in enumerate(read(path).splitlines(), 1):
            for label, pattern in FORBIDDEN.items():
                if pattern.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {label}: {line.strip()}")
    assert not found, "cite the paper or a docs/ page instead:\n" + "\n".join(found)


# -- cited docs pages and sections exist ------------------------------------------------------

DOC_PATH = re.compile(r"\bdocs/[\w./-]+?\.md\b")
SECTION = re.compile(r"\b(docs/methods/[\w-]+\.md),\s+\"([^\"]+)\"")
LINK = re.compile(r"\]\(((?:\.\./)?(?:methods/)?[\w-]+\.md)#([\w-]+)\)")


def headings(page: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in read(page).splitlines()
            if line.startswith("#")]


def anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def code_and_docs() -> list[Path]:
    return [p for p in scanned_files()
            if p.relative_to(ROOT).parts[0] in ("mpi_privopt", "docs")]


def test_every_cited_docs_page_exists():
    missing = []
    for path in code_and_docs():
        for number, line in enumerate(read(path).splitlines(), 1):
            for cited in DOC_PATH.findall(line):
                if not (ROOT / cited).is_file():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {cited}")
    assert not missing, "cited docs pages that do not exist:\n" + "\n".join(missing)


def test_every_cited_section_of_a_method_page_exists():
    missing = []
    for path in scanned_files():
        text = read(path).replace("\n", " ")
        text = re.sub(r"\s*(?:#|#:)\s+", " ", text)      # citations wrapped over comment lines
        text = re.sub(r"\s+", " ", text)
        for page, section in SECTION.findall(text):
            if not (ROOT / page).is_file() or section not in headings(ROOT / page):
                missing.append(f"{path.relative_to(ROOT)}: {page}, \"{section}\"")
    assert not missing, "cited sections that are not headings:\n" + "\n".join(missing)


def test_every_anchor_of_a_link_between_docs_pages_exists():
    missing = []
    for path in (ROOT / "docs").rglob("*.md"):
        for number, line in enumerate(read(path).splitlines(), 1):
            for target, tag in LINK.findall(line):
                page = (path.parent / target).resolve()
                if page.is_file() and tag not in {anchor(h) for h in headings(page)}:
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {target}#{tag}")
    assert not missing, "links to headings that do not exist:\n" + "\n".join(missing)
