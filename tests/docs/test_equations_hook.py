"""docs/hooks/equations.py: on the API pages, "Eq. (n)" links to the concept page showing it."""

from __future__ import annotations

import importlib.util

from .pages import ROOT

spec = importlib.util.spec_from_file_location("docs_equations", ROOT / "docs/hooks/equations.py")
equations = importlib.util.module_from_spec(spec)
spec.loader.exec_module(equations)


def test_each_equation_links_to_its_concept_page():
    html = "<p>Eq. (1) over heads (Eq. 2), then Eqs. 4 and 5.</p>"
    assert equations.link_equations(html, "reference/api/nn.html") == (
        '<p><a href="../../concepts/attention.html#the-formulas">Eq. (1)</a> over heads '
        '(<a href="../../concepts/attention.html#the-formulas">Eq. 2</a>), then '
        '<a href="../../concepts/multi-head.html#the-formulas">Eqs. 4</a> and 5.</p>'
    )


def test_code_links_and_headings_are_left_alone():
    html = (
        '<pre><span>"""Eq. (1)"""</span></pre><code>Eq. (2)</code><a href="x">Eq. (3)</a>'
        '<h2 id="eq">Eq. (4)<a class="headerlink" href="#eq">¶</a></h2>'
    )
    assert equations.link_equations(html, "reference/api/nn.html") == html
