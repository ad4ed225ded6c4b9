// "Where these settings sit": the current mechanism, policy and ε against the curves measured for
// docs/choosing.md (served by /api/guide from the package's choosing-curves.json; nothing is computed here).
"use strict";

const guide = {data: null};

function guideFmt(v) { return v === null || v === undefined ? "not measured" : Number(v).toFixed(3); }

// index of the grid value nearest to x on a log scale (the grids double: 2, 4, 8, 16)
function guideNearest(grid, x) {
  let best = 0;
  grid.forEach((g, k) => { if (Math.abs(Math.log(g / x)) < Math.abs(Math.log(grid[best] / x))) best = k; });
  return best;
}

function guideRow(dl, key, value, id) {
  const dt = document.createElement("dt"), dd = document.createElement("dd");
  dt.textContent = key;
  dd.textContent = value;
  dd.id = id;
  dl.append(dt, dd);
}

function guideShown() {
  const box = document.getElementById("guide-box"), dl = document.getElementById("guide");
  const spark = document.getElementById("guide-spark");
  if (!guide.data || !box) return;
  dl.replaceChildren();
  spark.replaceChildren();
  const mech = document.getElementById("mechanism").value;
  const pol = document.getElementById("policy-box").hidden ? "all" : document.getElementById("policy").value;
  const eps = Number(document.getElementById("epsilon").value);
  // the playground sets no mechanism options, so only the sweep's rows without options can match
  const c = guide.data.curves.find((x) => x.mechanism === mech && x.policy === pol &&
                                          Object.keys(x.params).length === 0);
  box.dataset.found = c && eps > 0 ? "1" : "0";
  if (!c || !(eps > 0)) {
    guideRow(dl, "not in the guide", !(eps > 0) ? "ε is not a positive number" :
      `${mech} with policy ${pol} was not measured in the guide's sweep (it has: ` +
      [...new Set(guide.data.curves.filter((x) => !Object.keys(x.params).length)
        .map((x) => `${x.mechanism} / ${x.policy}`))].join(", ") + ")", "guide-missing");
    return;
  }
  const k = guideNearest(c.epsilon, eps);
  const grid = c.epsilon[k];
  guideRow(dl, "nearest measured ε", String(grid) + (grid === eps ? "" : ` (yours: ${eps}; measured: ` +
    c.epsilon.join(", ") + ")"), "guide-eps");
  guideRow(dl, pol === "tiered" ? "content-word retention outside entities" : "retention (all units)",
           guideFmt(c.retention[k]), "guide-retention");
  guideRow(dl, "attack success, all units (KNN / Bayes)", `${guideFmt(c.all_knn[k])} / ${guideFmt(c.all_bayes[k])}`,
           "guide-attack-all");
  // entity units: at the policy's entity ε (tiered) or at ε itself (all), nearest on the entity grid
  const entEps = pol === "tiered" ? Number(document.getElementById("entity-epsilon").value) : eps;
  if (entEps > 0) {
    const j = guideNearest(c.entity_epsilon, entEps);
    guideRow(dl, `attack success, entity units at entity ε ${c.entity_epsilon[j]} (KNN / Bayes)`,
             `${guideFmt(c.entity_knn[j])} / ${guideFmt(c.entity_bayes[j])}`, "guide-attack-entity");
  }
  // one row per classifier task of the sweep (sentiment on tweets, topic on newsgroups), against its clean accuracy
  Object.keys(guide.data.clean_accuracy).forEach((task) => {
    const acc = c.accuracy[task][k], data = (guide.data.tasks[task] || {}).dataset;
    guideRow(dl, `${task} accuracy${data ? " (" + data + ")" : ""}, clean ${guideFmt(guide.data.clean_accuracy[task])}`,
             acc === null ? "measured under policy tiered only" : guideFmt(acc), `guide-accuracy-${task}`);
  });
  lineChart(spark, {title: "measured retention against ε", spark: true, width: 220, height: 70, yMin: 0, yMax: 1,
                    mark: eps, series: [{name: "retention", points: c.epsilon.map((e, i) => [e, c.retention[i]])}]});
  const note = document.createElement("p");
  note.className = "note";
  note.textContent = `retention at ε = ${c.epsilon.join(", ")}; the dashed line is your ε` +
    (eps < c.epsilon[0] || eps > c.epsilon[c.epsilon.length - 1] ? " (outside the measured range: not drawn)" : "");
  spark.appendChild(note);
}

document.addEventListener("DOMContentLoaded", () => {
  fetch("/api/guide").then((r) => r.json()).then((d) => {
    guide.data = d;
    document.getElementById("guide-where").textContent = `Measured in the sweep of ${d.guide}.`;
    guideShown();
    document.body.dataset.guide = "1";
  }).catch(() => {
    document.getElementById("guide-where").textContent = "The guide's curves could not be loaded.";
  });
});
