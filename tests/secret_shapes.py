"""Every shape of secret the redactor knows (app/redact.py), as hypothesis strategies: the unit property
of the redactor and the end-to-end one of a local run plant the same secrets."""

from __future__ import annotations

from hypothesis import strategies as st

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
BASE64 = ALNUM + "+/"


def _body(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high)


def _key_block(kind: str, block: bool) -> st.SearchStrategy[str]:
    """A PEM private key (RSA, EC, OPENSSH, plain) or a PGP private key block, of several base64 lines."""
    label = f"{kind}PRIVATE KEY{' BLOCK' if block else ''}"
    lines = st.lists(_body(BASE64, 16, 64), min_size=1, max_size=4).map("\n".join)
    return lines.map(lambda body: f"-----BEGIN {label}-----\n{body}\n-----END {label}-----")


GITHUB_TOKEN = st.tuples(st.sampled_from("opusr"), _body(ALNUM, 20, 40)).map(lambda p: f"gh{p[0]}_{p[1]}")
GITHUB_PAT = _body(ALNUM + "_", 20, 60).map(lambda body: f"github_pat_{body}")
OPENAI_ANTHROPIC_KEY = st.tuples(st.sampled_from(["", "ant-", "proj-"]), _body(ALNUM + "_-", 20, 48)).map(
    lambda p: f"sk-{p[0]}{p[1]}"
)
SLACK_TOKEN = st.tuples(st.sampled_from("abprs"), _body(ALNUM + "-", 10, 40)).map(lambda p: f"xox{p[0]}-{p[1]}")
AWS_KEY_ID = _body(UPPER_DIGITS, 16, 16).map(lambda body: f"AKIA{body}")
PEM_KEY = st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "DSA ", "ENCRYPTED "]).flatmap(lambda k: _key_block(k, False))
PGP_KEY = _key_block("PGP ", True)

# name -> strategy: one of each shape, so that a test names the shape that leaked
SHAPES: dict[str, st.SearchStrategy[str]] = {
    "github_token": GITHUB_TOKEN,
    "github_pat": GITHUB_PAT,
    "api_key": OPENAI_ANTHROPIC_KEY,
    "slack_token": SLACK_TOKEN,
    "aws_key_id": AWS_KEY_ID,
    "pem_private_key": PEM_KEY,
    "pgp_private_key": PGP_KEY,
}
ONE_OF_EACH = st.fixed_dictionaries(SHAPES)


def core(secret: str) -> str:
    """The part of a secret that must never be seen: its random body (a key's base64 lines), not its header."""
    if secret.startswith("-----BEGIN"):
        return secret.split("-----\n", 1)[1].rsplit("\n-----END", 1)[0]
    return secret
