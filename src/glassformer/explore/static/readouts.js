// The residual stream, the logit lens, per-head attribution and the predictions.

// ---- residual stream -------------------------------------------------------------------
function renderResidual() {
  const panels = el("div", { class: "panels" });
  for (const [stack, steps] of Object.entries(state.data.residual)) {
    const tokens = state.data.tokens[stack].tokens;
    const max = Math.max(1e-12, ...steps.flatMap((s) => s.update_norm));
    const cell = Math.max(10, Math.min(28, Math.floor(560 / tokens.length)));
    const left = 110, top = 70;
    const svg = svgEl("svg", { class: "residual", "data-stack": stack,
      width: left + tokens.length * cell + 4, height: top + steps.length * cell + 4 });
    tokens.forEach((t, m) => svg.append(svgEl("text", { x: 0, y: 0,
      transform: `translate(${left + m * cell + cell * 0.7},${top - 4}) rotate(-60)` }, shown(t))));
    steps.forEach((s, r) => {
      const name = s.sublayer === "ff" ? "feed-forward" : s.sublayer.replace("_attn", "-attn");
      svg.append(svgEl("text", { x: left - 4, y: top + r * cell + cell * 0.72, "text-anchor": "end" },
        `L${s.layer} ${name}`));
      s.update_norm.forEach((v, m) => {
        svg.append(svgEl("rect", { class: "cell", x: left + m * cell, y: top + r * cell,
          width: cell, height: cell, fill: blue(v / max), "data-layer": s.layer,
          "data-sublayer": s.sublayer, "data-row": r, "data-col": m, "data-value": v }));
      });
    });
    hover(svg, (target) => {
      if (!target.classList.contains("cell")) return null;
      const s = steps[Number(target.dataset.row)], m = Number(target.dataset.col);
      const name = s.sublayer === "ff" ? "feed-forward" : s.sublayer.replace("_attn", "-attn");
      return `L${s.layer} ${name}, position ${m} ${shown(tokens[m])}: ` +
        `‖update‖ = ${short(s.update_norm[m], 4)}, ‖x‖ after = ${short(s.after_norm[m], 4)}`;
    });
    const fig = el("figure", {});
    fig.append(el("figcaption", {}, stack));
    fig.append(withScale(svg, colourScale({ name: `residual-${stack}`, label: "‖update‖",
      min: 0, max, colour: blue, top, height: steps.length * cell })));
    panels.append(fig);
  }
  $("residual").replaceChildren(panels);
}

// ---- logit lens, attribution, predictions ----------------------------------------------
function tokenCell(token, prob, id) {
  const td = el("td", { "data-token": token, "data-prob": prob });
  if (id !== undefined) td.setAttribute("data-id", id);
  td.style.background = shade(prob);
  td.textContent = `${shown(token)} ${fmt(prob)}`;
  return td;
}

// The shading of the lens's and the predictions' cells: p from 0 (white) to 1.
function probabilityScale(name) {
  return colourScale({ name, label: "p", min: 0, max: 1, colour: shade, across: true });
}

function renderLens() {
  const lens = state.data.lens, pos = state.position;
  const stack = readoutStack();
  if (lens.error) {
    $("lens-caption").textContent = "";
    $("lens").replaceChildren(el("p", { class: "note" }, `No logit lens: ${lens.error}`));
    return;
  }
  $("lens-caption").textContent = `The top tokens read from the ${stack}'s stream at position ` +
    `${pos} (${shown(state.data.tokens[stack].tokens[pos])}) entering block 0 and after each ` +
    "block, through the final norm and the unembedding.";
  const table = el("table", { id: "lens-table", "data-position": pos });
  lens.labels.forEach((label, l) => {
    const tr = el("tr", { "data-layer": label });
    tr.append(el("th", {}, label));
    lens.tokens[l][pos].forEach((t, k) => tr.append(tokenCell(t, lens.probs[l][pos][k])));
    table.append(tr);
  });
  $("lens").replaceChildren(withScale(table, probabilityScale("lens")));
}

function renderAttribution() {
  const att = state.data.attribution;
  if (att.error) {
    $("attribution-caption").textContent = "";
    $("attribution").replaceChildren(el("p", { class: "note" }, `No direct attribution: ${att.error}`));
    return;
  }
  const where = att.position === null ? "the pooled vector" : `position ${att.position}`;
  $("attribution-caption").textContent = `Each head's direct share of the logit of ` +
    `${shown(att.answer)} at ${where} (the model's prediction, logit ${fmt(att.logit)}): its ` +
    "output through the final norm (scale frozen) and the unembedding. Red adds, blue takes away.";
  const panels = el("div", { class: "panels" });
  for (const [kind, grid] of Object.entries(att.heads)) {
    const max = Math.max(1e-12, ...grid.flat().map(Math.abs));
    const table = el("table", { class: "attribution", "data-kind": kind });
    const head = el("tr", {});
    head.append(el("th", {}, `${kind}-attention`));
    grid[0].forEach((_, h) => head.append(el("th", {}, `head ${h}`)));
    table.append(head);
    grid.forEach((row, l) => {
      const tr = el("tr", {});
      tr.append(el("th", {}, `layer ${l}`));
      row.forEach((v, h) => {
        const td = el("td", { class: "share", "data-layer": l, "data-head": h, "data-value": v },
          Number(v).toPrecision(3));
        td.style.background = diverging(v, max);
        if (Math.abs(v) > 0.6 * max) td.style.color = "#fff";
        tr.append(td);
      });
      table.append(tr);
    });
    hover(table, (target) => target.classList.contains("share") &&
      `${kind}-attention layer ${target.dataset.layer}, head ${target.dataset.head}: ` +
      `${Number(target.dataset.value).toPrecision(6)} of the logit of ${shown(att.answer)}`);
    panels.append(withScale(table, colourScale({ name: `attribution-${kind}`, label: "logit",
      min: -max, max, colour: (t) => diverging(2 * t - 1, 1), across: true })));
  }
  $("attribution").replaceChildren(panels);
}

function renderPredictions() {
  const p = state.data.predictions;
  const box = $("predictions");
  if (p.kind === "none") {
    $("predictions-caption").textContent = "";
    box.replaceChildren(el("p", { class: "note" }, "This model has no output layer (an encoder)."));
    return;
  }
  if (p.kind === "class") {
    $("predictions-caption").textContent = "The class probabilities, softmax of the classifier's logits.";
    const table = el("table", { id: "predictions-table" });
    p.labels.forEach((label, i) => {
      const tr = el("tr", { "data-label": label, "data-prob": p.probs[i] });
      if (i === p.predicted) tr.classList.add("selected");
      tr.append(el("td", {}, label));
      const bar = el("td", {});
      bar.append(el("span", { class: "bar", style: `width:${Math.round(200 * p.probs[i])}px` }));
      tr.append(bar);
      tr.append(el("td", {}, fmt(p.probs[i], 4)));
      table.append(tr);
    });
    box.replaceChildren(table);
    return;
  }
  const tokens = state.data.tokens[p.stack].tokens;
  let positions = tokens.map((_, i) => i);
  if (p.kind === "mask") {
    $("predictions-caption").textContent = p.masked.length ? "The candidates for each <MASK>." :
      "No <MASK> in the input: what the masked LM reads at every position.";
    if (p.masked.length) positions = p.masked;
  } else {
    $("predictions-caption").textContent = "The next-token distribution at each position: the " +
      "top tokens the model predicts to follow it, with their probabilities.";
  }
  const table = el("table", { id: "predictions-table" });
  const head = el("tr", {});
  head.append(el("th", {}, "position"), el("th", {}, "token"));
  p.top[0].forEach((_, k) => head.append(el("th", {}, `top ${k + 1}`)));
  table.append(head);
  for (const pos of positions) {
    const tr = el("tr", { "data-pos": pos });
    if (pos === state.position) tr.classList.add("selected");
    tr.append(el("td", {}, String(pos)), el("td", {}, shown(tokens[pos])));
    p.top[pos].forEach(([token, id, prob]) => tr.append(tokenCell(token, prob, id)));
    table.append(tr);
  }
  box.replaceChildren(withScale(table, probabilityScale("predictions")));
}
