"""The explorer's server answers only its own page: it refuses requests from elsewhere, inputs
the model cannot take and paths it does not serve, each with a JSON error that says why, and it
opens no file while it serves. The command line refuses a missing checkpoint, a busy port and
an export without a text with one line and exit status 2."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import urllib.request

import pytest
import torch
from starlette.testclient import TestClient

from glassformer.cli import main
from glassformer.explore import explore_data
from glassformer.explore.server import HEADER, MAX_BODY, create_app

from .conftest import PROMPTS

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
    ],
)
def test_bad_requests_get_a_clear_error(client, body, content_type, status, message):
    got = client.post("/api/run", content=body, headers={**API, "content-type": content_type})
    assert got.status_code == status
    assert message in got.json()["error"]


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
