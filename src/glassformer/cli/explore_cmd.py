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

from ..runs import output_file
from ..safe_write import write_text
from .errors import UsageError
from .model_source import load_model_dir

__all__ = ["run_explore"]


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
