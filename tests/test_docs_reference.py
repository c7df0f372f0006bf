"""The generated reference pages of the docs site (``docs/reference/``) are what their sources say today.

Each page is regenerated in memory and compared with the committed file, so that a changed help text, schema key,
validator code or a new rule mention in a test fails here until the pages are regenerated with
``python -m tests.regen_reference``.
"""

from __future__ import annotations

import re

import pytest

from app.engine.graph.validation_findings import CODES, WARNING_CODES, Issue, IssueCode, IssueSeverity
from tests.regen_reference import COMMAND, REFERENCE, SPEC_MARKER, named_rules, pages, spec_rules

PAGES = ("cli.md", "configuration.md", "spec.md", "validation-codes.md")


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return pages()


def test_the_generator_writes_exactly_the_reference_pages(generated: dict[str, str]) -> None:
    assert sorted(generated) == sorted(PAGES)


@pytest.mark.parametrize("name", PAGES)
def test_each_committed_page_is_what_the_generator_writes(name: str, generated: dict[str, str]) -> None:
    committed = (REFERENCE / name).read_text(encoding="utf-8")
    assert committed == generated[name], f"docs/reference/{name} is stale: regenerate it with `{COMMAND}`"


@pytest.mark.parametrize("name", PAGES)
def test_each_page_has_a_title_says_how_it_is_made_and_links_nowhere_outside_the_site(
    name: str, generated: dict[str, str]
) -> None:
    title, blank, sentence = generated[name].split("\n")[:3]
    assert title.startswith("# ") and blank == "" and "generated" in sentence and f"`{COMMAND}`" in sentence
    targets = re.findall(r"\]\(([^)]*)\)", generated[name])
    assert [target for target in targets if not target.startswith(("https://", "#"))] == []


def test_the_validators_table_has_every_code_and_decides_what_is_an_error() -> None:
    assert list(CODES) == list(IssueCode)
    assert all(Issue(code, "m").is_error is (info.severity is IssueSeverity.ERROR) for code, info in CODES.items())
    assert {code for code in IssueCode if not Issue(code, "m").is_error} == WARNING_CODES
    # a severity flipped in the table changes `validate`'s exit code: the warnings are pinned here, by hand
    warnings = ("cannot-finish", "capability-uncarried", "pointless-decide", "trap-node", "unreachable-node")
    assert sorted(code.value for code in WARNING_CODES) == [*warnings, "useless-limit"]
    assert all(info.meaning and info.rules for info in CODES.values())


def test_rule_mentions_are_read_as_the_tests_write_them() -> None:
    assert named_rules("    # SPEC V5: the last verdict line wins") == {"V5"}
    assert named_rules("# SPEC GH8, J2: one writer wins") == {"GH8", "J2"}
    assert named_rules('"""The validator (SPEC G1–G3, V8)."""') == {"G1", "G2", "G3", "V8"}
    assert named_rules("(SPEC GH1-GH3, E1, H1: one run)") == {"GH1", "GH2", "GH3", "E1", "H1"}
    assert named_rules("SPEC J5 and COMMON; SPEC S: a known status; SPEC C).") == {"J5", "S", "C"}
    assert named_rules('agent: SPEC", SPEC.read_text(), AGENT_SPEC G1') == set()


def test_the_spec_page_keeps_the_specs_text_above_its_generated_index(generated: dict[str, str]) -> None:
    head, index = generated["spec.md"].split(SPEC_MARKER)
    rules = dict(spec_rules(head))
    assert {"G1", "V5", "GH8", "S"} <= set(rules) and rules["G1"] == "Format"
    row = next(line for line in index.splitlines() if line.startswith("| G3 | Errors | "))
    assert "## Tests by rule" in index and "`tests/engine/test_validate.py`" in row
