"""The documentation's formulas become MathML when the site is built (docs/hooks/mathml.py):
inline and display formulas are converted, text inside them stays text, and a formula with
anything latex2mathml would not convert (a command, an environment, a row spacing, a stray
``&``) fails the build naming its page and the formula. Every formula of every page converts."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import markdown
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "docs" / "hooks" / "mathml.py"
spec = importlib.util.spec_from_file_location("mathml_hook", HOOK)
mathml = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mathml)
PAGE = SimpleNamespace(file=SimpleNamespace(src_path="concepts/attention.md"))
DOCS = sorted((ROOT / "docs").rglob("*.md"))


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


def test_cases_become_a_table_after_a_stretchy_brace():
    tex = "f(x) = \\begin{cases} 1 & x > 0 \\\\ 0 & x \\le 0 \\end{cases}"
    out = mathml.on_page_content(f'<div class="arithmatex">\\[{tex}\\]</div>', page=PAGE)
    assert '<mo stretchy="true" fence="true" form="prefix">&#x0007B;</mo><mtable>' in out
    assert out.count("<mtr>") == 2 and "\\" not in out


def test_an_operator_name_is_an_identifier_as_tex_spaces_it():
    html = '<span class="arithmatex">\\(\\operatorname{lr}(s)\\)</span>'
    out = mathml.on_page_content(html, PAGE)
    assert '<mi>lr</mi><mo stretchy="false">&#x00028;</mo>' in out and "<mo>lr</mo>" not in out


@pytest.mark.parametrize(
    ("tex", "shown"),
    [
        ("b = -\\infty", '<mo>&#x0003D;</mo><mo form="prefix">&#x02212;</mo><mi>&#x0221E;</mi>'),
        ("e^{-x}", '<mrow><mo form="prefix">&#x02212;</mo><mi>x</mi></mrow>'),
        ("x - y", "<mi>x</mi><mo>&#x02212;</mo><mi>y</mi>"),
        ("(a) - b", '&#x00029;</mo><mo>&#x02212;</mo><mi>b</mi>'),
    ],
)
def test_signs_and_infinity_are_spaced_as_tex_spaces_them(tex, shown):
    out = mathml.on_page_content(f'<span class="arithmatex">\\({tex}\\)</span>', PAGE)
    assert shown in out


def test_text_inside_a_formula_is_escaped():
    html = '<span class="arithmatex">\\(\\texttt{&lt;PAD&gt;} &lt; n\\)</span>'
    out = mathml.on_page_content(html, page=PAGE)
    assert "&lt;PAD&gt;</mtext>" in out and "<PAD>" not in out


@pytest.mark.parametrize(
    ("tex", "why"),
    [
        ("x^", "cannot be read"),
        ("\\softmax(x)", "uses \\\\softmax, not converted"),
        ("\\mathrm{\\zzz}", "uses \\\\zzz, not converted"),
        ("\\text{\\bad}", "uses \\\\bad, not converted"),
        ("a & b", "uses &, not converted"),
        ("\\begin{aligned} a &= b \\end{aligned}", "uses the environment 'aligned'"),
        ("\\begin{foo} a \\end{foo}", "uses the environment 'foo', not converted"),
        ("\\begin{cases} a & b \\\\[1ex] c & d \\end{cases}", "uses the row spacing"),
        ("\\begin{cases} a & b \\\\ [0.5ex] c & d \\end{cases}", "uses the row spacing"),
    ],
)
def test_a_formula_with_what_is_not_converted_names_the_page_and_formula(tex, why):
    with pytest.raises(ValueError, match=r"concepts/attention\.md: the formula '.*' ") as err:
        mathml.on_page_content(f'<span class="arithmatex">\\({tex}\\)</span>', page=PAGE)
    assert why.replace("\\\\", "\\") in str(err.value)
    assert tex.replace("\\", "\\\\") in str(err.value)  # the formula, as repr() writes it


def _site_markdown() -> markdown.Markdown:
    """Markdown with the site's extensions (mkdocs.yml), less the snippets, which include
    generated tables without formulas."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    names, configs = [], {}
    for entry in config["markdown_extensions"]:
        name, options = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        if name != "pymdownx.snippets":
            names.append(name)
            configs[name] = options or {}
    return markdown.Markdown(extensions=names, extension_configs=configs)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_every_formula_of_every_page_converts_completely(path):
    page = SimpleNamespace(file=SimpleNamespace(src_path=path.relative_to(ROOT / "docs")))
    html = _site_markdown().convert(path.read_text(encoding="utf-8"))
    out = mathml.on_page_content(html, page=page)  # raises on anything not converted
    assert 'class="arithmatex"' not in out
    for formula in out.split("<math")[1:]:
        formula = formula.split("</math>")[0]
        assert "\\" not in formula, f"{page.file.src_path}: a backslash left in {formula}"


def test_the_hook_adds_the_formulas_style_sheet_once():
    config = SimpleNamespace(extra_css=["stylesheets/extra.css"])
    for _ in range(2):
        config = mathml.on_config(config)
    assert config.extra_css == ["stylesheets/extra.css", "assets/math/math.css"]
    assert (ROOT / "docs" / config.extra_css[1]).is_file()
