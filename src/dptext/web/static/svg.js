// A small line chart in plain SVG, shared by the playground and the dashboard.
// lineChart(container, {series: [{name, points: [[x, y], ...]}], xLabel, yLabel, yMin, yMax,
//                       xFormat, yFormat, mark}) replaces the container's content with one <svg>.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(10));
  return out;
}

function lineChart(container, opts) {
  // opts.spark: a small chart (opts.width × opts.height) with no ticks or axis labels
  const W = opts.width || 560, H = opts.height || 240;
  const [L, R, T, B] = opts.spark ? [6, 6, 6, 6] : [52, 32, 12, 38];
  const pts = opts.series.flatMap((s) => s.points);
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  const y0 = opts.yMin !== undefined ? opts.yMin : Math.min(0, ...ys);
  const y1 = opts.yMax !== undefined ? opts.yMax : Math.max(...ys, y0 + 1e-9);
  const fx = (x) => L + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (W - L - R);
  const fy = (y) => H - B - (y1 > y0 ? (y - y0) / (y1 - y0) : 0.5) * (H - T - B);
  const xf = opts.xFormat || ((v) => String(v)), yf = opts.yFormat || ((v) => String(v));
  const svg = svgEl("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
                            "aria-label": opts.title || "chart"});
  for (const v of opts.spark ? [] : niceTicks(y0, y1, 4)) {
    svg.appendChild(svgEl("line", {x1: L, x2: W - R, y1: fy(v), y2: fy(v), class: "grid"}));
    svg.appendChild(svgEl("text", {x: L - 6, y: fy(v) + 4, "text-anchor": "end"}, yf(v)));
  }
  for (const v of opts.spark ? [] : opts.xTicks || niceTicks(x0, x1, 6)) {
    svg.appendChild(svgEl("text", {x: fx(v), y: H - B + 15, "text-anchor": "middle"}, xf(v)));
  }
  svg.appendChild(svgEl("line", {x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis"}));
  svg.appendChild(svgEl("line", {x1: L, x2: L, y1: T, y2: H - B, class: "axis"}));
  if (!opts.spark) {
    svg.appendChild(svgEl("text", {x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle"}, opts.xLabel || ""));
    svg.appendChild(svgEl("text", {x: 12, y: (T + H - B) / 2, "text-anchor": "middle",
                                   transform: `rotate(-90 12 ${(T + H - B) / 2})`}, opts.yLabel || ""));
  }
  if (opts.mark !== undefined && opts.mark >= x0 && opts.mark <= x1) {
    svg.appendChild(svgEl("line", {x1: fx(opts.mark), x2: fx(opts.mark), y1: T, y2: H - B, class: "mark"}));
  }
  opts.series.forEach((s, k) => {
    const cls = `series${k % 6}`;
    svg.appendChild(svgEl("polyline", {class: `line ${cls}`, "data-series": s.name,
                                       points: s.points.map((p) => `${fx(p[0])},${fy(p[1])}`).join(" ")}));
    for (const [x, y] of s.points) {
      const dot = svgEl("circle", {cx: fx(x), cy: fy(y), r: 3.5, class: `dot ${cls}`, "data-series": s.name,
                                   "data-x": x, "data-y": y});
      if (opts.spark) dot.setAttribute("r", 2.5);
      dot.appendChild(svgEl("title", {}, `${s.name}: ${xf(x)} → ${yf(y)}`));
      svg.appendChild(dot);
    }
  });
  container.replaceChildren(svg);
  if (opts.series.length > 1) {
    const legend = document.createElement("div");
    legend.className = "chart-legend";
    opts.series.forEach((s, k) => {
      const item = document.createElement("span");
      const sw = document.createElement("span");
      sw.className = `swatch series${k % 6}`;
      item.append(sw, s.name);
      legend.appendChild(item);
    });
    container.appendChild(legend);
  }
  return svg;
}
