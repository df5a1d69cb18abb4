// The explorer page: draws what glassformer.explore.data computed (plain JavaScript, SVG and
// canvas; no library, nothing fetched but the page's own /api/run). Every drawn number is kept
// on its element as a data attribute (data-value, data-row, data-col, data-id, data-prob).
// page.py joins draw.js, attention.js, readouts.js and this file inside one function scope.

const boot = JSON.parse(document.getElementById("boot").textContent);
const info = boot.info;
const state = { data: null, attn: 0, layer: 0, head: "0", view: "heatmap", position: 0, runs: 0 };

// The panels and what draws each. The whole page shows the first seven; a view (boot.view,
// glassformer.explore.views: one input in a notebook or a docs page) names the ones it shows.
const RENDER = {
  tokens: () => renderTokens(), attention: () => renderAttention(), graph: () => renderGraph(),
  residual: () => renderResidual(), lens: () => renderLens(),
  attribution: () => renderAttribution(), predictions: () => renderPredictions(),
  grid: () => renderGrid(), trace: () => renderTrace(),
};
const PANELS = boot.view ? boot.view.panels :
  ["tokens", "attention", "graph", "residual", "lens", "attribution", "predictions"];

// Draw those of `names` that are on show.
function render(...names) {
  for (const name of names) if (PANELS.includes(name)) RENDER[name]();
}

// ---- input and running ---------------------------------------------------------------------
function status(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

async function run() {
  const body = { text: $("text").value };
  if (info.needs_target && $("target").value) body.target = $("target").value;
  status("running\u2026");
  let response;
  try {
    response = await fetch("api/run", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Glassformer-Explorer": "1" },
      body: JSON.stringify(body),
    });
  } catch (err) {
    status(`the server did not answer (${err.message}): is glassformer explore still running?`, true);
    return;
  }
  const payload = await response.json().catch(() => ({}));  // a reply not from the explorer
  if (!response.ok) { status(payload.error || `error ${response.status}`, true); return; }
  show(payload);
}

function show(data) {
  state.data = data;
  state.position = data.position || 0;
  if (data.attention) attentionControls(data);
  $("views").hidden = false;
  if (data.tokens) {
    const counts = Object.entries(data.tokens).map(([s, t]) => `${t.tokens.length} ${s} tokens`);
    status(`${counts.join(", ")}`);
  }
  renderAll();
  state.runs += 1;
  document.body.dataset.runs = String(state.runs);
}

// The attention, layer and head choices of the data's attention.
function attentionControls(data) {
  const select = $("attn-select");
  select.replaceChildren(...data.attention.map((a, i) => el("option", { value: i },
    `${a.stack} ${a.kind}-attention`)));
  state.attn = Math.min(state.attn, data.attention.length - 1);
  select.value = state.attn;
  const a = data.attention[state.attn];
  $("layer-select").replaceChildren(...a.weights.map((_, l) =>
    el("option", { value: l }, `${l}`)));
  $("layer-select").value = state.layer;
  const heads = a.weights[0].map((_, h) => el("option", { value: h }, `${h}`));
  heads.push(el("option", { value: "all" }, "all heads"));
  $("head-select").replaceChildren(...heads);
  $("head-select").value = state.head;
}

function renderAll() {
  render(...PANELS);
}

// ---- tokens --------------------------------------------------------------------------------
function readoutStack() {
  const p = state.data.predictions || {};
  if (p.stack) return p.stack;
  return state.data.tokens.decoder ? "decoder" : "encoder";
}

function renderTokens() {
  const rows = Object.entries(state.data.tokens).map(([stack, t]) => {
    const row = el("div", { class: "token-row", "data-stack": stack });
    row.append(el("span", { class: "stack-name" }, stack));
    t.tokens.forEach((token, pos) => {
      const span = el("span", {
        class: "token", "data-stack": stack, "data-pos": pos, "data-id": t.ids[pos],
        "data-token": token, title: `position ${pos}, id ${t.ids[pos]}`,
      }, shown(token));
      span.append(el("sub", {}, String(t.ids[pos])));
      if (stack === readoutStack() && pos === state.position) span.classList.add("selected");
      span.addEventListener("mouseenter", () => highlight(stack, pos));
      span.addEventListener("mouseleave", clearHighlight);
      span.addEventListener("click", () => {
        if (stack !== readoutStack()) return;
        state.position = pos;
        render("tokens", "lens", "predictions");
      });
      row.append(span);
    });
    return row;
  });
  $("tokens").replaceChildren(...rows);
}

// ---- attention -----------------------------------------------------------------------------
function current() {
  const a = state.data.attention[state.attn];
  return {
    a, queries: state.data.tokens[a.stack].tokens, keys: state.data.tokens[a.keys].tokens,
    heads: state.head === "all" ? a.weights[state.layer].map((_, h) => h) : [Number(state.head)],
  };
}

// ---- wiring ----------------------------------------------------------------------------
function init() {
  const name = info.name ? `${info.name}: ` : "";
  const converted = info.converted_from ? `, converted from ${info.converted_from}` : "";
  const scores = { dot: ", scores xᵀx′ (no W_Q, W_K)", shared: ", scores xᵀUᵀUx′ (W_Q = W_K)" };
  $("model-info").textContent = `${name}${info.class} (${info.task}${converted}), ` +
    `${info.n_layer} layers × ${info.n_head} heads, d_model ${info.d_model}, ` +
    `max_len ${info.max_len} tokens${scores[info.attention_scores] || ""}`;
  if (info.needs_target) {
    $("target").hidden = false;
    $("target-label").hidden = false;
    $("text").previousElementSibling.textContent = "source";
  }
  $("attn-select").addEventListener("change", (e) => {
    state.attn = Number(e.target.value); render("attention", "graph");
  });
  $("layer-select").addEventListener("change", (e) => {
    state.layer = Number(e.target.value); render("attention", "graph");
  });
  $("head-select").addEventListener("change", (e) => {
    state.head = e.target.value; render("attention", "graph");
  });
  $("view-select").addEventListener("change", (e) => { state.view = e.target.value; renderAttention(); });
  $("threshold").addEventListener("input", () => render("graph"));
  if (boot.view) { showView(boot.view); return; }
  if (boot.mode === "exported") {
    $("text").value = boot.data.input.text;
    $("target").value = boot.data.input.target || "";
    for (const id of ["text", "target"]) $(id).readOnly = true;
    $("run").hidden = true;
    show(boot.data);
    status("an exported page: this one input, no server");
    return;
  }
  $("text").value = info.text || "";
  $("target").value = info.target || "";
  $("input-form").addEventListener("submit", (e) => { e.preventDefault(); run(); });
  $("text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); run(); }
  });
  if (info.text) run();
}

// A view: the panels it names and nothing else (no header, no input), starting at its layer
// and head; it tells the page around it (a notebook's output, a docs page) its height.
function showView(view) {
  document.body.classList.add("view");  // explorer.css hides the header and the input
  for (const section of document.querySelectorAll("#views > section")) {
    section.hidden = !PANELS.includes(section.id.replace(/-view$/, ""));
  }
  state.attn = view.attn || 0;
  state.layer = view.layer || 0;
  state.head = String(view.head || 0);
  show(boot.data);
  const height = () => {
    if (window.parent === window) return;
    const h = Math.ceil(document.documentElement.getBoundingClientRect().height);
    window.parent.postMessage({ glassformerView: view.id, height: h }, "*");
  };
  new ResizeObserver(height).observe(document.documentElement);
  window.addEventListener("message", (e) => {
    if (e.data === "glassformer-view-height") height();  // the page around asks again
  });
  height();
}

init();
