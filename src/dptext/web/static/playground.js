// The playground page: talks to this server's /api/* only (the Content-Security-Policy forbids anything else).
"use strict";

const $ = (id) => document.getElementById(id);
const state = {meta: null, last: null, lastBody: null, rows: new Map(), active: null, generation: 0};

function pct(p) {
  // probabilities on screen: percent with two decimals, or "<0.01 %" for tiny ones
  if (p > 0 && p < 0.0001) return "<0.01 %";
  return (100 * p).toFixed(2) + " %";
}

async function api(path, body) {
  const init = body === undefined ? {} : {method: "POST", headers: {"content-type": "application/json"},
                                          body: JSON.stringify(body)};
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw {error: "the playground server does not answer (is `dptext playground` still running?)"};
  }
  let data;
  try {
    data = await resp.json();
  } catch (e) {
    throw {error: `the server answered ${resp.status} without a JSON body`};
  }
  if (!resp.ok) throw data;
  return data;
}

function showError(err) {
  const box = $("error");
  document.querySelectorAll(".invalid").forEach((el) => el.classList.remove("invalid"));
  if (!err) { box.hidden = true; box.textContent = ""; return; }
  box.textContent = err.error || String(err);
  box.hidden = false;
  const target = {epsilon: "epsilon", text: "text", mechanism: "mechanism", oov: "oov", space: "space",
                  seed: "seed", policy: "policy", entity_epsilon: "entity-epsilon"}[err.field];
  if (target) $(target).classList.add("invalid");
}

function busy(on) {
  $("busy").hidden = !on;
  $("perturb").disabled = on;
  $("run20").disabled = on;
}

function settings() {
  // ε as typed: a number, null when the box is empty, else the text itself (the server names what is wrong
  // with "NaN" or "abc"; JSON would turn NaN into null and the message into "ε is required")
  const raw = $("epsilon").value.trim();
  const eps = raw === "" ? null : (Number.isFinite(Number(raw)) ? Number(raw) : raw);
  const body = {mechanism: $("mechanism").value, epsilon: eps,
                space: $("space").value || null, oov: $("oov").value};
  if (!$("policy-box").hidden) {
    body.policy = $("policy").value;
    if (body.policy === "tiered") body.entity_epsilon = Number($("entity-epsilon").value);
  }
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  return body;
}

function option(select, value, label) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = label;
  select.appendChild(o);
}

function mechanismChanged() {
  const m = state.meta.mechanisms.find((x) => x.name === $("mechanism").value);
  $("space").options[0].textContent = `default (${m.default_space})`;
  $("space-note").textContent = m.description + (m.contextual ? " Rows depend on the context." : "");
}

// The preset whose settings the form holds now ("" = custom), and a line saying what it is.
function presetShown() {
  const pol = $("policy-box").hidden ? "all" : $("policy").value;
  const match = (state.meta.presets || []).find((p) => $("preset").querySelector(`option[value="${p.name}"]`) &&
    p.mechanism.mechanism === $("mechanism").value && Number(p.mechanism.epsilon) === Number($("epsilon").value) &&
    $("space").value === "" && p.policy.name === pol &&
    (p.policy.name !== "tiered" || Number(p.policy.entity_epsilon) === Number($("entity-epsilon").value)));
  $("preset").value = match ? match.name : "";
  $("preset-note").textContent = match ? `${match.summary}; charge per request ε = ${match.charge_per_request}`
    : "custom settings";
  if (typeof guideShown === "function") guideShown();  // guide.js: where these settings sit on the measured curves
}

function presetChosen() {
  const p = (state.meta.presets || []).find((x) => x.name === $("preset").value);
  if (!p) return presetShown();
  $("mechanism").value = p.mechanism.mechanism;
  $("space").value = "";
  $("epsilon").value = p.mechanism.epsilon;
  $("eps-slider").value = p.mechanism.epsilon;
  if (!$("policy-box").hidden) $("policy").value = p.policy.name;
  if (p.policy.entity_epsilon !== undefined) $("entity-epsilon").value = p.policy.entity_epsilon;
  $("entity-eps-box").hidden = $("policy").value !== "tiered";
  mechanismChanged();
  presetShown();
}

async function init() {
  state.meta = await api("/api/mechanisms");
  for (const m of state.meta.mechanisms) option($("mechanism"), m.name, `${m.name} (${m.default_space})`);
  $("mechanism").value = "rantext";
  option($("space"), "", "default");
  for (const s of state.meta.spaces) option($("space"), s, s);
  for (const o of state.meta.oov) option($("oov"), o, o);
  if (state.meta.policies) {
    for (const p of state.meta.policies) option($("policy"), p, p);
    $("policy-box").hidden = false;
  }
  for (const p of state.meta.presets || []) {
    // the playground sets mechanism, ε and policy only; a preset with mechanism options is CLI and proxy only
    if (Object.keys(p.mechanism.options).length === 0) option($("preset"), p.name, p.name);
  }
  mechanismChanged();
  presetShown();
  $("preset").addEventListener("change", presetChosen);
  for (const id of ["mechanism", "epsilon", "eps-slider", "policy", "entity-epsilon", "space"]) {
    $(id).addEventListener("input", presetShown);
    $(id).addEventListener("change", presetShown);
  }
  $("mechanism").addEventListener("change", mechanismChanged);
  $("eps-slider").addEventListener("input", () => { $("epsilon").value = $("eps-slider").value; });
  $("epsilon").addEventListener("input", () => { $("eps-slider").value = $("epsilon").value; });
  $("policy").addEventListener("change", () => { $("entity-eps-box").hidden = $("policy").value !== "tiered"; });
  $("controls").addEventListener("submit", (ev) => { ev.preventDefault(); perturb(); });
  $("run20").addEventListener("click", runTwenty);
  document.addEventListener("click", (ev) => { if (!ev.target.closest(".unit, #tooltip")) hideTip(); });
  document.body.dataset.ready = "1";
}

function unitSpan(u, i, side) {
  const s = document.createElement("span");
  s.className = `unit ${u.class}` + (u.sampled ? " sampled" : "");
  s.dataset.i = i;
  s.dataset.side = side;
  s.textContent = side === "original" ? u.original : (u.output === null ? u.original : u.output);
  s.addEventListener("mouseenter", () => showTip(i, s));
  s.addEventListener("click", (ev) => { ev.stopPropagation(); showTip(i, s); });
  return s;
}

function renderTexts(res) {
  for (const side of ["original", "perturbed"]) {
    const box = $(side);
    box.replaceChildren();
    res.units.forEach((u, i) => {
      box.appendChild(document.createTextNode(u.ws));
      box.appendChild(unitSpan(u, i, side));
    });
  }
}

function renderReport(rep) {
  const dl = $("report");
  dl.replaceChildren();
  const add = (k, v, id) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v;
    if (id) dd.id = id;
    dl.append(dt, dd);
  };
  const c = rep.claim;
  // ε is the mechanism's parameter; the proven loss of a unit is the worst case (for RANTEXT/CUSTEXT it is ε
  // within a candidate set, their bound across sets is ∞), and this text's largest is shown beside it
  add("claim", c.kind === "none" ? "no DP guarantee" :
      `${c.kind}, parameter ε = ${rep.epsilon}, proven worst case per unit ` +
      (typeof c.bound === "number" ? c.bound.toFixed(2) : c.bound), "rep-claim");
  add("scope", rep.scope, "rep-scope");
  if (rep.unit_epsilon_max !== null) {
    // Cape reports each unit's proven loss (at most the worst case); other mechanisms each unit's ε
    add(rep.unit_epsilon_is_proven_loss ? "largest proven loss of a unit in this text" : "largest per-unit ε",
        rep.unit_epsilon_max.toFixed(3), "rep-unit-eps");
  }
  const n = rep.counts;
  add("units", `${n.perturbed} perturbed, ${n.self} mapped to themselves, ${n.kept} kept, ${n.dropped} dropped`,
      "rep-counts");
  add("mechanism", `${rep.mechanism} on ${rep.space}`, "rep-mechanism");
  if (rep.policy) add("entity policy", `${rep.policy.name}: ${rep.policy.scope || ""}`, "rep-policy");
  add("technical scope", c.scope, "rep-technical");
  $("report-box").hidden = false;
}

async function perturb() {
  showError(null);
  hideTip();
  busy(true);
  const body = {...settings(), text: $("text").value};
  try {
    const res = await api("/api/perturb", body);
    state.last = res;
    state.lastBody = body;
    state.rows.clear();
    renderTexts(res);
    renderReport(res.privacy);
    $("runs-box").hidden = true;
    document.body.dataset.perturbed = String(Number(document.body.dataset.perturbed || 0) + 1);
    state.generation += 1;
    retention(body);
  } catch (err) {
    clearResults();  // old results under new settings would mislead
    showError(err);
  } finally {
    busy(false);
  }
}

function clearResults() {
  state.last = null;
  state.generation += 1;  // a retention curve still being computed for the old text is not drawn
  $("retention").replaceChildren();
  $("retention-note").textContent = "";
  delete $("retention-box").dataset.ready;
  $("original").replaceChildren();
  $("perturbed").replaceChildren();
  for (const id of ["report-box", "runs-box", "retention-box"]) $(id).hidden = true;
}

function hideTip() {
  $("tooltip").hidden = true;
  if (state.active) state.active.classList.remove("active");
  state.active = null;
}

async function showTip(i, el) {
  const u = state.last.units[i];
  if (state.active) state.active.classList.remove("active");
  state.active = el;
  el.classList.add("active");
  const tip = $("tooltip");
  const r = el.getBoundingClientRect();
  tip.style.left = `${window.scrollX + r.left}px`;
  tip.style.top = `${window.scrollY + r.bottom + 6}px`;
  $("tip-title").textContent = `“${u.original}” → ` + (u.output === null ? "dropped" : `“${u.output}”`);
  $("top5").replaceChildren();
  tip.dataset.i = i;
  tip.dataset.loaded = "0";
  tip.hidden = false;
  if (!u.sampled) {
    $("tip-note").textContent = u.class === "dropped" ? "dropped: not in the space's vocabulary" :
      u.reason === "digits" ? "a number: replaced by a uniform integer in 1..1000" : `kept unchanged (${u.reason})`;
    tip.dataset.loaded = "1";
    return;
  }
  $("tip-note").textContent = "loading Pr(y | x)…";
  let row = state.rows.get(i);
  if (!row) {
    const span = state.last.spans[u.span];
    try {
      row = await api("/api/transition", {...state.lastBody, text: undefined, epsilon: span.epsilon,
                                          context: span.text, position: u.pos, top: 5});
    } catch (err) {
      $("tip-note").textContent = err.error || String(err);
      return;
    }
    state.rows.set(i, row);
  }
  if (Number(tip.dataset.i) !== i) return;  // the pointer moved on meanwhile
  for (const t of row.top) {
    const li = document.createElement("li");
    li.dataset.unit = t.unit;
    li.dataset.prob = t.prob;
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = t.unit;
    const prob = document.createElement("span");
    prob.className = "prob";
    prob.textContent = pct(t.prob);
    li.append(name, prob);
    $("top5").appendChild(li);
  }
  $("tip-note").textContent = `Pr(y | x) at ε = ${row.epsilon}` + (row.contextual ? ", in this context" : "") +
    `; stays itself with ${pct(row.self_prob)}` + (row.note ? ` (${row.note})` : "");
  tip.dataset.loaded = "1";
}

async function runTwenty() {
  showError(null);
  busy(true);
  const body = {...settings(), text: $("text").value, n: 20};
  try {
    const res = await api("/api/runs", body);
    const tbody = $("runs").querySelector("tbody");
    tbody.replaceChildren();
    res.units.forEach((u, i) => {
      const tr = document.createElement("tr");
      tr.dataset.i = i;
      const unit = document.createElement("td");
      unit.textContent = u.original;
      const surv = document.createElement("td");
      surv.className = "num";
      surv.textContent = `${u.survived}/${res.n}`;
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.style.width = `${Math.round(60 * u.survived / res.n)}px`;
      surv.appendChild(bar);
      const outs = document.createElement("td");
      outs.textContent = u.outputs.map(([o, c]) => `${o} ×${c}`).join(", ") +
        (u.distinct > u.outputs.length ? `, … (${u.distinct} distinct)` : "");
      tr.append(unit, surv, outs);
      tbody.appendChild(tr);
    });
    $("runs-box").hidden = false;
    $("runs-box").dataset.runs = res.n;
  } catch (err) {
    showError(err);
  } finally {
    busy(false);
  }
}

async function retention(body) {
  const generation = state.generation;
  $("retention-note").textContent = "computing retention for ε = 1 … 16…";
  document.body.dataset.retentionPending = String(Number(document.body.dataset.retentionPending || 0) + 1);
  try {
    const res = await api("/api/retention", body);
    if (generation !== state.generation) return;  // the results it belongs to were cleared meanwhile
    lineChart($("retention"), {
      title: "expected retention against ε", xLabel: "ε", yLabel: "retention", yMin: 0, yMax: 1,
      xTicks: [1, 4, 8, 12, 16], yFormat: (v) => `${Math.round(100 * v)} %`, xFormat: (v) => String(v),
      mark: Number(body.epsilon),
      series: [{name: "retention", points: res.epsilons.map((e, k) => [e, res.retention[k]])}]});
    $("retention-note").textContent = `Expected share of the ${res.word_units} word units left unchanged ` +
      `(${res.method}); the dashed line is the current ε.` +
      (res.partial ? " Stopped early (time budget): the curve ends where shown." : "");
    $("retention-box").hidden = false;
    $("retention-box").dataset.ready = "1";
  } catch (err) {
    if (generation === state.generation) $("retention-note").textContent = err.error || String(err);
  } finally {
    document.body.dataset.retentionPending = String(Number(document.body.dataset.retentionPending) - 1);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  init().catch((err) => showError(err));
});
