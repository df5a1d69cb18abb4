"""The documentation's formulas become MathML when the site is built (docs/hooks/mathml.py):
inline and display formulas are converted, text inside them stays text, and a formula that
cannot be read fails the build naming its page."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

HOOK = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "mathml.py"
spec = importlib.util.spec_from_file_location("mathml_hook", HOOK)
mathml = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mathml)
PAGE = SimpleNamespace(file=SimpleNamespace(src_path="concepts/attention.md"))


def test_inline_and_display_formulas_become_mathml():
    html = (
        '<p>a <span class="arithmatex">\\(q_n\\)</span> b</p>\n'
        '<div class="arithmatex">\\[\\frac{QK^\\intercal}{\\sqrt{d_k}}\\]</div>'
    )
    out = mathml.on_page_content(html, page=PAGE)
    assert "arithmatex" not in out
    assert out.count("<math") == 2
    assert 'display="inline"' in out and 'display="block"' in out
    assert "<msub><mi>q</mi><mi>n</mi></msub>" in out and "<mfrac>" in out and "<msqrt>" in out


def test_text_inside_a_formula_is_escaped():
    html = '<span class="arithmatex">\\(\\texttt{&lt;PAD&gt;} &lt; n\\)</span>'
    out = mathml.on_page_content(html, page=PAGE)
    assert "&lt;PAD&gt;</mtext>" in out and "<PAD>" not in out


@pytest.mark.parametrize(("tex", "why"), [("x^", "cannot be read"), ("\\softmax(x)", "uses")])
def test_a_formula_that_cannot_be_read_names_the_page(tex, why):
    with pytest.raises(ValueError, match=rf"concepts/attention\.md: the formula .* {why}"):
        mathml.on_page_content(f'<span class="arithmatex">\\({tex}\\)</span>', page=PAGE)
