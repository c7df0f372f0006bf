"""A stand-in OpenAI-compatible chat server on loopback: a real HTTP server in a thread, which behaves as the
small local models of issue 17 do and counts every request it receives.

It keeps a model's context (``n_ctx`` tokens, a token being four characters of the prompt), answers as the
server named by ``style`` does when a prompt does not fit (llama-cpp-python, vLLM, OpenAI, llama.cpp's
``llama-server``, each with its real error shape), writes until its context is full when a request sends no
``max_tokens`` (as llama-cpp-python does), can answer 503 first, or take ``delay_s`` to generate (a client
with a shorter timeout gives up while the server goes on).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STAGE = re.compile(r"stage `([^`]+)`")


def tokens(text: str) -> int:
    """The stand-in's tokenizer: four characters a token, rounded up."""
    return -(-len(text) // 4)


def _default_answer(stage: str, prompt: str) -> str:
    return f"The {stage} is fine.\nVERDICT: PASS"


@dataclass
class StandIn:
    n_ctx: int = 2048
    style: str = "llama-cpp-python"  # llama-cpp-python | vllm | openai | llama-server
    fail_first: int = 0  # answer this many requests 503 before any other
    delay_s: float = 0.0  # the time a generation takes
    fill: bool = False  # write max_tokens (or up to the context's end) tokens, then the verdict
    answer: Callable[[str, str], str] = _default_answer  # (stage, prompt) -> the answer's text
    requests: list[dict[str, Any]] = field(default_factory=list)  # the bodies received, in order
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
            count = len(self.requests)
        if count <= self.fail_first:
            return 503, {"error": {"message": "Service Unavailable", "type": "server_error", "code": 503}}
        prompt = "".join(str(message.get("content", "")) for message in body.get("messages", []))
        asked = body.get("max_tokens")
        refusal = self.refusal(tokens(prompt), asked)
        if refusal is not None:
            return 400, refusal
        time.sleep(self.delay_s)
        room = self.n_ctx - tokens(prompt)
        completion = min(asked, room) if isinstance(asked, int) else room
        named = STAGE.search(prompt)
        text = self.answer(named.group(1) if named else "call", prompt)
        if self.fill:
            text = "word" * max(completion - tokens(text) - 1, 0) + "\n" + text
        return 200, self.completion(body, text, tokens(prompt), tokens(text))

    def refusal(self, prompt_tokens: int, asked: Any) -> dict[str, Any] | None:
        """The server's 400 body when the prompt does not fit its context, in the server's own words."""
        completion = asked if isinstance(asked, int) else 0
        total = prompt_tokens + completion
        if self.style == "vllm" and total > self.n_ctx:
            return {
                "object": "error",
                "message": f"This model's maximum context length is {self.n_ctx} tokens. However, you requested "
                f"{total} tokens ({prompt_tokens} in the messages, {completion} in the completion). Please reduce "
                "the length of the messages or completion.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        if prompt_tokens < self.n_ctx:  # the others cut max_tokens to what the context has left
            return None
        if self.style == "openai":
            message = (
                f"This model's maximum context length is {self.n_ctx} tokens. However, your messages resulted in "
                f"{prompt_tokens} tokens. Please reduce the length of the messages."
            )
            return {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                              "code": "context_length_exceeded"}}  # fmt: skip
        if self.style == "llama-server":
            return {"error": {"code": 400, "message": "the request exceeds the available context size, try "
                              "increasing it", "type": "exceed_context_size_error",
                              "n_prompt_tokens": prompt_tokens, "n_ctx": self.n_ctx}}  # fmt: skip
        message = (  # llama-cpp-python's server, llama_cpp/server/errors.py
            f"This model's maximum context length is {self.n_ctx} tokens. However, you requested {total} tokens "
            f"({prompt_tokens} in the messages, {completion or None} in the completion). Please reduce the length "
            "of the messages or completion."
        )
        return {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                          "code": "context_length_exceeded"}}  # fmt: skip

    @staticmethod
    def completion(body: dict[str, Any], text: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "model": body.get("model", "model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def send_json(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    """A JSON answer; a client that gave up waiting (a read timeout) reads none, and that is no error here."""
    try:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except OSError:
        pass


def _handler(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            status, answer = stand_in.reply(body)
            send_json(self, status, json.dumps(answer).encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(stand_in: StandIn) -> Iterator[str]:
    """The stand-in served on a free loopback port; yields its base URL (``http://127.0.0.1:PORT/v1``)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stand_in))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
