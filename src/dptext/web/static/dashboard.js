// The proxy dashboard: polls dashboard/data (relative to this page) every 5 s; nothing else.
"use strict";

const $ = (id) => document.getElementById(id);

async function load() {
  const key = sessionStorage.getItem("dptext-key");
  const resp = await fetch("dashboard/data", {headers: key ? {authorization: `Bearer ${key}`} : {}});
  if (resp.status === 401 || resp.status === 403) {
    $("auth").hidden = false;
    throw {error: key ? "the key was refused" : "this dashboard needs an API key"};
  }
  const data = await resp.json();
  if (!resp.ok) throw data;
  $("auth").hidden = true;
  return data;
}

function fmt(v, digits) {
  return typeof v === "number" ? v.toFixed(digits) : (v === null || v === undefined ? "–" : String(v));
}

function render(data) {
  const dl = $("settings");
  dl.replaceChildren();
  for (const k of ["mode", "mechanism", "epsilon", "space", "upstream_model", "policy"]) {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = k;
    const v = (data.settings || {})[k];
    if (k === "policy") {  // the server sends null for the default policy: every unit is private
      dd.textContent = v === null || v === undefined ? "all (every unit private)" :
        typeof v === "object" ? [v.name, v.scope].filter(Boolean).join(": ") || JSON.stringify(v) : String(v);
    } else {
      dd.textContent = v !== null && typeof v === "object" ? JSON.stringify(v) : fmt(v, 2);
    }
    dd.id = `setting-${k}`;
    dl.append(dt, dd);
  }
  const tbody = $("keys").querySelector("tbody");
  tbody.replaceChildren();
  const keys = Object.keys(data.keys || {}).sort();
  for (const id of keys) {
    const k = data.keys[id];
    const tr = document.createElement("tr");
    tr.dataset.key = id;
    const lat = k.latency_ms || {};
    for (const v of [id, fmt(k.requests, 0), fmt(k.errors, 0), `${fmt(lat.p50, 1)} ms`, `${fmt(lat.p95, 1)} ms`,
                     fmt(k.epsilon_spent, 2)]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  const series = keys.filter((id) => (data.keys[id].epsilon_history || []).length)
    .map((id) => ({name: id, points: data.keys[id].epsilon_history.map(([t, e]) => [t, e])}));
  if (series.length) {
    lineChart($("epsilon-chart"), {title: "ε spent per key", xLabel: "time", yLabel: "ε spent", yMin: 0,
      series, xFormat: (t) => new Date(t * 1000).toLocaleTimeString([], {hour12: false}),
      yFormat: (v) => String(v)});
  } else {
    $("epsilon-chart").textContent = "no ε spent yet";
  }
  $("updated").textContent = `Updated ${new Date().toLocaleTimeString([], {hour12: false})}.`;
  document.body.dataset.loaded = String(Number(document.body.dataset.loaded || 0) + 1);
}

async function refresh() {
  try {
    render(await load());
    $("error").hidden = true;
  } catch (err) {
    $("error").textContent = err.error || (err.message ? `cannot load the data: ${err.message}` : String(err));
    $("error").hidden = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("auth").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem("dptext-key", $("key").value);
    $("key").value = "";
    refresh();
  });
  refresh();
  setInterval(refresh, 5000);
});
