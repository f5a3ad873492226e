"""The live page served at `/`: one self-contained HTML document (inline CSS, JS and SVG; no
external resources), which fetches the `/api/*` JSON every two seconds and redraws its charts.
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Partita analytics</title>
<style>
  :root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --muted:#6b7280; --line:#e5e7eb;
          --active:#2563eb; --completed:#16a34a; --terminated:#9ca3af; --bad:#dc2626;
          --p50:#1e3a8a; --p95:#3b82f6; --p99:#bfdbfe; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
         background:var(--bg); color:var(--ink); }
  header { display:flex; align-items:baseline; gap:1rem; padding:1rem 1.5rem;
           background:var(--card); border-bottom:1px solid var(--line); }
  header h1 { font-size:1.2rem; margin:0; }
  #status { color:var(--muted); }
  #status.down { color:var(--bad); font-weight:600; }
  main { padding:1rem 1.5rem; display:grid; gap:1rem;
         grid-template-columns:repeat(auto-fit, minmax(440px, 1fr)); }
  .cards { grid-column:1/-1; display:grid; gap:1rem;
           grid-template-columns:repeat(auto-fit, minmax(150px, 1fr)); }
  .card, section { background:var(--card); border:1px solid var(--line); border-radius:8px;
                   padding:.8rem 1rem; }
  .card .n { font-size:1.8rem; font-weight:650; }
  .card .l { color:var(--muted); }
  section h2 { font-size:1rem; margin:0 0 .5rem; }
  section.wide { grid-column:1/-1; }
  svg { width:100%; display:block; }
  svg text { font-size:11px; fill:var(--ink); }
  svg .axis { stroke:var(--line); }
  .legend { display:flex; gap:1rem; color:var(--muted); font-size:12px; margin-bottom:.3rem; }
  .legend i { display:inline-block; width:10px; height:10px; border-radius:2px;
              margin-right:4px; vertical-align:-1px; }
  table { width:100%; border-collapse:collapse; font-size:13px; }
  th, td { text-align:left; padding:.3rem .5rem; border-bottom:1px solid var(--line); }
  th { color:var(--muted); font-weight:500; }
  td.num { text-align:right; font-variant-numeric:tabular-nums; }
  .state-active { color:var(--active); } .state-completed { color:var(--completed); }
  .state-terminated { color:var(--terminated); } .bad { color:var(--bad); }
  .empty { color:var(--muted); padding:.5rem 0; }
</style>
</head>
<body>
<header><h1>Partita analytics</h1><span id="status">connecting...</span></header>
<main>
  <div class="cards">
    <div class="card"><div class="n" id="c-active">-</div>
      <div class="l">active instances</div></div>
    <div class="card"><div class="n" id="c-completed">-</div>
      <div class="l">completed</div></div>
    <div class="card"><div class="n" id="c-terminated">-</div>
      <div class="l">terminated</div></div>
    <div class="card"><div class="n" id="c-incidents">-</div>
      <div class="l">open incidents</div></div>
    <div class="card"><div class="n" id="c-jobs">-</div>
      <div class="l">jobs completed, last minute</div></div>
  </div>
  <section>
    <h2>Instances per process</h2>
    <div class="legend"><span><i style="background:var(--active)"></i>active</span>
      <span><i style="background:var(--completed)"></i>completed</span>
      <span><i style="background:var(--terminated)"></i>terminated</span></div>
    <div id="processes"></div>
  </section>
  <section>
    <h2>Instances over the last 30 minutes (per 10 s)</h2>
    <div class="legend"><span><i style="background:var(--active)"></i>started</span>
      <span><i style="background:var(--completed)"></i>completed</span>
      <span><i style="background:var(--terminated)"></i>terminated</span></div>
    <div id="timeline"></div>
  </section>
  <section>
    <h2>Element durations (ms, activated to completed)</h2>
    <div class="legend"><span><i style="background:var(--p50)"></i>p50</span>
      <span><i style="background:var(--p95)"></i>p95</span>
      <span><i style="background:var(--p99)"></i>p99</span></div>
    <div id="elements"></div>
  </section>
  <section>
    <h2>Job latency (ms, created to completed) and throughput</h2>
    <div class="legend"><span><i style="background:var(--p50)"></i>p50</span>
      <span><i style="background:var(--p95)"></i>p95</span>
      <span><i style="background:var(--p99)"></i>p99</span></div>
    <div id="jobs"></div>
  </section>
  <section class="wide"><h2>Open incidents</h2><div id="incidents"></div></section>
  <section class="wide"><h2>Instances (active and recently ended)</h2>
    <div id="instances"></div></section>
</main>
<script>
"use strict";
const NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}
function svg(width, height) { return el("svg", {viewBox: `0 0 ${width} ${height}`}); }
function fmt(n) {
  if (n === null || n === undefined) return "-";
  if (n >= 10000) return (n / 1000).toFixed(n >= 100000 ? 0 : 1) + "k";
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}
function ms(n) {
  if (n === null || n === undefined) return "-";
  if (n >= 60000) return (n / 60000).toFixed(1) + " min";
  if (n >= 1000) return (n / 1000).toFixed(2) + " s";
  return Math.round(n) + " ms";
}
function when(t) { return t ? new Date(t).toLocaleTimeString() : "-"; }
function replace(id, node) { const box = document.getElementById(id); box.replaceChildren(node); }
function empty(text) {
  const d = document.createElement("div");
  d.className = "empty";
  d.textContent = text;
  return d;
}

function processBars(rows) {
  if (!rows.length) return empty("No process instances yet.");
  const label = 150, width = 560, bar = 12, gap = 10, height = rows.length * (3 * bar + gap) + 4;
  const max = Math.max(1, ...rows.flatMap(r => [r.active, r.completed, r.terminated]));
  const s = svg(width, height);
  rows.forEach((r, i) => {
    const y = i * (3 * bar + gap);
    s.append(el("text", {x: 0, y: y + bar * 1.9}, `${r.bpmnProcessId} v${r.version}`));
    [["active", "var(--active)"], ["completed", "var(--completed)"],
     ["terminated", "var(--terminated)"]].forEach(([key, color], j) => {
      const w = (width - label - 50) * r[key] / max;
      s.append(el("rect", {x: label, y: y + j * bar, width: Math.max(w, 1), height: bar - 2,
                           fill: color}));
      s.append(el("text", {x: label + w + 4, y: y + j * bar + bar - 3}, fmt(r[key])));
    });
  });
  return s;
}

function timelineChart(points) {
  const width = 560, height = 200, left = 36, bottom = 20, top = 8;
  const series = [["started", "var(--active)"], ["completed", "var(--completed)"],
                  ["terminated", "var(--terminated)"]];
  const max = Math.max(1, ...points.flatMap(p => series.map(([k]) => p[k])));
  const s = svg(width, height);
  const x = i => left + (width - left - 4) * i / Math.max(1, points.length - 1);
  const y = v => top + (height - top - bottom) * (1 - v / max);
  s.append(el("line", {x1: left, x2: width, y1: y(0), y2: y(0), class: "axis"}));
  s.append(el("line", {x1: left, x2: width, y1: y(max), y2: y(max), class: "axis"}));
  s.append(el("text", {x: 0, y: y(max) + 4}, fmt(max)));
  s.append(el("text", {x: 0, y: y(0) + 4}, "0"));
  if (points.length) {
    s.append(el("text", {x: left, y: height - 4}, when(points[0].t)));
    s.append(el("text", {x: width - 60, y: height - 4}, when(points[points.length - 1].t)));
  }
  for (const [key, color] of series) {
    const d = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`)
      .join("");
    s.append(el("path", {d, fill: "none", stroke: color, "stroke-width": 2}));
  }
  return s;
}

function percentileBars(rows, name) {
  rows = rows.filter(r => r.count > 0);
  if (!rows.length) return empty("Nothing measured yet.");
  rows.sort((a, b) => b.p99 - a.p99);
  rows = rows.slice(0, 15);
  const label = 210, width = 560, bar = 16, gap = 8, height = rows.length * (bar + gap);
  const max = Math.max(1, ...rows.map(r => r.p99));
  const s = svg(width, height);
  rows.forEach((r, i) => {
    const y = i * (bar + gap);
    s.append(el("text", {x: 0, y: y + bar - 4}, name(r)));
    const bars = [["p99", "var(--p99)"], ["p95", "var(--p95)"], ["p50", "var(--p50)"]];
    for (const [key, color] of bars) {
      const w = (width - label - 90) * r[key] / max;
      s.append(el("rect", {x: label, y, width: Math.max(w, 1), height: bar, fill: color}));
    }
    s.append(el("text", {x: label + (width - label - 90) * r.p99 / max + 4, y: y + bar - 4},
                `${ms(r.p50)} / ${ms(r.p99)}`));
  });
  return s;
}

function table(columns, rows, empty_text) {
  if (!rows.length) return empty(empty_text);
  const t = document.createElement("table");
  const head = t.createTHead().insertRow();
  for (const [title] of columns) {
    const th = document.createElement("th");
    th.textContent = title;
    head.append(th);
  }
  const body = t.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const [, value, cls] of columns) {
      const td = tr.insertCell();
      td.textContent = value(row);
      if (cls) td.className = typeof cls === "function" ? cls(row) : cls;
    }
  }
  return t;
}

// the page's own ?token= (see partita.analytics.web_token), sent on as a header
const token = new URLSearchParams(location.search).get("token");
const headers = token ? {Authorization: `Bearer ${token}`} : {};

async function json(path) {
  const response = await fetch(path, {cache: "no-store", headers});
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const [summary, processes, elements, jobs, incidents, instances, timeline] = await Promise.all([
      json("/api/summary"), json("/api/processes"), json("/api/elements"), json("/api/jobs"),
      json("/api/incidents"), json("/api/instances?limit=25"), json("/api/timeline")]);
    document.getElementById("c-active").textContent = fmt(summary.instances.active);
    document.getElementById("c-completed").textContent = fmt(summary.instances.completed);
    document.getElementById("c-terminated").textContent = fmt(summary.instances.terminated);
    const open = document.getElementById("c-incidents");
    open.textContent = fmt(summary.openIncidents);
    open.className = "n" + (summary.openIncidents ? " bad" : "");
    document.getElementById("c-jobs").textContent = fmt(summary.jobs.completedLastMinute);
    replace("processes", processBars(processes));
    replace("timeline", timelineChart(timeline));
    replace("elements", percentileBars(elements, r => `${r.bpmnProcessId} / ${r.elementId}`));
    const latencies = jobs.map(j => ({...j.latency, type: j.type, rate: j.completedLastMinute}));
    replace("jobs", percentileBars(latencies, r => `${r.type} (${fmt(r.rate)}/min)`));
    replace("incidents", table([
      ["incident", r => r.incidentKey], ["process", r => r.bpmnProcessId],
      ["instance", r => r.processInstanceKey], ["element", r => r.elementId],
      ["error", r => r.errorType, "bad"], ["message", r => r.errorMessage],
      ["since", r => when(r.created)]], incidents, "No open incidents."));
    replace("instances", table([
      ["instance", r => r.processInstanceKey], ["process", r => `${r.bpmnProcessId} v${r.version}`],
      ["state", r => r.state, r => "state-" + r.state], ["started", r => when(r.started)],
      ["ended", r => when(r.ended)], ["duration", r => ms(r.durationMs), "num"],
      ["incidents", r => r.incidents || "", r => r.incidents ? "num bad" : "num"]],
      instances, "No instances yet."));
    const age = summary.newestEvent ? Math.max(0, summary.now - summary.newestEvent) : null;
    status.className = "";
    status.textContent = `updated ${new Date().toLocaleTimeString()}` +
      (age === null ? ", no events yet" : `; newest event ${ms(age)} ago`);
  } catch (error) {
    status.className = "down";
    status.textContent = `cannot reach the analytics: ${error.message}`;
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
"""
