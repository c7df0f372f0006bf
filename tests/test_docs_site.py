"""The documentation site (issue 29): the README stays short, every page of ``docs/`` is in ``mkdocs.yml``'s nav,
and ``mkdocs build --strict`` passes (no broken link or anchor, no page left out of the nav)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import DOCS, ROOT, doc
from tests.test_development_guide import PLACED, names_defined

README_LINES = 250
REPOSITORY_PATH = re.compile(r"`((?:app|tests|action|graphs|docs|\.github)/[\w/.*-]*)`")
USERS_OWN = {".github/interlock.yml"}  # a file of the user's repository that the pages tell how to write


def nav_pages(entries: list[Any]) -> list[str]:
    """Every page the nav names, in order (``- Title: page.md`` or nested sections)."""
    pages: list[str] = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def config() -> dict[str, Any]:
    # mkdocs.yml may carry `!!python/name:` tags for extensions: read it without building anything
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    loaded: dict[str, Any] = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    return loaded


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines, at most {README_LINES}"


def test_every_page_of_the_docs_is_in_the_nav() -> None:
    site = config()
    assert site["site_name"] == "Interlock" and site["theme"]["name"] == "material" and site["strict"] is True
    named = nav_pages(site["nav"])
    assert len(named) == len(set(named)), "a page is in the nav twice"
    pages = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))
    assert sorted(set(pages) - set(named)) == [], "pages under docs/ that the nav leaves out"


def test_the_strict_build_passes(tmp_path: Path) -> None:
    # strict turns every warning (a broken link or anchor, a file outside the nav, a nav entry with no file) into
    # a failure; mkdocs.yml's `validation:` makes the unknown anchors and omitted files warnings
    site = config()
    assert {"omitted_files", "anchors", "unrecognized_links", "not_found"} <= set(site["validation"])
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def test_every_file_and_name_the_pages_point_at_is_there() -> None:
    # issue 29: the modules moved into packages; a page naming `x` of `app/old.py` would send a reader nowhere
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    texts = {page.relative_to(ROOT).as_posix(): page.read_text(encoding="utf-8") for page in pages}
    paths = [(page, path) for page, text in texts.items() for path in REPOSITORY_PATH.findall(text)]
    assert len(paths) > 100
    assert [(page, path) for page, path in paths if path not in USERS_OWN and not list(ROOT.glob(path))] == []
    placed = [(page, name, path) for page, text in texts.items() for name, path in PLACED.findall(text)]
    assert len(placed) >= 15
    assert [
        item for item in placed if not (ROOT / item[2]).is_file() or item[1] not in names_defined(ROOT / item[2])
    ] == []


def heading_slugs(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of ``page`` (lower case, punctuation dropped, each space a dash), where
    a reader follows the README's links; headings only, none inside a code block."""
    slugs, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if not fenced and re.match(r"#{1,6} ", line):
            slugs.add(re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-"))
    return slugs


def test_the_readmes_links_reach_a_page_and_its_heading() -> None:
    # mkdocs checks the site's own links; nothing read the README's until a test did (issue 29 review)
    readme = ROOT / "README.md"
    targets = re.findall(r"\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)", readme.read_text(encoding="utf-8"))
    assert len(targets) >= 20
    links = [target.partition("#")[::2] for target in targets if not target.startswith(("http:", "https:"))]
    assert [path for path, _ in links if path and not (ROOT / path).exists()] == []
    anchored = [(path or "README.md", anchor) for path, anchor in links if anchor]
    assert [item for item in anchored if item[1] not in heading_slugs(ROOT / item[0])] == []


def test_the_quick_start_of_the_readme_and_of_getting_started_is_one_text() -> None:
    # the first page of the site repeats the README's Quick start: a copy that drifted once (app/engine vs app/)
    def quick_start(text: str) -> list[str]:
        return text.split("\n## Quick start\n", 1)[1].split("\n\n")[:2]  # the block, and the words on it

    assert quick_start(doc("index.md")) == quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
