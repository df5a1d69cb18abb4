// The explorer's drawing helpers: elements, SVG, colour scales, numbers and tokens as text.

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

function fmt(v, digits) { return Number(v).toFixed(digits === undefined ? 3 : digits); }
