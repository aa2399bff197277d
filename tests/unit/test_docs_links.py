"""Every relative link in README.md and docs/ names a file of the repository.

A clone has nothing else: a link to a record that was never committed (a benchmark's JSON)
reads as evidence that is not there.
"""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# [text](target) or [text](target#anchor); external addresses are not checked
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_every_relative_link_names_a_file_of_the_repository():
    broken = [f"{page.relative_to(REPO)} -> {target}"
              for page in _pages() for target in LINK.findall(page.read_text())
              if not re.match(r"[a-z]+:", target) and not (page.parent / target).exists()]
    assert not broken, broken


def test_the_link_pattern_finds_links_and_leaves_addresses_alone():
    text = "[a](bench/x.json) [b](../README.md#top) [c](https://example.org/y)"
    assert LINK.findall(text) == ["bench/x.json", "../README.md", "https://example.org/y"]
