"""The Python API pages of the built site (docs/reference/api/*.md, rendered by mkdocstrings):
constructors show their signatures, every field of the configurations is documented, the nn
page opens on attention, and torch's types link to PyTorch's documentation with no network."""

from __future__ import annotations

import dataclasses
import doctest
import html
import re
import sys
from pathlib import Path

import pytest

from glassformer import ModelConfig, generation, models, nn
from glassformer.training import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")
TORCH_DOCS = "https://docs.pytorch.org/docs/stable/"

pytestmark = pytest.mark.slow  # the site is built once for the file, ~7 s


@pytest.fixture(scope="module")
def site(built_site) -> Path:
    return built_site


def api_page(site: Path, name: str) -> str:
    return (site / "reference" / "api" / f"{name}.html").read_text(encoding="utf-8")


def text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def entry(page: str, identifier: str) -> str:
    """The HTML of one documented object: from its heading to the next heading of its level
    or above."""
    m = re.search(rf'<h(\d) id="{re.escape(identifier)}"', page)
    assert m, f"no heading for {identifier}"
    end = re.search(rf"<h[1-{m[1]}] id=", page[m.end() :])
    return page[m.start() : m.end() + end.start() if end else len(page)]


def signature(page: str, identifier: str) -> str:
    """The text of the object's signature block, whitespace collapsed."""
    block = re.search(r'<div class="doc-signature[^"]*">(.*?)</div>', entry(page, identifier), re.S)
    assert block, f"no signature block for {identifier}"
    return " ".join(text(block[1]).split())


@pytest.mark.parametrize(
    ("page", "identifier", "start"),
    [
        ("nn", "glassformer.nn.MultiHeadAttention", "MultiHeadAttention( d_model: int, n_head"),
        ("nn", "glassformer.nn.FeedForward", "FeedForward( d_model: int, d_ff: int"),
        ("models", "glassformer.models.DecoderLM", "DecoderLM(config: ModelConfig"),
        ("models", "glassformer.models.EncoderDecoder", "EncoderDecoder(config: ModelConfig"),
        ("glassformer", "glassformer.ModelConfig", 'ModelConfig( family: str = "decoder", vocab'),
        ("training", "glassformer.training.TrainConfig", "TrainConfig("),
    ],
)
def test_classes_show_their_constructor_signature(site, page, identifier, start):
    assert signature(api_page(site, page), identifier).startswith(start)


@pytest.mark.parametrize(
    ("page", "config"), [("glassformer", ModelConfig), ("training", TrainConfig)]
)
def test_every_config_field_is_documented(site, page, config):
    html_page = api_page(site, page)
    prefix = "glassformer." if config is ModelConfig else "glassformer.training."
    for f in dataclasses.fields(config):
        doc = entry(html_page, f"{prefix}{config.__name__}.{f.name}")
        body = text(doc.split('<div class="doc doc-contents', 1)[-1])
        assert len(body.split()) >= 3, f"{config.__name__}.{f.name} has no description"


def test_models_page_opens_on_the_decoder_and_documents_every_model(site):
    page = api_page(site, "models")
    headings = re.findall(r'<h3 id="glassformer\.models\.([^".]+)"', page)
    assert headings[0] == "DecoderLM"
    public = [n for n in models.__all__ if callable(getattr(models, n))]
    assert sorted(headings) == sorted(public)


def test_nn_page_opens_on_attention_and_names_no_private_class(site):
    page = api_page(site, "nn")
    headings = re.findall(r'<h3 id="(glassformer\.nn\.[^"]+)"', page)
    assert headings[:2] == ["glassformer.nn.attention", "glassformer.nn.MultiHeadAttention"]
    assert sorted(h.removeprefix("glassformer.nn.") for h in headings) == sorted(nn.__all__)
    described = re.sub(r'<details class="quote">.*?</details>', "", page, flags=re.S)  # source
    assert not re.search(r"\b_(Block|Stack)\b", text(described))


def test_torch_types_link_to_pytorch_documentation(site):
    page = api_page(site, "nn")
    assert f'href="{TORCH_DOCS}tensors.html#torch.Tensor"' in page
    assert f'href="{TORCH_DOCS}generated/torch.nn.Module.html#torch.nn.Module"' in page


@pytest.mark.parametrize(
    "documented",
    [
        models.DecoderLM,
        models.EncoderDecoder,
        models.EncoderModel,
        nn.MultiHeadAttention,
        generation.generate,
    ],
    ids=lambda obj: obj.__name__,
)
def test_docstring_examples_run(documented):
    """The examples of the docstrings, which the API pages show, run as written."""
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner()
    tests = finder.find(documented, documented.__name__, globs={})
    assert tests and tests[0].examples, f"{documented.__name__} has no example"
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
