// The explorer's drawing helpers: elements, SVG, colours and their scales (the legend beside
// each heatmap), the tooltip, numbers and tokens as text.

const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// A token as text: whitespace made visible.
function shown(token) {
  return String(token).replace(/ /g, "\u2423").replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5");
}

function blue(v) {
  const t = Math.max(0, Math.min(1, v));
  const mix = (a, b) => Math.round(a + (b - a) * t);
  return `rgb(${mix(255, 33)},${mix(255, 102)},${mix(255, 172)})`;
}

function diverging(v, max) {
  const t = max > 0 ? Math.max(-1, Math.min(1, v / max)) : 0;
  const mix = (a, b) => Math.round(255 + (b - 255) * Math.abs(t));
  return t >= 0 ? `rgb(${mix(0, 178)},${mix(0, 24)},${mix(0, 43)})`
    : `rgb(${mix(0, 33)},${mix(0, 102)},${mix(0, 172)})`;
}

// The hatching of a masked cell.
function hatch(id) {
  const pattern = svgEl("pattern", { id, width: 4, height: 4, patternUnits: "userSpaceOnUse",
    patternTransform: "rotate(45)" });
  pattern.append(svgEl("rect", { width: 4, height: 4, fill: "#eee" }));
  pattern.append(svgEl("line", { x1: 0, y1: 0, x2: 0, y2: 4, stroke: "#bbb", "stroke-width": 1.5 }));
  return pattern;
}

// A probability as a shade of blue over white (the lens and the predictions).
function shade(p) {
  const t = 0.6 * Math.max(0, Math.min(1, p));
  const mix = (b) => Math.round(255 + (b - 255) * t);
  return `rgb(${mix(33)},${mix(102)},${mix(172)})`;
}

function fmt(v, digits) { return Number(v).toFixed(digits === undefined ? 3 : digits); }

// A number as text with `digits` significant digits (3 unless told), no trailing zeros:
// 1, 0.25, 12.3, -0.00106.
function short(v, digits) { return String(Number(Number(v).toPrecision(digits || 3))); }

// The colour scale beside a heatmap: a bar from `min` to `max` painted with colour(t), t in
// [0, 1], its ends labelled with their values (and 0 inside a diverging scale), `label` the
// quantity. Upright (min at the bottom) with `top` and `height` aligning it with a heatmap's
// grid, or `across` (min on the left) beside a table. `masked`: a swatch for the cells the
// mask removed (a colour, or "hatch" as the attention heatmap draws them).
let scales = 0;
function colourScale({ name, label, min, max, colour, top = 0, height = 100, masked, across }) {
  const id = `scale-${++scales}`, bar = 12;
  const long = across ? 140 : Math.max(80, height), y0 = across ? 16 : Math.max(top, 22);
  const x0 = across ? 24 : 0.5;  // room for the first tick's label
  const svg = svgEl("svg", { class: "legend", "data-for": name, "data-min": min, "data-max": max,
    width: across ? long + 2 * x0 : 92, height: across ? 48 : y0 + long + (masked ? 32 : 8) });
  const gradient = svgEl("linearGradient", across ? { id } : { id, x1: 0, y1: 1, x2: 0, y2: 0 });
  for (let i = 0; i <= 20; i++) {
    gradient.append(svgEl("stop", { offset: i / 20, "stop-color": colour(i / 20) }));
  }
  const defs = svgEl("defs");
  defs.append(gradient);
  svg.append(defs);
  svg.append(svgEl("text", { class: "scale-label", x: x0 - 0.5, y: y0 - 8 }, label));
  svg.append(svgEl("rect", { class: "scale-bar", x: x0, y: y0, width: across ? long : bar,
    height: across ? bar : long, fill: `url(#${id})`, stroke: "#999", "stroke-width": 0.5 }));
  const at = (value) => (value - min) / (max - min || 1);  // 0 at min, 1 at max
  const ticks = min < 0 && max > 0 ? [min, 0, max] : [min, max];
  for (const value of ticks) {
    const text = svgEl("text", { class: "scale-tick", "data-value": value }, short(value));
    if (across) {
      const x = x0 + long * at(value);
      svg.append(svgEl("line", { x1: x, x2: x, y1: y0 + bar, y2: y0 + bar + 4, stroke: "#666" }));
      for (const [k, v] of Object.entries({ x, y: y0 + bar + 15, "text-anchor": "middle" })) {
        text.setAttribute(k, v);
      }
    } else {
      const y = y0 + long * (1 - at(value));
      svg.append(svgEl("line", { x1: bar, x2: bar + 4, y1: y, y2: y, stroke: "#666" }));
      text.setAttribute("x", bar + 6);
      text.setAttribute("y", y + 4);
    }
    svg.append(text);
  }
  if (masked) {
    const y = y0 + long + 12;
    if (masked === "hatch") defs.append(hatch(`${id}-hatch`));
    svg.append(svgEl("rect", { class: "scale-masked", x: 0.5, y, width: bar, height: bar,
      fill: masked === "hatch" ? `url(#${id}-hatch)` : masked, stroke: "#999", "stroke-width": 0.5 }));
    svg.append(svgEl("text", { x: bar + 6, y: y + 10 }, "masked"));
  }
  return svg;
}

// Beside one another: a heatmap (or table) and its colour scale.
function withScale(figure, scale) {
  const box = el("div", { class: "with-scale" });
  box.append(figure, scale);
  return box;
}

// The tooltip: describe(target, event) gives the text for the element under the pointer in
// `node` (null: none).
function hover(node, describe) {
  node.addEventListener("mousemove", (event) => {
    const tip = $("tooltip"), text = describe(event.target, event);
    if (!text) { tip.hidden = true; return; }
    tip.textContent = text;
    tip.hidden = false;
    const x = Math.min(event.clientX + 12, window.innerWidth - tip.offsetWidth - 4);
    const below = event.clientY + 14 + tip.offsetHeight <= window.innerHeight;  // else above
    tip.style.left = `${Math.max(0, x)}px`;
    const y = below ? event.clientY + 14 : Math.max(0, event.clientY - tip.offsetHeight - 8);
    tip.style.top = `${y}px`;
  });
  node.addEventListener("mouseleave", () => { $("tooltip").hidden = true; });
}
