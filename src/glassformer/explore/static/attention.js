// The attention views: heatmap, lines between tokens (bertviz's head view), the model overview,
// the hover highlight, and the layer's graph next to the learned pattern as a graph.

function renderAttention() {
  const { a, heads } = current();
  const box = $("attn");
  box.replaceChildren();
  const where = `${a.stack} ${a.kind}-attention, layer ${state.layer}`;
  if (state.view === "overview") {
    $("attn-caption").textContent = `${a.stack} ${a.kind}-attention: every layer (rows) and ` +
      "head (columns); grey = masked. Click a pattern to open it.";
    const masked = a.allowed.some((l) => l.some((h) => h.some((row) => row.includes("0"))));
    box.append(withScale(overview(a), attentionScale(0, 100, masked && "#ddd")));
    return;
  }
  const graph = a.graphs[state.layer];
  $("attn-caption").textContent = `${where}, ${state.head === "all" ? "all heads" : "head " +
    state.head}: A = softmax(QKᵀ/√d_k + mask), rows the queries, columns the keys; ` +
    `hatched = masked (the mask applied: the graph ${graph}, with padding).`;
  const wrap = el("div", { class: "panels" });
  let grid = null;
  for (const h of heads) {
    const fig = el("figure", {});
    if (heads.length > 1) fig.append(el("figcaption", {}, `head ${h}`));
    const draw = state.view === "lines" ? lines : heatmap;
    const picture = draw(a, state.layer, h, heads.length > 1);
    grid = grid || picture.grid;
    fig.append(picture);
    wrap.append(fig);
  }
  if (!grid) { box.append(wrap); return; }  // lines: no colours to scale
  const caption = heads.length > 1 ? 20 : 0;  // the figure's caption above each small heatmap
  const masked = heads.some((h) => a.allowed[state.layer][h].some((row) => row.includes("0")));
  box.append(withScale(wrap, attentionScale(grid.top + caption, grid.height, masked && "hatch")));
}

// A's colour scale: the weights are probabilities, drawn from 0 (white) to 1 (dark blue).
function attentionScale(top, height, masked) {
  return colourScale({ name: "attention", label: "A", min: 0, max: 1, colour: blue, top, height,
    masked });
}

function heatmap(a, layer, head, small) {
  const W = a.weights[layer][head], allowed = a.allowed[layer][head];
  const { queries, keys } = current();
  const T = W.length, S = W[0].length;
  const cell = Math.max(small ? 4 : 8, Math.min(small ? 14 : 28, Math.floor((small ? 220 : 620) / Math.max(T, S))));
  const labels = !small || cell >= 10;
  const left = labels ? 90 : 4, top = labels ? 70 : 4;
  const svg = svgEl("svg", {
    class: "heatmap", width: left + S * cell + 4, height: top + T * cell + 4,
    "data-layer": layer, "data-head": head, "data-stack": a.stack, "data-kind": a.kind,
  });
  const defs = svgEl("defs");
  defs.append(hatch(`hatch-${layer}-${head}`));
  svg.append(defs);
  if (labels) {
    keys.forEach((k, m) => svg.append(svgEl("text", {
      class: "klabel", "data-pos": m, x: 0, y: 0,
      transform: `translate(${left + m * cell + cell * 0.7},${top - 4}) rotate(-60)`,
    }, shown(k))));
    queries.forEach((q, n) => svg.append(svgEl("text", {
      class: "qlabel", "data-pos": n, x: left - 4, y: top + n * cell + cell * 0.72,
      "text-anchor": "end",
    }, shown(q))));
  }
  for (let n = 0; n < T; n++) {
    const g = svgEl("g", { class: "row", "data-row": n });
    for (let m = 0; m < S; m++) {
      const ok = allowed[n][m] === "1";
      g.append(svgEl("rect", {
        class: "cell", x: left + m * cell, y: top + n * cell, width: cell, height: cell,
        fill: ok ? blue(W[n][m]) : `url(#hatch-${layer}-${head})`,
        "data-row": n, "data-col": m, "data-value": W[n][m], "data-allowed": ok ? 1 : 0,
      }));
    }
    svg.append(g);
  }
  hover(svg, (target) => target.classList.contains("cell") &&
    cellText(Number(target.dataset.row), Number(target.dataset.col), target.dataset.value,
      target.dataset.allowed === "1"));
  svg.grid = { top, height: T * cell };
  return svg;
}

// What the tooltip says of one weight: the query's row, the key's column, A there.
function cellText(n, m, value, allowed) {
  const { queries, keys } = current();
  return `query ${n} ${shown(queries[n])} \u2192 key ${m} ${shown(keys[m])}: ` +
    `A = ${fmt(value, 4)}${allowed ? "" : " (masked)"}`;
}

// bertviz's head view: queries on the left, keys on the right, a line per weight.
function lines(a, layer, head, small) {
  const W = a.weights[layer][head], allowed = a.allowed[layer][head];
  const { queries, keys } = current();
  const T = W.length, S = W[0].length;
  const row = small ? 14 : 18, width = small ? 260 : 420, label = 80;
  const svg = svgEl("svg", { class: "lines", width, height: Math.max(T, S) * row + 10,
    "data-layer": layer, "data-head": head });
  const y = (i) => 5 + i * row + row * 0.5;
  for (let n = 0; n < T; n++) {
    for (let m = 0; m < S; m++) {
      if (allowed[n][m] !== "1" || W[n][m] < 0.005) continue;
      svg.append(svgEl("line", {
        x1: label, y1: y(n), x2: width - label, y2: y(m), "stroke-width": 1 + 3 * W[n][m],
        "stroke-opacity": W[n][m], "data-q": n, "data-k": m, "data-value": W[n][m],
      }));
    }
  }
  const side = (tokens, x, anchor, cls, stack) => tokens.forEach((t, i) => {
    const text = svgEl("text", { class: cls, "data-pos": i, x, y: y(i) + 4, "text-anchor": anchor },
      shown(t));
    text.addEventListener("mouseenter", () => highlight(stack, i, cls === "klabel"));
    text.addEventListener("mouseleave", clearHighlight);
    svg.append(text);
  });
  side(queries, label - 6, "end", "qlabel", a.stack);
  side(keys, width - label + 6, "start", "klabel", a.keys);
  return svg;
}

function overview(a) {
  const L = a.weights.length, H = a.weights[0].length;
  const grid = el("div", { class: "overview", style: `grid-template-columns: 3rem repeat(${H}, auto)` });
  hover(grid, (target, event) => {
    if (!target.classList.contains("thumb")) return null;
    const l = Number(target.dataset.layer), h = Number(target.dataset.head);
    const W = a.weights[l][h], scale = target.clientWidth / W[0].length;
    const n = Math.min(W.length - 1, Math.floor(event.offsetY / scale));
    const m = Math.min(W[0].length - 1, Math.floor(event.offsetX / scale));
    return `layer ${l}, head ${h}: ` + cellText(n, m, W[n][m], a.allowed[l][h][n][m] === "1");
  });
  grid.append(el("span", {}, ""));
  for (let h = 0; h < H; h++) grid.append(el("span", {}, `head ${h}`));
  for (let l = 0; l < L; l++) {
    grid.append(el("span", {}, `layer ${l}`));
    for (let h = 0; h < H; h++) {
      const W = a.weights[l][h], allowed = a.allowed[l][h];
      const canvas = el("canvas", { class: "thumb", width: W[0].length, height: W.length,
        "data-layer": l, "data-head": h });
      const scale = Math.max(1, Math.floor(96 / Math.max(W.length, W[0].length)));
      canvas.style.width = `${W[0].length * scale}px`;
      canvas.style.height = `${W.length * scale}px`;
      const ctx = canvas.getContext("2d");
      W.forEach((row, n) => row.forEach((v, m) => {
        ctx.fillStyle = allowed[n][m] === "1" ? blue(v) : "#ddd";
        ctx.fillRect(m, n, 1, 1);
      }));
      if (l === state.layer && String(h) === state.head) canvas.classList.add("current");
      canvas.addEventListener("click", () => {
        state.layer = l; state.head = String(h); state.view = "heatmap";
        $("layer-select").value = l; $("head-select").value = h; $("view-select").value = "heatmap";
        render("attention", "graph");
      });
      grid.append(canvas);
    }
  }
  return grid;
}

// Hovering position `pos` of `stack`: the row of what it attends to, the column of what
// attends to it, and in the token row the keys it attends to, shaded by weight.
function highlight(stack, pos, asKey) {
  clearHighlight();
  if (!PANELS.includes("attention")) return;  // a view without attention (the lens's tokens)
  const { a, heads } = current();
  const box = $("attn");
  if (a.stack === stack && !asKey) {
    box.querySelectorAll(`g.row[data-row="${pos}"]`).forEach((g) => g.classList.add("highlight"));
    box.querySelectorAll(`.qlabel[data-pos="${pos}"]`).forEach((t) => t.classList.add("highlight"));
    box.querySelectorAll(`line[data-q="${pos}"]`).forEach((l) => l.classList.add("highlight"));
    const W = a.weights[state.layer][heads[0]][pos];
    document.querySelectorAll(`.token-row[data-stack="${a.keys}"] .token`).forEach((span, m) => {
      span.style.background = `rgba(33,102,172,${0.85 * W[m]})`;
    });
  }
  if (a.keys === stack) {
    box.querySelectorAll(`.cell[data-col="${pos}"]`).forEach((c) => c.classList.add("col-highlight"));
    box.querySelectorAll(`.klabel[data-pos="${pos}"]`).forEach((t) => t.classList.add("highlight"));
    if (asKey || a.stack !== stack) {
      box.querySelectorAll(`line[data-k="${pos}"]`).forEach((l) => l.classList.add("highlight"));
    }
  }
  box.querySelectorAll("svg.lines").forEach((s) => s.classList.add("dimmed"));
  document.querySelectorAll(`.token[data-stack="${stack}"][data-pos="${pos}"]`)
    .forEach((t) => t.classList.add("highlight"));
}

function clearHighlight() {
  document.querySelectorAll(".highlight").forEach((n) => n.classList.remove("highlight"));
  document.querySelectorAll(".col-highlight").forEach((n) => n.classList.remove("col-highlight"));
  document.querySelectorAll(".dimmed").forEach((n) => n.classList.remove("dimmed"));
  document.querySelectorAll(".token").forEach((t) => { t.style.background = ""; });
}

// ---- the GNN view ----------------------------------------------------------------------
// Keys (senders j) on top, queries (receivers i) below, an edge j -> i per pair.
function bipartite(title, T, S, edges, queries, keys, cls) {
  const step = Math.max(14, Math.min(40, Math.floor(560 / Math.max(T, S))));
  const width = Math.max(T, S) * step + 40, height = 150;
  const fig = el("figure", {});
  fig.append(el("figcaption", {}, title));
  const svg = svgEl("svg", { class: cls, width, height, "data-edges": edges.length });
  const x = (i) => 20 + i * step + step / 2;
  for (const [n, m, w] of edges) {
    svg.append(svgEl("line", {
      x1: x(m), y1: 30, x2: x(n), y2: height - 30, stroke: w === null ? "#999" : "#2166ac",
      "stroke-width": w === null ? 0.8 : 0.5 + 3 * w, "stroke-opacity": w === null ? 0.6 : Math.max(0.15, w),
      "data-q": n, "data-k": m, "data-value": w === null ? "" : w,
    }));
  }
  keys.forEach((t, m) => {
    svg.append(svgEl("circle", { cx: x(m), cy: 30, r: 3.5, fill: "#1b9e77" }));
    svg.append(svgEl("text", { x: x(m), y: 16, "text-anchor": "middle" }, shown(t)));
  });
  queries.forEach((t, n) => {
    svg.append(svgEl("circle", { cx: x(n), cy: height - 30, r: 3.5, fill: "#d95f02" }));
    svg.append(svgEl("text", { x: x(n), y: height - 12, "text-anchor": "middle" }, shown(t)));
  });
  fig.append(svg);
  return fig;
}

function renderGraph() {
  const { a, queries, keys, heads } = current();
  const h = heads[0], W = a.weights[state.layer][h], allowed = a.allowed[state.layer][h];
  const threshold = Number($("threshold").value) || 0;
  const structure = [], learned = [];
  W.forEach((row, n) => row.forEach((w, m) => {
    if (allowed[n][m] !== "1") return;
    structure.push([n, m, null]);
    if (w >= threshold) learned.push([n, m, w]);
  }));
  $("graph-caption").textContent = `${a.stack} ${a.kind}-attention, layer ${state.layer}: ` +
    `the graph it attends along (${a.graphs[state.layer]}, with the padding and causal masks) ` +
    `and head ${h}'s learned attention as a weighted graph. Messages go from a key j (top, ` +
    "green) to a query i (bottom, orange).";
  const panels = el("div", { class: "panels" });
  panels.append(bipartite(`the layer's graph: ${structure.length} edges`, queries.length,
    keys.length, structure, queries, keys, "graph-structure"));
  panels.append(bipartite(`learned, A ≥ ${threshold}: ${learned.length} edges`, queries.length,
    keys.length, learned, queries, keys, "graph-learned"));
  $("graph").replaceChildren(panels);
}
