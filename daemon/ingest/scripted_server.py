"""The project's own scripted OpenAI-compatible chat-completions server: tests, benchmarks and
``wikiwright eval`` (shipped in the package, so an installed copy can run the benchmark).

A stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) answering
``POST /v1/chat/completions``. wikiwright reaches it through litellm's real HTTP path
(``model="openai/scripted"``, ``api_base=server.url``), so no mock of our own code is involved.

The script is a list of replies (consumed in order) or a callable ``(request_json) -> reply``.
A reply is:

- a ``dict``: sent as JSON content (``finish_reason="stop"``);
- a ``str``: sent as raw content;
- a :class:`Fault`: an HTTP error (status, headers, body), a hang of N seconds before the
  reply, or a ``finish_reason="length"`` reply whose content is cut in half (truncated JSON).

Every request body is recorded in ``.requests`` (parsed JSON, in arrival order).

    with ScriptedServer([{"operations": []}]) as server:
        config = server.config(load_config(vault.root))
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "openai/scripted"
KEY_ENV = "SCRIPTED_LLM_KEY"
DUMMY_KEY = "sk-scripted-dummy"


@dataclass
class Fault:
    """A reply that is not a plain success."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | dict[str, Any] | None = None  # error body (status != 200)
    hang: float = 0.0  # seconds to wait before answering
    then: Any = None  # the reply sent after a hang (a dict or str); None: {}
    truncate: bool = False  # finish_reason="length", content cut in half


def http_error(status: int, message: str = "", headers: Mapping[str, str] | None = None) -> Fault:
    body = {"error": {"message": message or f"scripted HTTP {status}", "type": "scripted", "code": status}}
    return Fault(status=status, headers=dict(headers or {}), body=body)


def rate_limited(retry_after: float = 0) -> Fault:
    return http_error(429, "rate limited (scripted)", {"Retry-After": f"{retry_after:g}"})


def hang(seconds: float, then: Any = None) -> Fault:
    return Fault(hang=seconds, then=then)


def truncated(reply: Any) -> Fault:
    return Fault(truncate=True, then=reply)


Script = list[Any] | Callable[[dict[str, Any]], Any]


def _content_of(reply: Any) -> str:
    if reply is None:
        return "{}"
    if isinstance(reply, str):
        return reply
    return json.dumps(reply, ensure_ascii=False)


def _prompt_chars(request: Mapping[str, Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in request.get("messages") or [])


class ScriptedServer:
    """Context manager: ``with ScriptedServer(script) as server: ... server.url``."""

    def __init__(self, script: Script, *, default: Any = None) -> None:
        self.script = script
        self.default = default  # reply once a list script is used up; None: HTTP 500 and noted
        self.requests: list[dict[str, Any]] = []
        self.unexpected: list[str] = []  # requests beyond the end of a list script
        self._index = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life ---------------------------------------------------------------------

    def __enter__(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-llm", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closing.set()  # wakes hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The api_base to give litellm (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- pointing wikiwright at it ---------------------------------------------------

    def env(self, model: str = MODEL) -> dict[str, str]:
        """Environment variables that point a wikiwright process (the CLI, the daemon) here."""
        return {
            "WIKIWRIGHT_LLM_MODEL": model,
            "WIKIWRIGHT_LLM_API_BASE": self.url,
            "WIKIWRIGHT_LLM_API_KEY_ENV": KEY_ENV,
            KEY_ENV: DUMMY_KEY,
        }

    def config(self, base: Any, **llm_overrides: Any) -> Any:
        """``base`` (a Config) with its [llm] section pointed here; also sets the dummy key env var."""
        os.environ[KEY_ENV] = DUMMY_KEY
        llm = dataclasses.replace(
            base.llm, model=MODEL, api_base=self.url, api_key_env=KEY_ENV, **llm_overrides
        )
        return base.replace(llm=llm)

    # -- replies ----------------------------------------------------------------------

    def _next_reply(self, request: dict[str, Any]) -> Any:
        if callable(self.script):
            return self.script(request)
        with self._lock:
            if self._index < len(self.script):
                reply = self.script[self._index]
                self._index += 1
                return reply
        if self.default is not None:
            return self.default
        self.unexpected.append(json.dumps(request)[:500])
        return http_error(500, "scripted server: script exhausted")

    @property
    def remaining(self) -> int:
        return 0 if callable(self.script) else len(self.script) - self._index

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {"_unparsable": raw.decode("utf-8", "replace")}
        request["_path"] = handler.path
        request["_authorization"] = handler.headers.get("Authorization", "")
        with self._lock:
            self.requests.append(request)
        if not handler.path.rstrip("/").endswith("/chat/completions"):
            self._send(handler, 404, {}, {"error": {"message": f"no route {handler.path}"}})
            return
        reply = self._next_reply(request)
        finish = "stop"
        if isinstance(reply, Fault):
            if reply.hang:
                self._closing.wait(reply.hang)
            if reply.status != 200:
                self._send(handler, reply.status, reply.headers, reply.body or {"error": {"message": "fault"}})
                return
            content = _content_of(reply.then)
            if reply.truncate:
                content = content[: max(1, len(content) // 2)]
                finish = "length"
            headers = reply.headers
        else:
            content = _content_of(reply)
            headers = {}
        prompt_tokens = _prompt_chars(request) // 4
        completion_tokens = max(1, len(content) // 4)
        body = {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "scripted"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        self._send(handler, 200, headers, body)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, headers: Mapping[str, str], body: Any) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)


def user_prompt(request: Mapping[str, Any]) -> str:
    """The text of the last user message of a recorded request."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def prompt_text(request: Mapping[str, Any]) -> str:
    """All message text of a recorded request."""
    return "\n".join(str(m.get("content") or "") for m in request.get("messages") or [])


def iter_prompts(server: ScriptedServer) -> Iterator[str]:
    for request in server.requests:
        yield prompt_text(request)
