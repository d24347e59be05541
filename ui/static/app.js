// toolhub dashboard: reads toolhub's JSON APIs (same origin) every few
// seconds and draws them. No framework, no build step; data goes into the
// page only through textContent and SVG attributes, never as HTML.
"use strict";

(function () {
  const KEY = "toolhub.apiKey";
  const REFRESH = Number(document.body.dataset.refreshMs) || 2000;
  const SVGNS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#db2777", "#65a30d", "#7c3aed", "#475569"];

  // ---- small DOM helpers
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const $ = (s) => document.querySelector(s);
  // A vendor's colour comes from its name alone (FNV-1a → hue), so it is the
  // same in every chart, on every refresh, whatever other vendors there are.
  function vendorColor(v) {
    let h = 2166136261;
    for (const ch of String(v)) { h ^= ch.codePointAt(0); h = Math.imul(h, 16777619) >>> 0; }
    // FNV alone leaves similar names on similar hues: mix the bits first.
    h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b); h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35); h ^= h >>> 16; h >>>= 0;
    return "hsl(" + (h % 360) + ", 70%, " + (36 + ((h >>> 9) % 3) * 6) + "%)";
  }
  function badge(text, kind) { return el("span", { class: "badge b-" + kind, text: text }); }
  function fill(tbody, rows, cols, empty) {
    tbody.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "empty", colspan: cols, text: empty }))]));
  }
  function ago(iso) {
    const t = Date.parse(iso || "");
    if (!isFinite(t) || t < Date.UTC(2000, 0, 1)) return ""; // unset (Go's zero time)
    const s = Math.round((Date.now() - t) / 1000);
    if (!isFinite(s)) return "";
    if (s < 1) return "just now";
    if (s < 90) return s + " s ago";
    if (s < 5400) return Math.round(s / 60) + " min ago";
    return Math.round(s / 3600) + " h ago";
  }
  const clock = (d) => d.toLocaleTimeString([], { hour12: false });
  const pct = (x) => (x * 100).toFixed(x && x < 0.1 ? 1 : 0) + "%";

  // ---- money: report amounts are decimal strings with 6 decimals ("0.001000")
  function micros(s) {
    if (typeof s === "number") return Math.round(s * 1e6);
    if (!s) return 0;
    const neg = s.startsWith("-");
    const [i, f = ""] = (neg ? s.slice(1) : s).split(".");
    const v = Number(i) * 1e6 + Number((f + "000000").slice(0, 6));
    return neg ? -v : v;
  }
  function money(m, cur) {
    const v = m / 1e6;
    const digits = Math.abs(v) >= 100 ? 2 : Math.abs(v) >= 1 ? 3 : 4;
    return v.toFixed(digits) + (cur ? " " + cur : "");
  }

  // ---- fetching, with the key and a clear error per status
  function apiKey() { try { return localStorage.getItem(KEY) || ""; } catch (e) { return ""; } }
  class FetchError extends Error {
    constructor(status, message, key) { super(message); this.status = status; this.key = key; }
  }
  // staleKey: a 401 answered a request sent with a key that has changed
  // since (the operator entered a new one while it was in flight); asking
  // for a key again would stop the polling the new key just resumed.
  function staleKey(e) { return e.key !== undefined && e.key !== apiKey(); }
  async function getJSON(url, needs) {
    const headers = { Accept: "application/json" };
    const k = apiKey();
    if (k) headers.Authorization = "Bearer " + k;
    let res;
    try {
      res = await fetch(url, { headers, cache: "no-store", credentials: "same-origin" });
    } catch (e) {
      throw new FetchError(0, "toolhub is unreachable (" + e.message + ")");
    }
    let body = null;
    try { body = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) {
      const msg = body && body.error && body.error.message ? body.error.message : res.statusText;
      if (res.status === 401 || res.status === 403) {
        const which = res.status === 403 && needs ? " (this panel: " + needs + ")" : "";
        throw new FetchError(res.status, res.status + ": needs an operator or finance key" + which + (k ? " — the saved key is refused: " + msg : " — enter one above"), k);
      }
      throw new FetchError(res.status, res.status + ": " + msg);
    }
    if (body === null) throw new FetchError(res.status, "not JSON from " + url);
    return body;
  }

  // send makes a change (operator key): POST with a JSON body; the answer's
  // error message is thrown as a FetchError.
  async function send(method, url, body) {
    const headers = { Accept: "application/json", "Content-Type": "application/json" };
    const k = apiKey();
    if (k) headers.Authorization = "Bearer " + k;
    let res;
    try {
      res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store", credentials: "same-origin" });
    } catch (e) {
      throw new FetchError(0, "toolhub is unreachable (" + e.message + ")");
    }
    let out = null;
    try { out = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) {
      const msg = out && out.error && out.error.message ? out.error.message : res.statusText;
      if (res.status === 401 && k === apiKey()) needKey();
      throw new FetchError(res.status, res.status + ": " + msg, k);
    }
    return out;
  }
  // act runs one operator action from a button and says how it went.
  async function act(what, method, url, body) {
    const msg = $("#actionmsg");
    msg.dataset.result = "running"; msg.textContent = what + "…";
    try {
      await send(method, url, body);
      msg.dataset.result = "ok"; msg.textContent = what + ": done";
    } catch (e) {
      msg.dataset.result = "error"; msg.textContent = what + ": " + e.message;
    }
    tick();
  }
  function button(text, attrs, onclick) {
    const b = el("button", Object.assign({ type: "button", text }, attrs));
    b.addEventListener("click", onclick);
    return b;
  }

  // ---- panels: each fetches, renders, and shows stale/error state on its own
  const panels = [];
  function panel(id, url, needs, render) {
    const p = { id, url, needs, render, node: document.getElementById(id), ok: false, last: null, data: null, error: null };
    panels.push(p);
    return p;
  }
  async function refreshPanel(p) {
    const status = p.node.querySelector(".status");
    try {
      p.data = await getJSON(typeof p.url === "function" ? p.url() : p.url, p.needs);
      p.render(p.data);
      p.ok = true; p.error = null; p.last = new Date();
      p.node.classList.remove("stale", "failed");
      p.node.dataset.state = "ok";
      status.textContent = "";
    } catch (e) {
      p.ok = false; p.error = e;
      const auth = e.status === 401 || e.status === 403;
      if (e.status === 401 && !staleKey(e)) needKey();
      p.node.classList.toggle("stale", p.last !== null);
      p.node.classList.toggle("failed", p.last === null);
      p.node.dataset.state = auth ? "forbidden" : "error";
      status.textContent = (p.last ? "Stale — showing data from " + clock(p.last) + ". " : "No data. ") + e.message;
      if (p.last === null) p.node.querySelector(".body tbody") && emptyOnError(p);
    }
  }
  function emptyOnError(p) {
    const tb = p.node.querySelector("tbody");
    const cols = p.node.querySelectorAll("thead th").length || 1;
    fill(tb, [], cols, "—");
  }

  // ---- vendors
  const breakerKind = { closed: "ok", open: "bad", half_open: "warn" };
  const stateKind = { ready: "ok", connecting: "info", unavailable: "bad", stopped: "off" };
  panel("p-vendors", "/v1/vendors", "an operator or vendor key", (d) => {
    const vs = d.vendors || [];
    fill($("#vendors tbody"), vs.map((v) => {
      const g = v.governance || {};
      const br = (g.breaker && g.breaker.state) || "closed";
      const ramp = g.ramp ? g.ramp.percent : 100;
      const bar = el("span", { class: "ramp" + (ramp < 100 ? " partial" : "") }, el("i"));
      bar.firstChild.style.width = Math.max(0, Math.min(100, ramp)) + "%";
      const probe = g.last_probe;
      const breakerCell = el("td", {}, badge(br.replace("_", "-"), breakerKind[br] || "off"));
      if (g.breaker && g.breaker.retry_in_s) breakerCell.append(el("span", { class: "muted", text: " retry in " + g.breaker.retry_in_s.toFixed(1) + " s" }));
      const row = el("tr", { "data-vendor": v.id, "data-breaker": br },
        el("td", {}, el("strong", { text: v.id }), v.server ? el("div", { class: "muted mono", text: v.server }) : null),
        el("td", {}, badge(v.state || "unknown", stateKind[v.state] || "off")),
        el("td", { text: v.transport || "" }),
        el("td", { class: "num", text: String(v.tools || 0) }),
        breakerCell,
        el("td", {}, bar, el("span", { text: Math.round(ramp) + "%" })),
        el("td", {}, g.ejected ? badge("ejected", "bad") : el("span", { class: "muted", text: "no" })),
        el("td", {}, probe ? badge(probe.ok ? "ok" : "failed", probe.ok ? "ok" : "bad") : el("span", { class: "muted", text: "—" }),
          probe ? el("span", { class: "muted", text: " " + ago(probe.at), title: probe.error || "" }) : null),
        el("td", { class: "num", text: String((g.usage && g.usage.in_flight) || 0) }),
        el("td", { class: "err", text: v.last_error || "", title: v.last_error_at ? "at " + v.last_error_at : "" }));
      return row;
    }), 10, "no vendors");
    summary.vendors = vs;
  });

  // ---- capabilities
  const modeKind = { normal: "ok", alert: "warn", degraded: "bad", recovering: "info", off: "off" };
  panel("p-capabilities", "/v1/capabilities", "", (d) => {
    const cs = d.capabilities || [];
    fill($("#capabilities tbody"), cs.map((c) => {
      const w = c.window || {};
      return el("tr", { "data-capability": c.capability, "data-mode": c.mode },
        el("td", {}, el("strong", { text: c.capability }), c.core ? el("span", { class: "muted", text: " core" }) : null),
        el("td", {}, badge(c.mode || "normal", modeKind[c.mode] || "off")),
        el("td", { text: c.measured || "" }),
        el("td", { text: c.pinned || (c.off ? "off" : "") }),
        el("td", { class: "num", text: String(w.samples || 0) }),
        el("td", { class: "num", text: pct(w.error_rate || 0) }),
        el("td", { class: "num", text: pct(w.timeout_share || 0) }),
        el("td", { class: "num", text: (w.mean_latency_ms || 0).toFixed(0) + " ms" }),
        el("td", { class: "muted", text: ago(c.since) }),
        pinCell(c));
    }), 10, "no capabilities");
    summary.capabilities = cs;
  });

  const MODES = ["normal", "alert", "degraded", "recovering", "off"];
  const pinChoice = {}; // capability → mode chosen in its select, kept across refreshes
  function pinCell(c) {
    const sel = el("select", { "data-pin-select": c.capability, "aria-label": "mode to pin " + c.capability },
      ...MODES.map((m) => el("option", { value: m, text: m })));
    sel.value = pinChoice[c.capability] || c.pinned || "degraded";
    sel.addEventListener("change", () => { pinChoice[c.capability] = sel.value; });
    const td = el("td", { class: "actions" }, sel,
      button("Pin", { "data-pin": c.capability }, () => act("pin " + c.capability + " " + sel.value, "POST", "/v1/admin/capabilities/" + encodeURIComponent(c.capability) + "/mode", { mode: sel.value })));
    if (c.pinned || c.off) {
      td.append(button("Unpin", { "data-unpin": c.capability }, () => act("unpin " + c.capability, "POST", "/v1/admin/capabilities/" + encodeURIComponent(c.capability) + "/mode", { mode: "" })));
    }
    return td;
  }

  // ---- pending vendor changes: approve or reject
  panel("p-pending", "/v1/admin/vendors/pending", "an operator key", (d) => {
    const ps = d.pending || [];
    fill($("#pending tbody"), ps.map((p) => el("tr", { "data-pending": p.vendor },
      el("td", {}, el("strong", { text: p.vendor })),
      el("td", { class: "err" }, (p.breaking || []).join("; "),
        // Tool pins: what a held tool would now say, field by field.
        ...(p.held || []).flatMap((h) => (h.diff || []).map((f) => el("div", { class: "mono", "data-held": h.tool + " " + f.field },
          h.tool + " " + f.field + ": " + (f.words || ((f.old || "∅") + " → " + (f.new || "∅"))))))),
      el("td", { class: "mono", text: (p.tools || []).join(", ") }),
      el("td", { class: "muted", text: p.submitted_by ? (p.submitted_by.vendor || p.submitted_by.role || "") : "" }),
      el("td", { class: "muted", text: ago(p.submitted_at) }),
      el("td", { class: "actions" },
        button("Approve", { "data-approve": p.vendor }, () => act("approve " + p.vendor, "POST", "/v1/admin/vendors/" + encodeURIComponent(p.vendor) + "/approve")),
        button("Reject", { "data-reject": p.vendor }, () => act("reject " + p.vendor, "POST", "/v1/admin/vendors/" + encodeURIComponent(p.vendor) + "/reject"))))), 6, "no changes wait for approval");
  });

  // ---- keys (never their secrets: the API has none to give)
  panel("p-keys", "/v1/admin/keys", "an operator key", (d) => {
    const ks = d.keys || [];
    fill($("#keys tbody"), ks.map((k) => {
      const state = k.revoked_at ? "revoked" : k.expires_at && Date.parse(k.expires_at) <= Date.now() ? "expired" : "active";
      return el("tr", { "data-key": k.id, "data-key-state": state },
        el("td", { class: "mono", text: k.id }), el("td", { text: k.name || "" }), el("td", { text: k.role }),
        el("td", { text: k.tenant || k.vendor || "" }),
        el("td", {}, badge(state, state === "active" ? "ok" : "off")),
        el("td", { class: "muted", text: ago(k.created_at) }),
        el("td", { class: "muted", text: k.expires_at ? k.expires_at.slice(0, 10) : "never" }));
    }), 7, "no keys");
  });

  // ---- budgets with what was spent this period
  panel("p-budgets", "/v1/admin/budgets", "an operator or finance key", (d) => {
    const bs = d.budgets || [];
    fill($("#budgets tbody"), bs.map((b) => {
      const lim = micros(b.limit), sp = micros(b.spent), share = lim > 0 ? sp / lim : 0;
      const bar = el("span", { class: "ramp" + (share >= 1 ? " over" : share >= 0.8 ? " partial" : "") }, el("i"));
      bar.firstChild.style.width = Math.min(100, share * 100) + "%";
      return el("tr", { "data-budget": b.tenant + "/" + (b.vendor || "*") + "/" + b.period, "data-spent": b.spent, "data-over": String(share >= 1) },
        el("td", { text: b.tenant }), el("td", { text: b.vendor || "all" }), el("td", { text: b.period + " " + b.period_id }),
        el("td", { class: "num", text: money(sp, b.currency) }), el("td", { class: "num", text: money(lim, b.currency) }),
        el("td", {}, bar, el("span", { text: pct(share) })),
        el("td", { class: "err", text: b.error || "" }));
    }), 7, "no budgets configured");
  });

  // ---- per-vendor latency and error rate over time (from the decision log)
  panel("p-series", "api/series", "an operator key", (d) => {
    const vs = Object.keys(d.vendors || {}).sort();
    lines($("#chart-latency"), d.vendors || {}, vs, (p) => p.attempts ? p.mean_ms : null, (v) => v.toFixed(0) + " ms", "mean latency per vendor");
    lines($("#chart-errors"), d.vendors || {}, vs, (p) => p.attempts ? p.errors / p.attempts : null, (v) => pct(v), "error rate per vendor");
  });
  // Lines over time: one per vendor, its colour; gaps where it had no attempt.
  function lines(box, data, vendors, y, fmt, label) {
    if (!vendors.length) { box.replaceChildren(el("p", { class: "muted", text: "no attempts in the last minutes" })); return; }
    const W = 560, H = 170, left = 48, bottom = 18, top = 8;
    const n = Math.max(...vendors.map((v) => data[v].length), 2);
    let max = 0;
    for (const v of vendors) for (const p of data[v]) { const yv = y(p); if (yv !== null && yv > max) max = yv; }
    if (max <= 0) max = 1;
    const X = (i) => left + (W - left - 4) * i / (n - 1), Y = (v) => H - bottom - (H - bottom - top) * v / max;
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
    s.append(svg("line", { x1: left, x2: W, y1: Y(0), y2: Y(0), stroke: "#cbd5e1" }));
    s.append(svg("text", { x: left - 6, y: Y(max) + 4, "text-anchor": "end", class: "muted" }, fmt(max)));
    s.append(svg("text", { x: left - 6, y: Y(0), "text-anchor": "end", class: "muted" }, fmt(0)));
    for (const v of vendors) {
      let dpath = "", pen = false;
      data[v].forEach((p, i) => {
        const yv = y(p);
        if (yv === null) { pen = false; return; }
        dpath += (pen ? " L" : " M") + X(i).toFixed(1) + " " + Y(yv).toFixed(1);
        pen = true;
      });
      const path = svg("path", { d: dpath.trim() || "M0 0", fill: "none", stroke: vendorColor(v), "stroke-width": 2, "data-series-vendor": v });
      path.append(svg("title", {}, v));
      s.append(path);
      // single points show as dots
      data[v].forEach((p, i) => { const yv = y(p); if (yv !== null) s.append(svg("circle", { cx: X(i), cy: Y(yv), r: 2, fill: vendorColor(v) })); });
    }
    const legend = el("div", { class: "legend" }, ...vendors.map((v) => {
      const sw = el("i"); sw.style.background = vendorColor(v);
      return el("span", { "data-legend-vendor": v, "data-color": vendorColor(v) }, sw, v);
    }));
    box.replaceChildren(s, legend);
  }

  // ---- usage
  const monthInput = $("#month");
  const now = new Date();
  monthInput.value = now.getUTCFullYear() + "-" + String(now.getUTCMonth() + 1).padStart(2, "0");
  monthInput.addEventListener("change", () => refreshPanel(usagePanel));
  const usagePanel = panel("p-usage", () => "/v1/reports/usage?from=" + encodeURIComponent(monthInput.value) + "&group_by=tenant,vendor,day&format=json", "a finance or operator key", (d) => {
    const rows = d.rows || [];
    const cur = (rows[0] && rows[0].currency) || "";
    const byTenant = new Map(), byVendor = new Map(), byPair = new Map(), byDay = new Map();
    const vendors = [];
    for (const r of rows) {
      const t = r.tenant || "—", v = r.vendor || "—", day = r.period || "";
      add(byTenant, t, micros(r.tenant_cost));
      add(byVendor, v, micros(r.vendor_cost));
      if (!vendors.includes(v)) vendors.push(v);
      const k = t + "\u0000" + v;
      const p = byPair.get(k) || { tenant: t, vendor: v, calls: 0, failed: 0, cached: 0, attempts: 0, tc: 0, vc: 0 };
      p.calls += r.calls || 0; p.failed += r.failed || 0; p.cached += r.cached || 0; p.attempts += r.attempts || 0;
      p.tc += micros(r.tenant_cost); p.vc += micros(r.vendor_cost);
      byPair.set(k, p);
      const dm = byDay.get(day) || new Map();
      add(dm, v, r.calls || 0);
      byDay.set(day, dm);
    }
    vendors.sort();
    const color = vendorColor;
    hbars($("#chart-tenants"), [...byTenant].sort((a, b) => b[1] - a[1]), (m) => money(m, cur), () => PALETTE[0]);
    hbars($("#chart-vendors"), [...byVendor].sort((a, b) => b[1] - a[1]), (m) => money(m, cur), color);
    dayBars($("#chart-days"), byDay, vendors, color);
    const pairs = [...byPair.values()].sort((a, b) => a.tenant.localeCompare(b.tenant) || a.vendor.localeCompare(b.vendor));
    fill($("#usage tbody"), pairs.map((p) => el("tr", { "data-tenant": p.tenant, "data-vendor": p.vendor },
      el("td", { text: p.tenant }), el("td", { text: p.vendor }),
      el("td", { class: "num", text: String(p.calls) }), el("td", { class: "num", text: String(p.failed) }),
      el("td", { class: "num", text: String(p.cached) }), el("td", { class: "num", text: String(p.attempts) }),
      el("td", { class: "num", text: money(p.tc, cur) }), el("td", { class: "num", text: money(p.vc, cur) }),
      el("td", { class: "num", text: money(p.tc - p.vc, cur) }))), 9, "no usage in " + monthInput.value);
    summary.usage = { calls: pairs.reduce((s, p) => s + p.calls, 0), charged: pairs.reduce((s, p) => s + p.tc, 0), cur };
  });
  function add(m, k, v) { m.set(k, (m.get(k) || 0) + v); }

  // Horizontal bars: one row per [label, value].
  function hbars(box, items, fmt, color) {
    if (!items.length) { box.replaceChildren(el("p", { class: "muted", text: "no data" })); return; }
    const W = 420, row = 24, labelW = 96, valueW = 96, H = items.length * row + 4;
    const max = Math.max(...items.map((i) => i[1]), 1);
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": box.previousSibling ? box.previousSibling.textContent : "chart" });
    items.forEach(([label, v], i) => {
      const y = i * row + 2, w = Math.max(v > 0 ? 2 : 0, (W - labelW - valueW) * v / max);
      s.append(svg("text", { x: labelW - 6, y: y + 14, "text-anchor": "end" }, label));
      s.append(svg("rect", { x: labelW, y: y + 3, width: w, height: row - 8, rx: 2, fill: color(label) }));
      s.append(svg("text", { x: labelW + w + 6, y: y + 14, class: "muted" }, fmt(v)));
    });
    box.replaceChildren(s);
  }

  // Stacked columns: calls per day, one colour per vendor.
  function dayBars(box, byDay, vendors, color) {
    const days = [...byDay.keys()].filter(Boolean).sort();
    if (!days.length) { box.replaceChildren(el("p", { class: "muted", text: "no calls" })); return; }
    const W = 560, H = 190, left = 34, bottom = 20, top = 8;
    const totals = days.map((d) => [...byDay.get(d).values()].reduce((a, b) => a + b, 0));
    const max = Math.max(...totals, 1);
    const slot = (W - left) / Math.max(days.length, 7), bw = Math.min(40, slot * 0.7);
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "calls per day by vendor" });
    const y = (v) => H - bottom - (H - bottom - top) * v / max;
    s.append(svg("line", { x1: left, x2: W, y1: y(0), y2: y(0), stroke: "#cbd5e1" }));
    s.append(svg("text", { x: left - 6, y: y(max) + 4, "text-anchor": "end", class: "muted" }, String(max)));
    s.append(svg("text", { x: left - 6, y: y(0), "text-anchor": "end", class: "muted" }, "0"));
    days.forEach((d, i) => {
      const x = left + i * slot + (slot - bw) / 2;
      let acc = 0;
      for (const v of vendors) {
        const n = byDay.get(d).get(v) || 0;
        if (!n) continue;
        const r = svg("rect", { x, y: y(acc + n), width: bw, height: y(acc) - y(acc + n), fill: color(v) });
        r.append(svg("title", {}, `${d} ${v}: ${n} calls`));
        s.append(r);
        acc += n;
      }
      s.append(svg("text", { x: x + bw / 2, y: H - 6, "text-anchor": "middle", class: "muted" }, d.slice(5)));
    });
    const legend = el("div", { class: "legend" }, ...vendors.map((v) => {
      const sw = el("i"); sw.style.background = color(v);
      return el("span", { "data-legend-vendor": v, "data-color": color(v) }, sw, v);
    }));
    box.replaceChildren(s, legend);
  }

  // ---- decisions
  const outcomeKind = (o) => (o === "ok" ? "ok" : ["fallback", "cached", "stale", "queued"].includes(o) ? "warn" : "bad");
  panel("p-decisions", "api/decisions?limit=50", "an operator key", (d) => {
    const ls = d.decisions || [];
    fill($("#decisions tbody"), ls.map((c) => {
      const atts = (c.attempts || []).map((a) => a.vendor + ":" + a.outcome).join(" → ");
      const flags = ["fallback", "cached", "stale", "queued"].filter((f) => c[f]);
      return el("tr", { "data-call": c.call_id || "" },
        el("td", { class: "mono", text: c.time ? clock(new Date(c.time)) : "" }),
        el("td", { text: c.tenant || "" }),
        el("td", { class: "mono", text: c.tool || "" }),
        el("td", { text: c.vendor || "" }),
        el("td", {}, badge(c.outcome || (c.code ? c.code : "ok"), outcomeKind(c.outcome || "ok")), c.error ? el("div", { class: "err", text: c.error }) : null),
        el("td", { class: "mono", text: atts }),
        el("td", { class: "num", text: (c.latency_ms || 0).toFixed(1) + " ms" }),
        el("td", { class: "muted", text: flags.join(", ") }));
    }), 8, "no calls recorded yet");
  });

  // ---- summary cards and the live indicator
  const summary = {};
  function card(n, label, bad, id) { return el("div", { class: "card" + (bad ? " bad" : ""), "data-card": id }, el("div", { class: "n", text: String(n) }), el("div", { class: "l", text: label })); }
  // A vendor takes traffic only when connected, not ejected by its health
  // probe and with its breaker not open.
  function isReady(v) {
    const g = v.governance || {};
    return v.state === "ready" && !g.ejected && !(g.breaker && g.breaker.state === "open");
  }
  function renderSummary() {
    const cards = [];
    if (summary.vendors) {
      const vs = summary.vendors;
      const ready = vs.filter(isReady).length;
      cards.push(card(ready + " / " + vs.length, "vendors ready", ready < vs.length, "ready"));
      const open = vs.filter((v) => v.governance && v.governance.breaker && v.governance.breaker.state !== "closed").length;
      cards.push(card(open, "breakers not closed", open > 0));
      const ej = vs.filter((v) => v.governance && v.governance.ejected).length;
      cards.push(card(ej, "vendors ejected", ej > 0));
    }
    if (summary.capabilities) {
      const n = summary.capabilities.filter((c) => c.mode && c.mode !== "normal").length;
      cards.push(card(n + " / " + summary.capabilities.length, "capabilities not normal", n > 0));
    }
    if (summary.usage) {
      cards.push(card(summary.usage.calls, "calls this month"));
      cards.push(card(money(summary.usage.charged, summary.usage.cur), "charged this month"));
    }
    $("#summary").replaceChildren(...cards);
  }
  function renderLive() {
    const live = $("#live");
    const bad = panels.filter((p) => !p.ok);
    const authBad = (p) => p.error && (p.error.status === 401 || p.error.status === 403);
    if (!bad.length) { live.className = "pill pill-live"; live.textContent = "live"; }
    else if (bad.every(authBad)) { live.className = "pill pill-down"; live.textContent = "needs a key"; }
    else if (bad.length === panels.length) { live.className = "pill pill-down"; live.textContent = "offline"; }
    else { live.className = "pill pill-stale"; live.textContent = "partly stale"; }
    $("#updated").textContent = "updated " + clock(new Date());
  }

  let running = false;
  async function tick() {
    if (running) return;
    running = true;
    try {
      await Promise.all(panels.map(refreshPanel));
      renderSummary();
      renderLive();
    } finally {
      running = false;
    }
  }

  // ---- the key field
  const keyInput = $("#key"), keyState = $("#keystate");
  function showKey() { keyState.textContent = apiKey() ? "key saved in this browser" : "no key (loopback without auth works)"; }
  $("#keyform").addEventListener("submit", (e) => {
    e.preventDefault();
    try { if (keyInput.value.trim()) localStorage.setItem(KEY, keyInput.value.trim()); } catch (err) { /* storage off */ }
    keyInput.value = "";
    showKey(); resume();
  });
  $("#clearkey").addEventListener("click", () => {
    try { localStorage.removeItem(KEY); } catch (err) { /* storage off */ }
    showKey(); resume();
  });
  $("#every").textContent = (REFRESH / 1000) + " s";
  // A 401 means the key is missing or refused: asking again every few
  // seconds only fills logs. Stop, ask for a key, resume when one is saved.
  let timer = null;
  function needKey() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    document.body.dataset.polling = "stopped";
    const prompt = $("#keyprompt");
    prompt.hidden = false;
    prompt.textContent = (apiKey() ? "toolhub refused the saved key (401)." : "toolhub needs an API key (401).") +
      " Updates are paused: enter an operator key above to continue.";
    keyInput.focus();
  }
  function resume() {
    $("#keyprompt").hidden = true;
    document.body.dataset.polling = "on";
    tick();
    if (timer === null) timer = setInterval(tick, REFRESH);
  }
  showKey();
  resume();
})();
