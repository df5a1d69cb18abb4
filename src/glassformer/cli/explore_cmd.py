"""``glassformer explore``: the explorer page for a checkpoint (glassformer.explore).

    glassformer explore --checkpoint DIR [--port P] [--host H] [--text T] [--target T]
    glassformer explore --checkpoint DIR --text T [--target T] --export page.html

DIR is a glassformer checkpoint or run folder, or a Hugging Face model directory (GPT-2, BERT,
BART, Llama, converted on loading; its tokenizer from tokenizer.json of any kind, or from
vocab.json + merges.txt: cli/model_source.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..safe_write import write_text
from .errors import UsageError
from .model_source import load_model_dir
from .options import add_checkpoint, add_device, output_file, positive_up_to, utf8_text

__all__ = ["add_parser", "run_explore"]


def add_parser(commands) -> None:
    p = commands.add_parser(
        "explore",
        help="a local web page to look inside a checkpoint: attention, masks, graphs, the "
        "residual stream, the logit lens, attribution and predictions",
        description="Serve the explorer for a checkpoint on http://HOST:PORT/ (a page: type a "
        "text and walk through every layer and head), or with --export write the page for "
        "--text as one self-contained HTML file (no server, no network).",
    )
    add_checkpoint(p)
    p.add_argument("--port", type=_port, default=8000, help="(default 8000; 0: any free port)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only); the page answers "
        "requests addressed to it by this name or localhost, so give the address that others "
        "will type (this machine's IP or name) rather than 0.0.0.0",
    )
    p.add_argument(
        "--text", type=utf8_text, help="the input to show first (required with --export)"
    )
    p.add_argument(
        "--target", type=utf8_text, help="encoder-decoder: the decoder's text (default: greedy)"
    )
    p.add_argument(
        "--export",
        type=Path,
        metavar="FILE",
        help="write the page to FILE (its folder is made when missing) and exit",
    )
    p.add_argument(
        "--top-k", type=positive_up_to(50), default=5, help="tokens listed per position (5)"
    )
    add_device(p)
    p.set_defaults(handler=run_explore)


def run_explore(args: argparse.Namespace) -> int:
    if args.export is not None and args.text is None:
        raise UsageError("--export writes the page for one input: give it with --text")
    if args.export is not None:
        output_file(args.export, "--export")  # before anything is loaded
    model, folder = _load(args.checkpoint, args.device)
    from ..explore import explore_data, model_info, page_html

    if args.export is not None:
        data = explore_data(model, args.text, args.target, top_k=args.top_k)
        info = {
            **model_info(model),
            "name": args.checkpoint.name,
            "text": args.text,
            "target": args.target,
        }
        html = page_html(info, data)
        args.export.parent.mkdir(parents=True, exist_ok=True)
        write_text(args.export, html)
        print(f"wrote {args.export} ({len(html.encode()) // 1024} KiB, self-contained)")
        return 0
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        raise UsageError(
            f"glassformer explore needs starlette and uvicorn ({err}): "
            "pip install 'glassformer[explore]'"
        ) from None
    from ..explore.server import LOOPBACK, LocalServer, create_app

    if args.text is not None:  # fail now, not in the page, on an input the model cannot take
        explore_data(model, args.text, args.target, top_k=args.top_k)
    hosts = tuple(dict.fromkeys((*LOOPBACK, args.host)))
    app = create_app(
        model,
        name=args.checkpoint.name,
        text=args.text,
        target=args.target,
        top_k=args.top_k,
        hosts=hosts,
    )
    server = LocalServer(app, args.host, args.port)
    print(f"glassformer explore: {folder} on {server.url} (Ctrl+C stops it)", flush=True)
    server.run()
    return 0


def _load(path: Path, device: str):
    """A glassformer checkpoint or run folder, or a Hugging Face model directory."""
    from ..explore.data import KINDS

    return load_model_dir(path, KINDS, "explore", device)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not allowed: a port in 0..65535")
    return value
