"""The redactor itself, by property: every shape of secret it knows is masked wherever it sits in a text, in
JSON-like data and in an agent's outcome; a key block cut before its end is masked too; text that has no
secret's shape passes unchanged."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from app.agents.base import AgentOutcome
from app.engine import events as ev
from app.engine.record import MissionStatus
from app.redact import MASK, PERSON_TEXT, SECRET_NAME, Redactor
from app.runner.records import masked_outcome
from tests.helpers import doc
from tests.secret_shapes import ONE_OF_EACH, PGP_KEY, SHAPES, core

AROUND = st.text(max_size=30)
# lower case, digits, blanks and punctuation without - or _: no secret's shape can form from these
PROSE = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789 .,:;!?'\"()\n\t"), max_size=200)


@seed(11)
@settings(max_examples=300, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), data=st.data(), before=AROUND, after=AROUND)
def test_every_known_shape_is_masked_wherever_it_sits(shape: str, data: st.DataObject, before: str, after: str) -> None:
    secret = data.draw(SHAPES[shape], label=shape)
    redacted = Redactor({}).text(f"{before}{secret}{after}")  # the shapes alone: no environment needed
    body = core(secret)  # it may be seen only where the text beside it already had it
    assert MASK in redacted and redacted.count(body) <= before.count(body) + after.count(body), (shape, redacted)


@seed(11)
@settings(max_examples=100, deadline=None)
@given(secrets=ONE_OF_EACH, prose=PROSE)
def test_all_shapes_at_once_in_data_and_in_an_outcome(secrets: dict[str, str], prose: str) -> None:
    text = prose.join(secrets.values())
    redactor = Redactor({})
    nested = redactor.data({"answer": text, "list": [text, 3, None], "deep": {"x": [text]}})
    outcome = masked_outcome(AgentOutcome(MissionStatus.DONE, text, agent=text, model=text), redactor)
    for secret in secrets.values():
        for written in (str(nested), outcome.answer, outcome.agent, str(outcome.model)):
            assert core(secret) not in written


@seed(11)
@settings(max_examples=100, deadline=None)
@given(key=PGP_KEY, cut=st.integers(min_value=1, max_value=40))
def test_a_key_block_cut_before_its_end_is_masked_to_the_end(key: str, cut: int) -> None:
    # an answer or a check's output cut short must not show the key's first lines
    body_start = key.index("-----\n") + 6
    cut_key = key[: max(body_start + 1, len(key) - cut)]
    redacted = Redactor({}).text(f"before\n{cut_key}")
    assert redacted == f"before\n{MASK}"


@seed(11)
@settings(max_examples=200, deadline=None)
@given(prose=PROSE)
def test_text_without_a_secret_passes_unchanged(prose: str) -> None:
    assert Redactor({}).text(prose) == prose


def test_the_readme_says_exactly_what_is_masked() -> None:
    # every variable name and token prefix the README lists is masked, and every one the redactor knows is listed
    text = " ".join(doc("github/action.md").split())
    said = text[text.index("Secrets are masked as") : text.index("carry none")]
    names = re.findall(r"`([A-Z_]+)`", said.split("; and")[0])
    assert sorted(names) == sorted(
        SECRET_NAME.pattern.strip("()$").replace("CREDENTIALS?", "CREDENTIAL|CREDENTIALS").split("|")
    )
    prefixes = re.findall(r"`((?:gh[a-z]|github_pat|sk|sk-ant|sk-proj|xox[a-z])[_-]|AKIA)`", said)
    assert len(prefixes) == 15
    for prefix in prefixes:
        token = prefix + ("A" * 16 if prefix == "AKIA" else "Ab3" * 10)
        assert Redactor({}).text(f"x {token} y") == f"x {MASK} y", prefix
    for shape in ("GitHub tokens", "API keys", "Slack tokens", "AWS access key ids", "PGP", "cut before their end"):
        assert shape in said
    assert Redactor({"A_CREDENTIAL": "value-of-it"}).text("value-of-it") == MASK


AT = datetime(2026, 12, 1, tzinfo=UTC)
# every event that carries what a person typed, built with that text in each of its person-text fields
PEOPLES_EVENTS = {
    "request": lambda text: ev.Start(key="k", at=AT, run_id="r", title=text, body=text),
    "approval note": lambda text: ev.GateApproved(key="k", at=AT, note=text),
    "amendment": lambda text: ev.GateAmended(key="k", at=AT, note=text),
    "answer": lambda text: ev.InputAnswered(key="k", at=AT, text=text),
    "route": lambda text: ev.RouteChosen(key="k", at=AT, verdict=text),
}


@seed(11)
@settings(max_examples=100, deadline=None)
@given(secrets=ONE_OF_EACH, prose=PROSE, kind=st.sampled_from(sorted(PEOPLES_EVENTS)))
def test_every_kind_of_text_a_person_types_is_masked_in_its_event(
    secrets: dict[str, str], prose: str, kind: str
) -> None:
    # SPEC GH9 (issue 11): the one redactor masks a person's text in the event the shells apply
    event = Redactor({}).event(PEOPLES_EVENTS[kind](prose.join(secrets.values())))
    typed = [getattr(event, name) for name in PERSON_TEXT if isinstance(getattr(event, name, None), str)]
    assert typed and all(MASK in text for text in typed)
    for name, secret in secrets.items():
        assert not [text for text in typed if core(secret) in text], (kind, name)
    assert event.key == "k" and event.at == AT  # the rest of the event is left as it was


def test_an_event_without_a_secret_is_the_very_same_event() -> None:
    event = ev.InputAnswered(key="k", at=AT, text="use the second one")
    assert Redactor({}).event(event) is event and Redactor({}).event(ev.Deliver(key="k", at=AT)) == ev.Deliver(
        key="k", at=AT
    )


def test_the_readme_says_peoples_text_is_masked_where_it_enters() -> None:
    # each kind of person's text the README names is one the end-to-end tests plant secrets in
    # (tests/local/test_person_redaction.py, tests/github/test_person_redaction.py)
    text = " ".join(doc("github/action.md").split())
    said = text[text.index("So is what people type") : text.index("takes them in.")]
    for entry in (
        "the issue's title and body",
        "`--request`",
        "`--request-file`",
        "`interlock answer`",
        "`/interlock answer`",
        "the ask prompts",
        "`interlock amend`",
        "`interlock approve --note`",
        "a review's body and its inline comments",
        "`interlock route`",
        "`/interlock route`",
    ):
        assert entry in said, entry


def test_the_prompt_an_http_agent_sent_in_the_end_is_masked_in_the_outcome() -> None:
    # issue 17: an outcome's sent_prompt goes into a job's hand-off, which holds no secret of the job's environment
    key = "Zq" * 20
    outcome = AgentOutcome(MissionStatus.DONE, "ok", sent_prompt=f"the request quoted {key}")
    masked = masked_outcome(outcome, Redactor({"OPENAI_API_KEY": key}))
    assert masked.sent_prompt == f"the request quoted {MASK}"
    assert masked_outcome(AgentOutcome(MissionStatus.DONE, "ok"), Redactor({})).sent_prompt is None
