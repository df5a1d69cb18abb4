// Grids of numbers as heatmaps with labelled axes (the views of glassformer.explore.views): a
// patching grid, and the tensors of a trace's steps. A cell's colour is its value, diverging
// around 0 (red above, blue below) when the values have both signs, else from 0 (white) to
// the largest (blue); the scale beside the grid gives its range, a hover the value.

// An axis label as text: "layer 0" as it is, a token's edge whitespace made visible.
function axisLabel(x) {
  return /^\s|\s$|[\n\t]/.test(x) ? shown(x) : String(x);
}

// The heatmap of `values` (R rows of C), rows and columns labelled; describe(r, c, v): the
// tooltip's text. Every cell keeps its value in data-value.
function gridHeatmap({ name, values, rows, columns, rowAxis, colAxis, label, describe }) {
  const R = values.length, C = values[0].length;
  const flat = values.flat().map(Number).filter(Number.isFinite);  // "-Infinity": a masked score
  const max = Math.max(1e-12, ...flat.map(Math.abs));
  const signed = flat.some((v) => v < 0);
  const finite = signed ? (v) => diverging(v, max) : (v) => blue(v / max);
  const colour = (v) => (Number.isFinite(Number(v)) ? finite(Number(v)) : "#ddd");
  const cell = Math.max(6, Math.min(28, Math.floor(620 / Math.max(R, C))));
  const labels = cell >= 10;
  const left = labels ? 110 : 24, top = labels ? 84 : 24;
  const svg = svgEl("svg", { class: "grid", "data-name": name,
    width: left + C * cell + 4, height: top + R * cell + 4 });
  svg.append(svgEl("text", { class: "axis-title", x: left, y: 11 }, `${colAxis} \u2192`));
  svg.append(svgEl("text", { class: "axis-title", x: 0, y: 0, "text-anchor": "end",
    transform: `translate(11,${top}) rotate(-90)` }, `${rowAxis} \u2192`));
  if (labels) {
    columns.forEach((c, m) => svg.append(svgEl("text", { class: "clabel", "data-pos": m, x: 0, y: 0,
      transform: `translate(${left + m * cell + cell * 0.7},${top - 4}) rotate(-60)` }, axisLabel(c))));
    rows.forEach((r, n) => svg.append(svgEl("text", { class: "rlabel", "data-pos": n,
      x: left - 4, y: top + n * cell + cell * 0.72, "text-anchor": "end" }, axisLabel(r))));
  }
  values.forEach((row, n) => row.forEach((v, m) => svg.append(svgEl("rect", {
    class: "cell", x: left + m * cell, y: top + n * cell, width: cell, height: cell,
    fill: colour(v), "data-row": n, "data-col": m, "data-value": v,
  }))));
  hover(svg, (target) => target.classList.contains("cell") &&
    describe(Number(target.dataset.row), Number(target.dataset.col), target.dataset.value));
  const scale = signed
    ? colourScale({ name, label, min: -max, max, colour: (t) => diverging(2 * t - 1, 1), top,
      height: R * cell })
    : colourScale({ name, label, min: 0, max, colour: blue, top, height: R * cell });
  return withScale(svg, scale);
}

// `select` offering `labels` (remade when they change), `chosen` selected; change(index) runs
// when the reader chooses another.
function choices(select, labels, chosen, change) {
  if (select.options.length !== labels.length ||
      labels.some((l, i) => select.options[i].textContent !== l)) {
    select.replaceChildren(...labels.map((l, i) => el("option", { value: i }, l)));
    select.onchange = () => change(Number(select.value));
  }
  select.value = chosen;
}

// ---- a grid (a patching result) ----------------------------------------------------------
function renderGrid() {
  const g = state.data.grid, page = state.gridPage || 0;
  $("grid-title").textContent = g.title || "Grid";
  const controls = $("grid-controls");
  if (g.pages && !controls.childElementCount) {
    const label = el("label", {}, `${g.axes[0]} `), select = el("select", { id: "grid-page" });
    label.append(select);
    controls.append(label);
  }
  if (g.pages) {
    choices($("grid-page"), g.pages, page, (p) => { state.gridPage = p; renderGrid(); });
  }
  const where = g.pages ? `${g.pages[page]}: ` : "";
  $("grid-caption").textContent = `${where}${g.label} at each ${g.axes[1]} (rows) and ` +
    `${g.axes[2]} (columns). Hover a cell for its value.`;
  $("grid").replaceChildren(gridHeatmap({
    name: "grid", values: g.values[page], rows: g.rows, columns: g.columns,
    rowAxis: g.axes[1], colAxis: g.axes[2], label: g.label,
    describe: (r, c, v) => `${where}${axisLabel(g.rows[r])}, ${axisLabel(g.columns[c])}: ` +
      `${g.label} = ${short(v, 6)}`,
  }));
}

// ---- a trace: each step's formula and tensors --------------------------------------------
function renderTrace() {
  const t = state.data.trace, s = state.step || 0;
  const step = t.steps[s], k = Math.min(state.tensor || 0, step.tensors.length - 1);
  const tensor = step.tensors[k], p = Math.min(state.tracePage || 0, tensor.pages.length - 1);
  choices($("trace-step"), t.steps.map((x, i) => `${i + 1}. ${x.where} \u00b7 ${x.name}`), s,
    (i) => { state.step = i; state.tensor = 0; state.tracePage = 0; renderTrace(); });
  choices($("trace-tensor"), step.tensors.map((x) => `${x.name} (${x.shape.join(", ")})`), k,
    (i) => { state.tensor = i; state.tracePage = 0; renderTrace(); });
  $("trace-page-label").hidden = tensor.pages.length < 2;
  choices($("trace-page"), tensor.pages.map((x) => `${tensor.name}[${x}]`), p,
    (i) => { state.tracePage = i; renderTrace(); });
  const listed = t.tokens && t.tokens.map((x, i) => `${i} ${shown(x)}`).join(", ");
  const tokens = listed ? `\ntokens: ${listed}` : "";
  $("trace-caption").textContent = `${step.formula}\n` +
    step.tensors.map((x) => `${x.name}: (${x.shape.join(", ")})`).join(", ") +
    ` \u2014 ${tensor.name} shown at [${[tensor.pages[p], "\u2026"].filter(Boolean).join(", ")}]` +
    tokens;
  const values = tensor.values[p];
  const index = (r, c) => [tensor.pages[p], tensor.dims === 2 ? r : null, tensor.dims ? c : null]
    .filter((x) => x !== null && x !== "").join(", ");
  $("trace").replaceChildren(gridHeatmap({
    name: "trace", values, rows: values.map((_, r) => String(r)),
    columns: values[0].map((_, c) => String(c)), rowAxis: tensor.dims === 2 ? "row" : "",
    colAxis: "column", label: tensor.name,
    describe: (r, c, v) => `${tensor.name}[${index(r, c)}] = ${short(v, 6)}`,
  }));
}
