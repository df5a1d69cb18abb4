"""The explorer's server answers only its own page: it refuses requests from elsewhere, inputs
the model cannot take and paths it does not serve, each with a JSON error that says why, and it
opens no file while it serves. It reads a request body only up to its limit, whether the body
is sized or chunked (checked over a plain socket: starlette's TestClient reads a generator body
whole before the app sees it). The command line refuses a missing checkpoint, a busy port and
an export without a text with one line and exit status 2."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request

import pytest
import torch
from starlette.testclient import TestClient

from glassformer import load_model
from glassformer.cli import main
from glassformer.explore import explore_data, server
from glassformer.explore.server import HEADER, MAX_BODY, create_app

from .conftest import PROMPTS, serving

API = {HEADER: "1"}


@pytest.fixture(scope="module")
def client(models):
    app = create_app(models["lm"], name="tiny-lm", text="ROMEO:")
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        yield c


def run(client, payload, **headers):
    return client.post("/api/run", json=payload, headers={**API, **headers})


def test_the_page_and_the_api_answer_the_page(client, models):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    boot = re.search(r'<script id="boot" type="application/json">(.*?)</script>', page.text)
    info = json.loads(boot.group(1))["info"]
    assert info["name"] == "tiny-lm" and info["text"] == "ROMEO:"
    assert client.get("/api/model", headers=API).json() == info
    got = run(client, {"text": "ROMEO: and"})
    assert got.status_code == 200
    assert got.json() == json.loads(json.dumps(explore_data(models["lm"], "ROMEO: and")))


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({HEADER: "0"}, "only the explorer page may call its API"),
        ({"host": "evil.example:8000"}, "Host 'evil.example:8000' is not this server"),
        ({"origin": "http://evil.example"}, "a request from another page"),
    ],
)
def test_requests_from_elsewhere_are_refused(client, headers, message):
    got = run(client, {"text": "ROMEO:"}, **headers)
    assert got.status_code == 403 and message in got.json()["error"]
    if "host" in headers:
        got = client.get("/", headers=headers)
        assert got.status_code == 403 and message in got.json()["error"]


def test_a_page_of_its_own_origin_is_let_through(client):
    got = run(client, {"text": "ROMEO:"}, origin="http://127.0.0.1:8000")
    assert got.status_code == 200


@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (b'{"text": "ROMEO:"}', "text/plain", 415, "Content-Type: application/json"),
        (b'{"text": "' + b"a" * MAX_BODY + b'"}', "application/json", 413, "at most 65536"),
        (b'{"text": ', "application/json", 400, "not valid JSON"),
        (b'{"text": "a", "path": "/etc/passwd"}', "application/json", 400, 'send {"text"'),
        (b'["ROMEO:"]', "application/json", 400, 'send {"text"'),
        (b'{"text": 3}', "application/json", 400, "must be strings"),
        (b'{"text": ""}', "application/json", 400, "text"),
        (b'{"text": "a' + b"a" * (MAX_BODY - 13) + b'"}', "application/json", 400, "max_len is"),
        (b'{"text": "a", "x": ' + b"[" * 30000 + b"]" * 30000 + b"}", "application/json", 400,
         "the request nests lists or objects too deeply: allowed at most 64 levels"),
        (b'{"text": "a", "x": ' + b"1" * 5000 + b"}", "application/json", 400,
         "the request is not valid JSON (a number has more than 4300 digits)"),
        (b'{"text": "ab\\ud800c"}', "application/json", 400,
         "the text must be valid Unicode: character 2 is a lone surrogate (U+D800)"),
        (b'{"text": "ab", "target": "\\udfff"}', "application/json", 400,
         "the target must be valid Unicode: character 0 is a lone surrogate (U+DFFF)"),
        (b'{"text": "ab", "target": "b"}', "application/json", 400, "encoder-decoder"),
    ],
)  # fmt: skip
def test_bad_requests_get_a_clear_error(client, body, content_type, status, message):
    got = client.post("/api/run", content=body, headers={**API, "content-type": content_type})
    assert got.status_code == status
    assert message in got.json()["error"] and "\n" not in got.json()["error"]


def test_a_failure_inside_is_a_json_error_not_a_page_of_text(models, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the forward pass broke")

    monkeypatch.setattr(server, "explore_data", broken)
    app = create_app(models["lm"])
    with TestClient(app, "http://127.0.0.1:8000", raise_server_exceptions=False) as c:
        got = run(c, {"text": "ROMEO:"})
    assert got.status_code == 500
    assert got.json() == {
        "error": "the explorer failed on this request (RuntimeError: the forward pass broke)"
    }


def test_names_and_tokens_that_are_not_utf8_are_escaped(checkpoints, tmp_path):
    """A folder name that is not UTF-8 (a lone surrogate once decoded) and a tampered
    vocabulary holding one: every answer is still JSON, the surrogates escaped."""
    folder = tmp_path / "tampered"
    shutil.copytree(checkpoints["lm"] / "checkpoints" / "step-000001", folder)
    tokenizer = folder / "tokenizer.json"
    tokenizer.write_text(tokenizer.read_text().replace('"Q": 44', '"\\ud800": 44'))
    model = load_model(folder).eval()
    app = create_app(model, name="run-\udcff", top_k=model.config.vocab_size)
    with TestClient(app, "http://127.0.0.1:8000") as c:
        page = c.get("/")
        assert page.status_code == 200 and '"name": "run-\\udcff"' in page.text
        assert c.get("/api/model", headers=API).json()["name"] == "run-\udcff"
        got = run(c, {"text": "ROMEO"})
    assert got.status_code == 200 and got.text.isascii()
    assert ["\ud800", 44] in [top[:2] for top in got.json()["predictions"]["top"][0]]


def post_raw(url: str, headers: dict[str, str], chunks) -> tuple[int, dict, bool]:
    """POST /api/run to the server at ``url`` over a plain socket: the headers, then the bytes
    of ``chunks`` (a generator, pulled only as fast as the server takes them in), while the
    reply is read. Returns (status, JSON body, whether the reply says the connection closes)."""
    where = urllib.parse.urlsplit(url)
    head = ["POST /api/run HTTP/1.1", f"Host: {where.netloc}", f"{HEADER}: 1"]
    head += ["Content-Type: application/json", *(f"{k}: {v}" for k, v in headers.items())]
    reply = b""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)  # what the kernel holds back
        s.settimeout(20)
        s.connect((where.hostname, where.port))
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())

        def send() -> None:
            with contextlib.suppress(OSError):  # the server closed the connection: stop
                for chunk in chunks:
                    s.sendall(chunk)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        with contextlib.suppress(ConnectionResetError):  # closed with the body unread
            while not complete(reply):
                data = s.recv(65536)
                assert data, f"the server closed the connection without a reply: {reply!r}"
                reply += data
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)  # wakes the sender if the server still reads
        sender.join(20)
    head_bytes, body = reply.split(b"\r\n\r\n", 1)
    return int(head_bytes.split()[1]), json.loads(body), b"connection: close" in head_bytes


def complete(reply: bytes) -> bool:
    """Whether ``reply`` holds a whole HTTP response (headers and Content-Length bytes)."""
    head, found, body = reply.partition(b"\r\n\r\n")
    size = re.search(rb"\r\ncontent-length: (\d+)", head)
    return bool(found) and size is not None and len(body) >= int(size.group(1))


def chunked(pieces, pulled: list[int]):
    """``pieces`` in HTTP/1.1 chunked framing, counting in ``pulled`` how many were taken."""
    for piece in pieces:
        pulled[0] += 1
        yield b"%x\r\n%s\r\n" % (len(piece), piece)
    yield b"0\r\n\r\n"


def test_a_chunked_body_is_read_only_to_the_limit(models):
    """16 MiB offered in 16 KiB chunks: the server stops at 64 KiB and closes the connection;
    the sender gets to pull only what the sockets' buffers took in besides (a few hundred KiB
    with the sender's buffer set to 64 KiB)."""
    chunk, count = b"a" * 16384, 1024
    pulled = [0]
    with serving(models["lm"]) as url:
        status, reply, closed = post_raw(
            url, {"Transfer-Encoding": "chunked"}, chunked((chunk for _ in range(count)), pulled)
        )
    assert status == 413 and closed
    assert reply["error"].startswith(
        f"the request body is larger than {MAX_BODY} bytes, the most the explorer accepts: "
        "it stopped reading after "
    )
    read = int(re.search(r"after (\d+) bytes", reply["error"]).group(1))
    assert MAX_BODY < read <= MAX_BODY + 4 * len(chunk)
    assert pulled[0] * len(chunk) <= 2 * 2**20, pulled  # of 16 MiB


def test_a_sized_body_over_the_limit_is_refused_before_it_is_sent(models):
    """Content-Length: 1 GB and not a byte of the body: the answer comes at once."""
    with serving(models["lm"]) as url:
        status, reply, closed = post_raw(url, {"Content-Length": str(10**9)}, iter(()))
    assert status == 413 and closed
    assert reply["error"] == (
        f"the request body is 1000000000 bytes (its Content-Length); the explorer accepts at "
        f"most {MAX_BODY} and read none of it: send a shorter text"
    )


def test_a_client_gone_before_its_body_ends_is_no_error(models):
    """The ASGI app on its own: half a body, then the client disconnects. The app returns
    (there is no one to answer) instead of raising into the server's log."""
    import asyncio

    messages = [
        {"type": "http.request", "body": b'{"text": "RO', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent = []

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8000"), (HEADER.encode(), b"1"),
               (b"content-type", b"application/json")]  # fmt: skip
    scope = {"type": "http", "method": "POST", "path": "/api/run", "raw_path": b"/api/run",
             "query_string": b"", "headers": headers, "scheme": "http", "root_path": "",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555),
             "http_version": "1.1", "asgi": {"version": "3.0"}}  # fmt: skip
    asyncio.run(create_app(models["lm"])(scope, receive, send))
    assert messages == [] and sent[0]["type"] == "http.response.start"


def test_a_chunked_body_within_the_limit_is_read_whole(models):
    body = json.dumps({"text": PROMPTS["lm"][0]}).encode()
    pulled = [0]
    pieces = [body[i : i + 3] for i in range(0, len(body), 3)]
    with serving(models["lm"]) as url:
        status, reply, closed = post_raw(url, {"Transfer-Encoding": "chunked"},
                                         chunked(pieces, pulled))  # fmt: skip
    assert (status, closed, pulled[0]) == (200, False, len(pieces))
    assert reply == json.loads(json.dumps(explore_data(models["lm"], PROMPTS["lm"][0])))


def test_a_text_longer_than_max_len_is_refused_with_the_limit(client, models):
    max_len = models["lm"].config.max_len
    got = run(client, {"text": "x" * (max_len + 5)})
    assert got.status_code == 400
    assert f"max_len is {max_len}" in got.json()["error"]


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/config.json", 404),
        ("GET", "/../config.json", 404),
        ("GET", "/%2e%2e/%2e%2e/etc/passwd", 404),
        ("GET", "/static/explorer.js", 404),
        ("GET", "/api/run", 405),
        ("POST", "/", 405),
        ("DELETE", "/api/model", 405),
    ],
)
def test_nothing_else_is_served(client, method, path, status):
    got = client.request(method, path, headers=API)
    assert got.status_code == status
    assert "the explorer serves GET /, GET /api/model and POST /api/run" in got.json()["error"]


def test_serving_opens_no_file(client):
    """Every file the process opens while requests are answered (Python's audit hook 'open'):
    none; the page and the model were in memory before the server started."""
    opened: list[str] = []
    recording = [True]

    def hook(event, args):
        if recording[0] and event == "open":
            opened.append(str(args[0]))

    run(client, {"text": "ROMEO:"})  # anything imported lazily is imported now
    sys.addaudithook(hook)  # an audit hook cannot be removed: it records while the flag is set
    try:
        for path in ("/", "/../config.json", "/%2e%2e/model.safetensors", "/etc/passwd"):
            client.get(path, headers=API)
        client.get("/api/model", headers=API)
        run(client, {"text": "ROMEO: and"})
        run(client, {"text": "x" * 100})
    finally:
        recording[0] = False
    assert opened == []


def cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def test_export_writes_one_page_with_the_data(checkpoints, models, tmp_path):
    page = tmp_path / "page.html"
    code, out, err = cli("explore", "--checkpoint", checkpoints["lm"], "--text", "ROMEO:",
                         "--export", page)  # fmt: skip
    assert (code, err) == (0, "") and f"wrote {page}" in out
    boot = re.search(r'<script id="boot" type="application/json">(.*?)</script>', page.read_text())
    data = json.loads(boot.group(1))["data"]
    assert data == json.loads(json.dumps(explore_data(models["lm"], "ROMEO:")))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--checkpoint", "{tmp}/missing"], "missing"),
        (["--checkpoint", "{lm}", "--export", "{tmp}/p.html"], "--export writes the page for one"),
        (["--checkpoint", "{lm}", "--text", "a", "--export", "{tmp}"], "is a directory"),
        (["--checkpoint", "{lm}", "--text", "x" * 40, "--export", "{tmp}/p.html"], "max_len is 32"),
        (["--checkpoint", "{lm}", "--port", "70000"], "a port in 0..65535"),
        (["--checkpoint", "{lm}", "--port", "http"], "'http' is not a port number"),
        (["--checkpoint", "{lm}", "--top-k", "0"], "--top-k"),
    ],
)
def test_command_line_mistakes_are_one_line(checkpoints, tmp_path, argv, message):
    argv = [a.format(tmp=tmp_path, lm=checkpoints["lm"]) for a in argv]
    code, out, err = cli("explore", *argv)
    assert code == 2 and out == ""
    assert err.startswith("glassformer: error:") and err.count("\n") == 1 and message in err
    assert not (tmp_path / "p.html").exists()


def test_a_busy_port_is_refused(checkpoints):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = cli("explore", "--checkpoint", checkpoints["lm"], "--port", port)
    assert code == 2 and f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err


def test_a_hugging_face_directory_is_explored(tmp_path):
    import transformers

    from glassformer.tokenizers import BPETokenizer

    tok = BPETokenizer().train("the cat sat on the mat. " * 20, vocab_size=280)
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=tok.vocab_size, n_embd=32, n_layer=2, n_head=4, n_positions=32
    )
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / "hf")
    tok.save_gpt2_files(tmp_path / "hf")
    page = tmp_path / "page.html"
    code, _, err = cli("explore", "--checkpoint", tmp_path / "hf", "--text", "the cat",
                         "--export", page)  # fmt: skip
    assert (code, err) == (0, "")
    boot = re.search(r'<script id="boot" type="application/json">(.*?)</script>', page.read_text())
    boot = json.loads(boot.group(1))
    assert boot["info"]["converted_from"] == "GPT2LMHeadModel"
    assert boot["data"]["tokens"]["decoder"]["ids"] == tok.encode("the cat", add_bos=True)


def test_the_command_serves_the_page_and_prints_its_address(checkpoints):
    command = [sys.executable, "-m", "glassformer", "explore", "--checkpoint",
               str(checkpoints["lm"]), "--port", "0", "--text", PROMPTS["lm"][0]]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        try:
            line = p.stdout.readline()
            url = re.search(r"on (http://127\.0\.0\.1:\d+/)", line)
            assert url, (line, p.stderr.read() if p.poll() is not None else "")
            with urllib.request.urlopen(url.group(1), timeout=30) as page:
                html = page.read().decode()
            assert "glassformer explorer" in html and '"text": "ROMEO: and"' in html
        finally:
            p.terminate()
            p.wait(timeout=30)
