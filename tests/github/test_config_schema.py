"""The JSON Schema of ``.github/interlock.yml`` ships, equals what the model generates, and says what the parser
says about the keys (issue 13, item 1)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from app.github.config import ConfigInvalid, parse_config
from app.github.config_schema import SCHEMA_FILE, config_json_schema
from tests.helpers import doc

SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
README = doc("github/configuration.md", "github/teams.md")


def schema_errors(data: Any) -> list[str]:
    return [error.message for error in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]


def readme_block(after: str) -> str:
    return README.split(after, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_shipped_schema_is_what_the_model_generates() -> None:
    assert config_json_schema() == SCHEMA, "run: python -m tests.regen_config_schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize(
    "after", ["**Repository configuration** `.github/interlock.yml`", "**Teams** (SPEC U1, U2).", "**JSON Schema.**"]
)
def test_the_readmes_examples_satisfy_the_schema_and_the_parser(after: str) -> None:
    text = readme_block(after)
    assert schema_errors(yaml.safe_load(text)) == []
    parse_config(text.encode())


@pytest.mark.parametrize(
    "text",
    [
        "trigger_lable: x",
        "teams: {core: {rolez: []}}",
        "teams: {core: {roles: {dev: {colour: red}}}}",
        "teams: {core: {roles: [{name: dev, colour: red}]}}",
        "teams: {core: {concurrency: 0}}",
        "teams: {'a b': {}}",
        "teams: {core: {satellites: [nobody]}}",
        "extends: 'a b'",
    ],
)
def test_a_key_the_parser_refuses_the_schema_refuses(text: str) -> None:
    assert schema_errors(yaml.safe_load(text)) != []
    with pytest.raises(ConfigInvalid):
        parse_config(text.encode())


def test_the_editor_line_of_the_readme_is_a_comment_naming_the_schema() -> None:
    first = readme_block("**JSON Schema.**").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=") and first.endswith("/app/github/interlock.schema.json")
