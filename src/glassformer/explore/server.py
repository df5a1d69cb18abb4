"""The explorer's local server: Starlette on uvicorn (``pip install glassformer[explore]``).

    GET  /            the page (its JavaScript and CSS inlined: no other file is served)
    GET  /api/model   the model's family and sizes (model_info)
    POST /api/run     {"text": ..., "target": ...} -> everything the page draws (explore_data)

It reads no file while it runs: the model was loaded before it started and the page is built
in memory, so no request can reach a file outside the checkpoint (or any file at all). Every
other path is a 404 with a JSON error. A request is refused (403) unless its Host is the
server's own (a page elsewhere cannot reach it by a DNS name of its own), and a POST unless it
comes from the page: JSON with the page's ``X-Glassformer-Explorer`` header, no foreign Origin.
"""

from __future__ import annotations

import json
import socket
import threading

from .data import explore_data, model_info
from .page import page_html

__all__ = ["HEADER", "LocalServer", "create_app"]

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
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    info = {**model_info(model), "name": name, "text": text, "target": target}
    page = page_html(info)
    lock = threading.Lock()  # one forward pass at a time: the model is shared

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=status)

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
        return refused(request, api=True) or JSONResponse(info)

    async def run(request):
        no = refused(request, api=True)
        if no is not None:
            return no
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return error(415, "send the input as JSON: Content-Type: application/json")
        body = await request.body()
        if len(body) > MAX_BODY:
            return error(413, f"the request is {len(body)} bytes; at most {MAX_BODY} are read")
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            return error(400, f"the request is not valid JSON: {err}")
        if not isinstance(payload, dict) or set(payload) - {"text", "target"}:
            return error(400, 'send {"text": "...", "target": "..."} (target: encoder-decoders)')
        text, tgt = payload.get("text"), payload.get("target")
        if not isinstance(text, str) or not (tgt is None or isinstance(tgt, str)):
            return error(400, "text (and target) must be strings")

        def work() -> dict:
            with lock:
                return explore_data(model, text, tgt, top_k=top_k)

        try:
            data = await run_in_threadpool(work)
        except ValueError as err:
            return error(400, str(err))
        return JSONResponse(data)

    async def not_found(request, exc):
        return error(
            getattr(exc, "status_code", 404),
            f"{request.method} {request.url.path} is not served; the explorer serves GET /, "
            "GET /api/model and POST /api/run",
        )

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/api/model", model_endpoint, methods=["GET"]),
        Route("/api/run", run, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})


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
            raise ValueError(
                f"cannot listen on {host}:{port} ({err.strerror}): "
                "choose another --port (0: any free one)"
            ) from None
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
