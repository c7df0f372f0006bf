"""The GitHub fixtures the repository carries (tests/fixtures/github/), and the script that remakes them.

The stand-in checks every request against the OpenAPI part; these tests check that the part covers every
route the stand-in serves, that it is a complete document, that each set says where it came from under
which licence, and that ``python -m tests.fixtures.refresh`` remakes the sets from either kind of source.
"""

from __future__ import annotations

import copy
import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.openapi_part import PartError, referenced_components, served_operations, stand_in_routes
from tests.fixtures.refresh import EVENTS, GITHUB
from tests.github.openapi import problems
from tests.helpers import ROOT

PART = json.loads((GITHUB / "openapi" / "api.github.com.json").read_text())
MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"


def operations_of(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m, t) for t, item in document["paths"].items() for m in item if m in ("get", "post", "patch", "delete")]


def refresh(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tests.fixtures.refresh", *map(str, args)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_openapi_part_has_one_operation_for_each_route_of_the_stand_in_and_no_other() -> None:
    served = served_operations(PART["paths"], stand_in_routes())
    assert len(served) == len(stand_in_routes()) and sorted(served) == sorted(operations_of(PART))


def test_a_route_missing_from_the_openapi_part_fails_loudly() -> None:
    shorter = copy.deepcopy(PART)
    del shorter["paths"]["/repos/{owner}/{repo}/git/trees"]
    with pytest.raises(PartError, match=re.escape(r"route POST /repos/([^/]+/[^/]+)/git/trees serves none")):
        served_operations(shorter["paths"], stand_in_routes())
    request = httpx.Request("POST", "http://github.test/repos/octo/app/git/tags", json={"tag": "x"})
    assert problems(request) == [
        "POST /repos/octo/app/git/tags is not in GitHub's REST description, or not in the part of it in"
        " tests/fixtures/github/openapi (python -m tests.fixtures.refresh adds what the stand-in serves)"
    ]


def test_the_openapi_part_is_complete_and_carries_only_what_its_operations_refer_to() -> None:
    assert referenced_components(PART, PART["paths"]) == PART["components"]
    assert PART["openapi"].startswith("3.") and len(json.dumps(PART)) < 500_000


def test_each_fixture_set_carries_its_licence_and_says_where_it_came_from() -> None:
    for name in ("webhooks", "openapi"):
        folder = GITHUB / name
        source = json.loads((folder / "SOURCE.json").read_text())
        data = [p for p in folder.rglob("*") if p.is_file() and p.name not in ("LICENSE", "SOURCE.json")]
        assert "Permission is hereby granted" in (folder / "LICENSE").read_text() and source["license"] == "MIT"
        assert source["files"] == len(data) and re.fullmatch(r"\d{4}-\d\d-\d\d", source["refreshed"])
        assert source["upstream"].startswith("github.com/")
        assert source.get("version") or re.fullmatch(r"[0-9a-f]{40}", source.get("commit", ""))
    openapi = json.loads((GITHUB / "openapi" / "SOURCE.json").read_text())
    assert openapi["version"] == PART["info"]["version"]
    assert openapi["operations"] == [f"{m.upper()} {t}" for m, t in operations_of(PART)]
    assert sorted(p.name for p in (GITHUB / "webhooks" / "examples").iterdir()) == sorted(EVENTS)


def widened(part: dict[str, Any]) -> dict[str, Any]:
    """The part with an operation the stand-in does not serve and a component only that one refers to."""
    document = copy.deepcopy(part)
    schema = {"$ref": "#/components/schemas/short-branch"}
    document["paths"]["/repos/{owner}/{repo}/branches"] = {
        "get": {"responses": {"200": {"content": {"application/json": {"schema": schema}}}}}
    }
    document["components"]["schemas"]["short-branch"] = {"type": "object"}
    return document


def corpus(folder: Path) -> Path:
    """A small folder laid out like the shared corpus: two examples an event, and the widened part."""
    examples = folder / "octokit-webhooks" / "payload-examples" / "api.github.com"
    for event in EVENTS:
        (examples / event).mkdir(parents=True)
        (examples / event / "payload.json").write_bytes(b'{"zen": "Keep it logically awesome."}\n')
        (examples / event / "opened.with-installation.payload.json").write_text(json.dumps({"installation": {}}))
    (folder / "octokit-webhooks" / "LICENSE").write_text("The " + MIT)
    (folder / "README.txt").write_text("octokit-webhooks/  from github.com/octokit/webhooks at commit\n 1234abcd (MIT)")
    rest = folder / "rest-api-description"
    rest.mkdir()
    (rest / "api.github.com.json").write_text(json.dumps(widened(PART)))
    (rest / "package.octokit-openapi.json").write_text(json.dumps({"name": "@octokit/openapi", "version": "23.0.2"}))
    (rest / "LICENSE.octokit-openapi").write_text(MIT)
    return folder


def test_refresh_from_a_folder_laid_out_like_the_shared_corpus(tmp_path: Path) -> None:
    result = refresh(corpus(tmp_path / "corpus"), "--into", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    webhooks, openapi = tmp_path / "out" / "webhooks", tmp_path / "out" / "openapi"
    assert (webhooks / "examples" / "ping" / "payload.json").read_bytes() == b'{"zen": "Keep it logically awesome."}\n'
    assert len(list((webhooks / "examples").rglob("*.json"))) == 2 * len(EVENTS)
    assert json.loads((webhooks / "SOURCE.json").read_text())["commit"] == "1234abcd"
    assert (webhooks / "LICENSE").read_text() == "The " + MIT
    assert json.loads((openapi / "api.github.com.json").read_text()) == PART  # the extra path and schema cut away
    assert json.loads((openapi / "SOURCE.json").read_text())["version"] == "23.0.2"
    assert f"{tmp_path / 'out' / 'webhooks'}: {2 * len(EVENTS)} file(s) from 1234abcd" in result.stdout


def npm_tarball(path: Path, files: dict[str, Any]) -> Path:
    """An npm package tarball as ``npm pack`` makes it: every member under ``package/``."""
    with tarfile.open(path, "w:gz") as archive:
        for name, content in files.items():
            data = content if isinstance(content, bytes) else json.dumps(content).encode()
            member = tarfile.TarInfo(f"package/{name}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return path


def test_refresh_from_the_npm_packages(tmp_path: Path) -> None:
    index = [{"name": event, "examples": [{"action": "created"}]} for event in EVENTS if event != "issues"]
    issues = [{"action": "labeled"}, {"action": "labeled", "installation": {"id": 1}}, {"action": "labeled"}]
    index.append({"name": "issues", "examples": issues})
    index.append({"name": "star", "examples": [{"action": "created"}]})  # an event the fixtures do not carry
    webhooks = {"package.json": {"name": "@octokit/webhooks-examples", "version": "9.1.0", "license": "MIT"}}
    webhooks["api.github.com/index.json"] = index
    openapi = {"package.json": {"name": "@octokit/openapi", "version": "99.0.0"}, "LICENSE": MIT.encode()}
    openapi["generated/api.github.com.json"] = widened(PART)
    result = refresh(
        npm_tarball(tmp_path / "webhooks.tgz", webhooks), npm_tarball(tmp_path / "openapi.tgz", openapi),
        "--into", tmp_path / "out",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    names = sorted(p.name for p in (out / "webhooks" / "examples" / "issues").iterdir())
    assert names == ["labeled.1.payload.json", "labeled.payload.json", "labeled.with-installation.payload.json"]
    assert json.loads((out / "webhooks" / "examples" / "issues" / "labeled.with-installation.payload.json").read_text())
    assert not (out / "webhooks" / "examples" / "star").exists()
    source = json.loads((out / "webhooks" / "SOURCE.json").read_text())
    assert (source["package"], source["version"], source["files"]) == ("@octokit/webhooks-examples", "9.1.0", 19)
    assert (out / "webhooks" / "LICENSE").read_bytes() == (GITHUB / "webhooks" / "LICENSE").read_bytes()  # kept
    assert json.loads((out / "openapi" / "api.github.com.json").read_text()) == PART
    assert json.loads((out / "openapi" / "SOURCE.json").read_text())["version"] == "99.0.0"


def test_refresh_refuses_sources_that_cannot_give_the_fixtures_and_writes_nothing(tmp_path: Path) -> None:
    folder = corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    package = {"package.json": {"name": "@octokit/openapi"}, "LICENSE": MIT.encode()}
    result = refresh(npm_tarball(tmp_path / "o.tgz", package), "--into", out)
    assert result.returncode == 2
    assert result.stderr == f"refresh: {tmp_path}/o.tgz: package/generated/api.github.com.json: missing\n"
    package["generated/api.github.com.json"] = PART
    result = refresh(npm_tarball(tmp_path / "o.tgz", package), "--into", out)
    assert result.returncode == 2
    assert result.stderr == "refresh: no source gave the webhooks fixtures (@octokit/webhooks-examples)\n"
    shorter = widened(PART)
    del shorter["paths"]["/repos/{owner}/{repo}/pulls"]
    (folder / "rest-api-description" / "api.github.com.json").write_text(json.dumps(shorter))
    result = refresh(folder, "--into", out)
    assert result.returncode == 2 and "route POST /repos/([^/]+/[^/]+)/pulls serves none" in result.stderr
    (folder / "README.txt").write_text("no commit named here")
    result = refresh(folder, "--into", out)
    assert result.returncode == 2 and "must name the commit of octokit-webhooks/" in result.stderr
    assert not out.exists() and "Traceback" not in result.stderr
