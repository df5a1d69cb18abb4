"""The explorer's local server: Starlette on uvicorn (``pip install glassformer[explore]``).

    GET  /            the page (its JavaScript and CSS inlined: no other file is served)
    GET  /api/model   the model's family and sizes (model_info)
    POST /api/run     {"text": ..., "target": ...} -> everything the page draws (explore_data)

It reads no file while it runs: the model was loaded before it started and the page is built
in memory, so no request can reach a file outside the checkpoint (or any file at all). Every
other path is a 404 with a JSON error. A request is refused (403) unless its Host is the
server's own (a page elsewhere cannot reach it by a DNS name of its own), and a POST unless it
comes from the page: JSON with the page's ``X-Glassformer-Explorer`` header, no foreign Origin.

A request body is read as it arrives and no further than ``MAX_BODY`` bytes: a larger one is
refused (413) from its Content-Length before a byte is read, or as soon as the bytes received
pass the limit (a chunked body), and its connection is closed unread. Every answer is JSON in
ASCII (nothing the model's vocabulary holds can fail to encode); an input that is not an object
of strings, nested too deeply, or not valid Unicode (a lone surrogate such as ``"\\ud800"``) is
refused (400) naming what is wrong.
"""

from __future__ import annotations

import json
import socket
import threading

from ..named import naming
from ..structured import loads_json
from .data import explore_data, model_info
from .page import page_html

__all__ = ["HEADER", "MAX_BODY", "LocalServer", "create_app"]

HEADER = "x-glassformer-explorer"  # set by explorer.js on every API call
MAX_BODY = 64 * 1024  # bytes of a /api/run request: a text of max_len tokens fits many times
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def create_app(
    model,
    *,
    name: str = "",
    text: str | None = None,
    target: str | None = None,
    top_k: int = 5,
    hosts: tuple[str, ...] = LOOPBACK,
):
    """The ASGI app serving the explorer for ``model`` (named ``name`` on the page), the
    text box filled with ``text`` (and ``target``); ``hosts``: the host names it answers to."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import ClientDisconnect
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    info = {**model_info(model), "name": name, "text": text, "target": target}
    page = page_html(info)
    lock = threading.Lock()  # one forward pass at a time: the model is shared

    class Reply(JSONResponse):
        """JSON escaped to ASCII: a lone surrogate in the data (a token of a tampered
        vocabulary) is written as ``\\ud800``, never a reply that fails to encode."""

        def render(self, content) -> bytes:
            return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")

    def error(status: int, message: str, **headers: str) -> JSONResponse:
        return Reply({"error": message}, status_code=status, headers=headers or None)

    def refused(request, api: bool) -> JSONResponse | None:
        host = request.headers.get("host", "")
        if host.rsplit(":", 1)[0] not in hosts:
            return error(403, f"refused: Host {host!r} is not this server ({', '.join(hosts)})")
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != host:
            return error(403, f"refused: a request from another page ({origin})")
        if api and request.headers.get(HEADER) != "1":
            return error(403, "refused: only the explorer page may call its API")
        return None

    async def index(request):
        return refused(request, api=False) or HTMLResponse(page)

    async def model_endpoint(request):
        return refused(request, api=True) or Reply(info)

    async def run(request):
        no = refused(request, api=True)
        if no is not None:
            return no
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return error(415, "send the input as JSON: Content-Type: application/json")
        try:
            body = await read_body(request)
        except TooLarge as err:  # the rest of the body is never read: the connection closes
            return error(413, str(err), connection="close")
        except ClientDisconnect:  # gone before its body was whole: nobody to answer
            return Response(status_code=400)
        try:
            text, tgt = request_inputs(body)
        except ValueError as err:
            return error(400, str(err))

        def work() -> dict:
            with lock:
                return explore_data(model, text, tgt, top_k=top_k)

        try:
            data = await run_in_threadpool(work)
        except ValueError as err:
            return error(400, str(err))
        return Reply(data)

    async def not_found(request, exc):
        return error(
            getattr(exc, "status_code", 404),
            f"{request.method} {request.url.path} is not served; the explorer serves GET /, "
            "GET /api/model and POST /api/run",
        )

    async def failed(request, exc):
        """A bug, not a mistake of the request: one line of JSON for the page (the server
        still logs the traceback)."""
        return error(500, f"the explorer failed on this request ({type(exc).__name__}: {exc})")

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/api/model", model_endpoint, methods=["GET"]),
        Route("/api/run", run, methods=["POST"]),
    ]
    return Starlette(
        routes=routes, exception_handlers={404: not_found, 405: not_found, Exception: failed}
    )


class TooLarge(ValueError):
    """A request body over ``MAX_BODY`` bytes (HTTP 413)."""


async def read_body(request, limit: int = MAX_BODY) -> bytes:
    """The body of ``request``, read chunk by chunk as it arrives; ``TooLarge`` as soon as it
    is known to be over ``limit`` bytes: from its Content-Length before anything is read, or
    when the bytes received pass the limit (a chunked body), reading nothing further."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdecimal() and (len(declared.lstrip("0")) > 18 or int(declared) > limit):
        shown = declared if len(declared) <= 20 else f"{declared[:20]}... ({len(declared)} digits)"
        raise TooLarge(
            f"the request body is {shown} bytes (its Content-Length); the explorer accepts at "
            f"most {limit} and read none of it: send a shorter text"
        )
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise TooLarge(
                f"the request body is larger than {limit} bytes, the most the explorer accepts: "
                f"it stopped reading after {len(body)} bytes; send a shorter text"
            )
    return bytes(body)


def request_inputs(body: bytes) -> tuple[str, str | None]:
    """``(text, target)`` from a /api/run body; ValueError naming what is wrong: not JSON,
    nested too deeply, not an object of strings, or text that is not valid Unicode."""
    payload = loads_json(body, "the request")
    if not isinstance(payload, dict) or set(payload) - {"text", "target"}:
        raise ValueError('send {"text": "...", "target": "..."} (target: encoder-decoders)')
    text, target = payload.get("text"), payload.get("target")
    if not isinstance(text, str) or not (target is None or isinstance(target, str)):
        raise ValueError("text (and target) must be strings")
    for name, value in (("text", text), ("target", target)):
        lone = next((i for i, c in enumerate(value or "") if "\ud800" <= c <= "\udfff"), None)
        if lone is not None:
            code = f"U+{ord(value[lone]):04X}"
            raise ValueError(
                f"the {name} must be valid Unicode: character {lone} is a lone surrogate ({code})"
            )
    return text, target


class LocalServer:
    """uvicorn serving ``app`` on ``host``:``port`` (0: a free port); ``url`` is known as soon
    as the socket is bound. ``run()`` blocks; ``start()`` / ``stop()`` run it in a thread."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 8000) -> None:
        import uvicorn

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OSError as err:
            self.socket.close()
            msg = f"cannot listen on {host}:{port} ({err.strerror}): choose another (port=0: any)"
            raise naming(ValueError(msg), names=("port",)) from None
        self.socket.listen(128)  # connections wait from now on, before uvicorn has started
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        self.url = f"http://{shown}:{self.socket.getsockname()[1]}/"
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        self.server.run(sockets=[self.socket])

    def start(self) -> LocalServer:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            self._thread.join(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join()
        self.socket.close()
