"use strict";
// The trace viewer (docs/tracing.md): a sequence diagram of NDJSON trace
// events, one lane per component. Rows are virtual (only those in view are
// in the DOM), so large traces open fast.
(function () {
  const ROW = 22;
  const TIME_WIDTH = 84;
  const $ = (id) => document.getElementById(id);

  let events = [];
  let model = null;
  let visible = [];
  let selected = -1;
  const expanded = new Set();

  function laneRank(name) {
    if (name === "Client") return 0;
    if (name === "Conductor") return 1;
    if (name.startsWith("Proxy")) return 2;
    if (name === "Agent") return 4;
    return 3;
  }

  function idKey(id) {
    return typeof id === "string" ? "s" + id : JSON.stringify(id);
  }

  // One pass over the events: lanes, request/answer pairs, cancel links,
  // and the session/update stream of each prompt turn.
  function build(evs) {
    const lanes = new Set();
    const info = new Array(evs.length);
    const groups = [];
    const sessions = new Set();
    const open = new Map();
    const prompts = new Map();
    const groupOf = new Map();
    let summary = null;
    let requests = 0;
    for (let i = 0; i < evs.length; i++) {
      const e = evs[i];
      if (!e || e.type === "summary") {
        if (e) summary = e;
        continue;
      }
      lanes.add(e.from);
      lanes.add(e.to);
      const inf = { i: i, e: e };
      info[i] = inf;
      if (e.session) sessions.add(e.session);
      if (e.type === "request") {
        requests++;
        open.set(e.hop + "|" + e.from + "|" + idKey(e.id), i);
        if (e.method === "session/prompt" && e.session) prompts.set(e.hop + "|" + e.from + "|" + e.session, i);
      } else if (e.type === "response") {
        const key = e.hop + "|" + e.to + "|" + idKey(e.id);
        const r = open.get(key);
        let request = null;
        if (r !== undefined) {
          open.delete(key);
          request = info[r];
          inf.pair = r;
          request.pair = i;
          inf.latency = request.latency = e.ts - evs[r].ts;
          inf.method = evs[r].method;
          inf.session = evs[r].session;
          const pkey = e.hop + "|" + e.to + "|" + evs[r].session;
          if (prompts.get(pkey) === r) prompts.delete(pkey);
        }
        const p = e.payload;
        if (e.is_error) {
          inf.error = true;
          if (request) request.error = true;
          if (p && p.code === -32800) inf.code = -32800;
        }
        if (inf.code === -32800 || (!e.is_error && p && p.stopReason === "cancelled")) {
          inf.cancelledAnswer = true;
          if (request) request.cancelled = true;
        }
      } else if (e.type === "notification") {
        if (e.method === "$/cancel_request" && e.params) {
          const r = open.get(e.hop + "|" + e.from + "|" + idKey(e.params.requestId));
          inf.cancel = true;
          if (r !== undefined) {
            inf.cancels = r;
            info[r].cancelledBy = i;
            info[r].cancelled = true;
          }
        } else if (e.method === "session/cancel") {
          inf.cancel = true;
          const r = prompts.get(e.hop + "|" + e.from + "|" + e.session);
          if (r !== undefined) {
            inf.cancels = r;
            info[r].cancelledBy = i;
            info[r].cancelled = true;
          }
        } else if (e.method === "session/update") {
          const turn = prompts.get(e.hop + "|" + e.to + "|" + e.session);
          const gkey = e.hop + "|" + e.session + "|" + (turn === undefined ? "-" : turn);
          let g = groupOf.get(gkey);
          if (!g) {
            g = { id: groups.length, first: i, members: [], from: e.from, to: e.to, session: e.session };
            groupOf.set(gkey, g);
            groups.push(g);
          }
          g.members.push(i);
          inf.group = g;
        }
      } else {
        inf.error = true;
      }
    }
    const order = Array.from(lanes).sort(
      (a, b) => laneRank(a) - laneRank(b) || a.localeCompare(b, undefined, { numeric: true })
    );
    const laneIndex = new Map();
    order.forEach((name, k) => laneIndex.set(name, k));
    return { lanes: order, laneIndex, info, groups, sessions, summary, requests };
  }

  function filters() {
    return {
      session: $("f-session").value,
      method: $("f-method").value.trim(),
      errors: $("f-errors").checked,
    };
  }

  function computeVisible() {
    const f = filters();
    visible = [];
    for (const inf of model.info) {
      if (!inf) continue;
      const e = inf.e;
      if (f.session && (e.session || inf.session) !== f.session) continue;
      if (f.method && !(e.method || inf.method || "").includes(f.method)) continue;
      if (f.errors && !(inf.error || inf.cancelled || inf.cancelledAnswer || inf.cancel)) continue;
      const g = inf.group;
      if (g && g.members.length > 1) {
        if (g.first === inf.i) visible.push({ group: g });
        if (!expanded.has(g.id)) continue;
      }
      visible.push({ inf: inf });
    }
    $("spacer").style.height = visible.length * ROW + "px";
  }

  function laneX(name) {
    const width = Math.max($("scroll").clientWidth - TIME_WIDTH, 200);
    const lane = width / Math.max(model.lanes.length, 1);
    return TIME_WIDTH + lane * (model.laneIndex.get(name) + 0.5);
  }

  function drawLanes() {
    const head = $("lanes");
    const guides = $("guides");
    head.replaceChildren();
    guides.replaceChildren();
    for (const name of model.lanes) {
      const x = laneX(name);
      const lane = document.createElement("div");
      lane.className = "lane";
      lane.dataset.lane = name;
      lane.textContent = name;
      lane.style.left = x + "px";
      head.appendChild(lane);
      const guide = document.createElement("div");
      guide.className = "guide";
      guide.style.left = x + "px";
      guides.appendChild(guide);
    }
    const select = $("f-session");
    const chosen = select.value;
    while (select.options.length > 1) select.remove(1);
    for (const s of Array.from(model.sessions).sort()) select.add(new Option(s, s));
    select.value = chosen;
    const s = model.summary;
    let stats = events.length + " events, " + model.requests + " requests";
    if (s && s.dropped) stats += ", " + s.dropped + " dropped while recording";
    $("stats").textContent = stats;
  }

  function ms(seconds) {
    const v = seconds * 1000;
    return (v < 10 ? v.toFixed(2) : v < 1000 ? v.toFixed(1) : v.toFixed(0)) + " ms";
  }

  function span(cls, text) {
    const el = document.createElement("span");
    el.className = cls;
    el.textContent = text;
    return el;
  }

  function link(cls, target, text) {
    const a = document.createElement("a");
    a.className = cls;
    a.dataset.target = String(target);
    a.textContent = text;
    return a;
  }

  function arrow(row, from, to) {
    const x1 = laneX(from);
    const x2 = laneX(to);
    const el = document.createElement("div");
    el.className = "arrow " + (x2 >= x1 ? "ltr" : "rtl");
    el.style.left = Math.min(x1, x2) + "px";
    el.style.width = Math.max(Math.abs(x2 - x1), 16) + "px";
    row.appendChild(el);
    const label = document.createElement("div");
    label.className = "label";
    label.style.left = Math.min(x1, x2) + 8 + "px";
    row.appendChild(label);
    return label;
  }

  function rowFor(item, k) {
    const row = document.createElement("div");
    row.style.top = k * ROW + "px";
    if (item.group) {
      const g = item.group;
      const open = expanded.has(g.id);
      row.className = "row group";
      row.dataset.group = String(g.id);
      row.dataset.count = String(g.members.length);
      const first = model.info[g.first].e;
      row.appendChild(span("ts", ms(first.ts)));
      const label = arrow(row, g.from, g.to);
      label.appendChild(span("toggle", open ? "\u25be" : "\u25b8"));
      label.appendChild(document.createTextNode("session/update \u00d7" + g.members.length));
      return row;
    }
    const inf = item.inf;
    const e = inf.e;
    row.className = "row " + e.type;
    if (inf.error) row.classList.add("error");
    if (inf.cancelled) row.classList.add("cancelled");
    if (inf.cancel) row.classList.add("cancel");
    if (inf.i === selected) row.classList.add("selected");
    row.dataset.index = String(inf.i);
    if (inf.pair !== undefined) row.dataset.pair = String(inf.pair);
    if (inf.latency !== undefined) row.dataset.latency = inf.latency.toFixed(6);
    row.appendChild(span("ts", ms(e.ts)));
    const label = arrow(row, e.from, e.to);
    if (e.type === "request") {
      label.appendChild(document.createTextNode(e.method + " #" + JSON.stringify(e.id)));
      if (inf.latency !== undefined) label.appendChild(span("latency", ms(inf.latency)));
      else label.appendChild(span("latency", "no answer"));
      if (inf.cancelled) label.appendChild(span("badge cancelled", "cancelled"));
    } else if (e.type === "response") {
      label.appendChild(
        document.createTextNode("\u21a9 #" + JSON.stringify(e.id) + (inf.method ? " " + inf.method : ""))
      );
      if (e.is_error && e.payload) label.appendChild(span("badge code", String(e.payload.code)));
      if (inf.latency !== undefined) label.appendChild(span("latency", ms(inf.latency)));
      if (inf.cancelledAnswer && !e.is_error) label.appendChild(span("badge cancelled", "cancelled"));
      if (inf.pair !== undefined) label.appendChild(link("pair-link", inf.pair, "request"));
    } else if (e.type === "notification") {
      label.appendChild(document.createTextNode(e.method));
      if (e.method === "$/cancel_request" && e.params) {
        label.appendChild(document.createTextNode(" #" + JSON.stringify(e.params.requestId)));
      }
      if (inf.cancels !== undefined) {
        label.appendChild(link("cancel-link", inf.cancels, "cancels " + model.info[inf.cancels].e.method));
      }
    } else {
      label.appendChild(document.createTextNode(e.type + (e.text ? ": " + e.text.slice(0, 80) : "")));
    }
    return row;
  }

  function render() {
    const scroll = $("scroll");
    const first = Math.max(0, Math.floor(scroll.scrollTop / ROW) - 10);
    const last = Math.min(visible.length, Math.ceil((scroll.scrollTop + scroll.clientHeight) / ROW) + 10);
    const frag = document.createDocumentFragment();
    for (let k = first; k < last; k++) frag.appendChild(rowFor(visible[k], k));
    $("rows").replaceChildren(frag);
  }

  function show(i) {
    selected = i;
    const inf = model.info[i];
    const e = inf.e;
    $("detail").hidden = false;
    $("detail-title").textContent = (e.method || inf.method || e.type) + "  (" + e.hop + ", " + e.from + " \u2192 " + e.to + ")";
    const links = $("detail-links");
    links.replaceChildren();
    if (inf.pair !== undefined) links.appendChild(link("pair-link", inf.pair, e.type === "request" ? "answer" : "request"));
    if (inf.cancelledBy !== undefined) links.appendChild(link("cancel-link", inf.cancelledBy, "cancelled by"));
    if (inf.cancels !== undefined) links.appendChild(link("cancel-link", inf.cancels, "cancels"));
    $("detail-json").textContent = JSON.stringify(e.raw !== undefined ? e.raw : e, null, 2);
    // A link to this message (#event=N), for bug reports.
    history.replaceState(null, "", "#event=" + i);
    render();
  }

  function fromHash() {
    const match = /^#event=(\d+)$/.exec(location.hash);
    if (match && model && model.info[Number(match[1])]) reveal(Number(match[1]));
  }

  function reveal(i) {
    const g = model.info[i].group;
    if (g && g.members.length > 1 && !expanded.has(g.id)) {
      expanded.add(g.id);
      computeVisible();
    }
    const k = visible.findIndex((item) => item.inf && item.inf.i === i);
    if (k >= 0) $("scroll").scrollTop = Math.max(0, k * ROW - $("scroll").clientHeight / 2);
    show(i);
  }

  function onClick(event) {
    const a = event.target.closest("a[data-target]");
    if (a) {
      event.stopPropagation();
      reveal(Number(a.dataset.target));
      return;
    }
    const row = event.target.closest(".row");
    if (!row) return;
    if (row.dataset.group !== undefined) {
      const id = Number(row.dataset.group);
      if (expanded.has(id)) expanded.delete(id);
      else expanded.add(id);
      computeVisible();
      render();
    } else {
      show(Number(row.dataset.index));
    }
  }

  function refresh() {
    model = build(events);
    drawLanes();
    computeVisible();
    render();
  }

  function start(evs) {
    events = evs;
    refresh();
    fromHash();
    document.body.dataset.loadMs = performance.now().toFixed(0);
    document.body.dataset.ready = "true";
  }

  function poll() {
    fetch("/events", { cache: "no-store" })
      .then((r) => r.json())
      .then((evs) => {
        if (evs.length !== events.length) {
          const scroll = $("scroll");
          const atEnd = scroll.scrollTop + scroll.clientHeight >= scroll.scrollHeight - ROW;
          events = evs;
          refresh();
          if (atEnd) scroll.scrollTop = scroll.scrollHeight;
        }
      })
      .catch(() => {});
  }

  $("scroll").addEventListener("scroll", render, { passive: true });
  $("rows").addEventListener("click", onClick);
  $("detail-links").addEventListener("click", onClick);
  $("detail-close").addEventListener("click", () => {
    $("detail").hidden = true;
    selected = -1;
    render();
  });
  for (const id of ["f-session", "f-method", "f-errors"]) {
    $(id).addEventListener("input", () => {
      computeVisible();
      render();
    });
  }
  window.addEventListener("hashchange", fromHash);
  window.addEventListener("resize", () => {
    drawLanes();
    render();
  });

  const data = $("trace-data");
  const embedded = data.textContent.trim();
  if (embedded) {
    data.textContent = ""; // parsed once; the text would double the memory
    start(JSON.parse(embedded));
  } else {
    fetch("/events", { cache: "no-store" })
      .then((r) => r.json())
      .then(start);
  }
  if (LIVE) setInterval(poll, 500);
})();
