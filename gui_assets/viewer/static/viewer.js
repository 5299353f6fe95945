/* gui-assets viewer: the demo list and the step view over LIBERO-layout shards.
 *
 * Data comes from the server's JSON API (/api/index, /api/demo, /api/frame), or, in a static
 * export, from the JSON embedded in the page (<script id="viewer-data">). The DOM contract:
 * #frame is the displayed frame; #action-point is centred on (x1, y1) of #frame's box for a
 * step whose mask is [1, 1, 0, 0] and is absent otherwise; #eye-rect's box is the step's
 * eye_rect on #frame; #action-arrow carries a SCROLL or DRAG gesture, #scroll-label the view
 * direction of a SCROLL (the inverse of the gesture; for a SCROLL with no gesture, no arrow and
 * the direction its desc records). #frame[data-step] is set once the frame
 * of that step has loaded and its overlays are drawn.
 */
"use strict";

(() => {
  const TYPE_COLOURS = {
    CLICK: "#e5484d", TYPE: "#3e63dd", SELECT: "#8e4ec6", HOVER: "#12a594", SCROLL: "#f76b15",
    DRAG: "#d6409f", PRESS_BACK: "#5b6b7a", PRESS_HOME: "#5b6b7a", PRESS_ENTER: "#46576a",
    PRESS_KEY: "#46576a", GOTO: "#30a46c", WAIT: "#8b8d98", STOP: "#1c2024", FAIL: "#a0161d",
  };
  const POINTER_TYPES = new Set(["CLICK", "TYPE", "SELECT", "HOVER", "SCROLL", "DRAG"]);
  const POINT_MASK = [1, 1, 0, 0];
  const GESTURE_MASK = [1, 1, 1, 1];
  const PAGE_ROWS = 500;
  const SVG = "http://www.w3.org/2000/svg";

  const embedded = document.getElementById("viewer-data");
  const STATIC = embedded ? JSON.parse(embedded.textContent) : null;

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k === "style") Object.assign(node.style, v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    return node;
  }

  const present = (...nodes) => nodes.filter((n) => n !== null && n !== undefined);
  const colourOf = (type) => TYPE_COLOURS[type] || "#6f6f6f";
  const demoKey = (file, demo) => `${file}\n${demo}`;
  const maskIs = (mask, want) => Array.isArray(mask) && mask.length === 4 && mask.every((m, i) => (m ? 1 : 0) === want[i]);
  const fmt = (v, digits = 4) => (typeof v === "number" ? v.toFixed(digits) : v === null || v === undefined ? "—" : String(v));
  const visibleText = (s) => String(s).replace(/\n/g, "⏎").replace(/\t/g, "⇥");

  /* ---------- data access: the server's API, or the JSON of a static export ---------- */

  async function getJSON(url) {
    const r = await fetch(url);
    const body = await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }));
    if (!r.ok) throw new Error(body.error || `${r.status} ${r.statusText}`);
    return body;
  }

  const data = {
    index() {
      return STATIC ? Promise.resolve(STATIC.index) : getJSON("/api/index");
    },
    demo(file, demo) {
      if (STATIC) {
        const d = STATIC.demos[demoKey(file, demo)];
        return d ? Promise.resolve(d) : Promise.reject(new Error(`${file}:${demo} is not in this export`));
      }
      const q = new URLSearchParams({ file, demo });
      return getJSON(`/api/demo?${q}`);
    },
    frame(file, demo, kind, step, version) {
      if (STATIC) return ((STATIC.frames[demoKey(file, demo)] || {})[kind] || [])[step] || "";
      const q = new URLSearchParams({ file, demo, kind, step: String(step), v: version });
      return `/api/frame?${q}`;
    },
  };

  /* ---------- state, URL and views ---------- */

  const state = {
    view: null, index: null, rows: [], shown: PAGE_ROWS,
    file: null, demoName: null, demo: null, step: 0, zoom: "fit",
  };

  function setStatus(text, isError) {
    const s = $("status");
    s.textContent = text || "";
    s.classList.toggle("error", Boolean(isError));
  }

  function urlFor(file, demo, step) {
    if (file === null) return location.pathname;
    const q = new URLSearchParams({ file, demo, step: String(step) });
    return `${location.pathname}?${q}`;
  }

  function setHistory(method, url) {
    try {
      history[method](null, "", url);
      return true;
    } catch (e) { // some browsers refuse history changes on file:// pages
      return false;
    }
  }

  function navigate(file, demo, step) {
    const url = urlFor(file, demo, step);
    if (!setHistory("pushState", url)) {
      location.href = url;
      return;
    }
    route();
  }

  function showView(name) {
    state.view = name;
    $("list-view").hidden = name !== "list";
    $("demo-view").hidden = name !== "demo";
    document.body.dataset.view = name;
  }

  async function route() {
    const q = new URLSearchParams(location.search);
    const file = q.get("file");
    const demo = q.get("demo");
    try {
      if (file && demo) {
        await openDemo(file, demo, q.get("step") ?? "0");
      } else {
        await openList();
      }
    } catch (e) {
      setStatus(e.message, true);
    }
  }

  /* ---------- the demo list ---------- */

  async function openList() {
    showView("list");
    document.title = "gui-assets viewer";
    if (!state.index) {
      setStatus("reading the index…");
      state.index = await data.index();
      buildList(state.index);
      setStatus("");
    }
    renderList();
  }

  function buildList(index) {
    $("root-label").textContent = index.root;
    $("root-label").title = index.root;
    const rows = [];
    const errors = $("file-errors");
    errors.replaceChildren();
    for (const f of index.files) {
      if (f.error) errors.append(el("p", { class: "file-error", text: `${f.path}: ${f.error}` }));
      for (const d of f.demos) rows.push({ file: f, demo: d });
    }
    state.rows = rows;
    const sources = new Set();
    const types = new Set();
    const dirs = new Set();
    for (const { file, demo } of rows) {
      sources.add(demo.source || "(none)");
      dirs.add(demo.directory || file.directory);
      for (const t of Object.keys(demo.type_counts || {})) types.add(t);
    }
    const order = index.files.length ? index.files[0].action_types : [];
    const typeList = [...types].sort((a, b) => rank(order, a) - rank(order, b));
    fillSelect($("filter-source"), [...sources].sort(), "every source");
    fillSelect($("filter-type"), typeList, "any action");
    fillSelect($("filter-directory"), [...dirs].sort(), "every directory");
    renderDirectories(index.directories || {});
  }

  const rank = (order, name) => (order.indexOf(name) >= 0 ? order.indexOf(name) : 999);

  function fillSelect(select, values, anyLabel) {
    const keep = select.value;
    select.replaceChildren(el("option", { value: "", text: anyLabel }), ...values.map((v) => el("option", { value: v, text: v })));
    if (values.includes(keep)) select.value = keep;
  }

  function filteredRows() {
    const text = $("filter-text").value.trim().toLowerCase();
    const source = $("filter-source").value;
    const type = $("filter-type").value;
    const dir = $("filter-directory").value;
    const success = $("filter-success").value;
    return state.rows.filter(({ file, demo }) => {
      if (source && (demo.source || "(none)") !== source) return false;
      if (type && !(demo.type_counts || {})[type]) return false;
      if (dir && (demo.directory || file.directory) !== dir) return false;
      if (success && String(demo.success ? 1 : 0) !== success) return false;
      if (text) {
        const hay = `${demo.language_instruction || ""} ${demo.episode_id || ""} ${file.path} ${demo.name}`.toLowerCase();
        if (!hay.includes(text)) return false;
      }
      return true;
    });
  }

  function renderList() {
    const rows = filteredRows();
    const body = $("demo-list").tBodies[0];
    const frag = document.createDocumentFragment();
    for (const { file, demo } of rows.slice(0, state.shown)) frag.append(listRow(file, demo));
    body.replaceChildren(frag);
    const steps = rows.reduce((n, r) => n + (r.demo.steps || 0), 0);
    $("list-count").textContent = `${rows.length} of ${state.rows.length} demos · ${steps} steps · ${state.index.files.length} shards`;
    $("show-more").hidden = rows.length <= state.shown;
    $("demo-list").dataset.ready = "1";
  }

  function listRow(file, demo) {
    const href = urlFor(file.path, demo.name, 0);
    const open = (ev) => {
      if (ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
      ev.preventDefault();
      navigate(file.path, demo.name, 0);
    };
    const instruction = demo.error ? `(${demo.error})` : demo.language_instruction || "(no instruction)";
    const outcome = demo.success === true ? el("span", { class: "ok", text: "✓ success" })
      : demo.success === false ? el("span", { class: "bad", text: "✗ failure" }) : "—";
    return el("tr", { "data-file": file.path, "data-demo": demo.name, onclick: open },
      el("td", { class: "instr" }, el("a", { href, text: instruction })),
      el("td", { text: demo.source || "—" }),
      el("td", { text: demo.directory || file.directory }),
      el("td", { class: "mono" }, `${file.path.split("/").pop()} / ${demo.name}`),
      el("td", { class: "num", text: demo.steps }),
      el("td", {}, typeBar(demo, file.action_types)),
      el("td", {}, outcome));
  }

  function typeBar(demo, order) {
    const counts = demo.type_counts || {};
    const total = Object.values(counts).reduce((a, b) => a + b, 0) || 1;
    const names = Object.keys(counts).sort((a, b) => rank(order, a) - rank(order, b));
    const bar = el("div", { class: "typebar", title: names.map((n) => `${n} ${counts[n]}`).join(", ") });
    for (const n of names) bar.append(el("span", { style: { width: `${(100 * counts[n]) / total}%`, background: colourOf(n) } }));
    const note = demo.ungrounded ? el("small", { class: "muted", text: ` ${demo.ungrounded} ungrounded` }) : null;
    return el("div", { class: "types" }, bar, note);
  }

  function renderDirectories(dirs) {
    const box = $("directories");
    box.replaceChildren();
    for (const [name, info] of Object.entries(dirs)) {
      const stats = info.stats || {};
      const figures = [
        ["source", info.source], ["split", info.split], ["episodes", stats.episodes_out], ["steps", stats.steps],
        ["ungrounded steps", stats.ungrounded_steps],
        ["target inside eye-in-hand", typeof stats.target_inside_eye_in_hand_rate === "number" ? stats.target_inside_eye_in_hand_rate.toFixed(3) : null],
        ["upstream", info.upstream_repo ? `${info.upstream_repo}@${info.upstream_revision}` : null],
        ["drops", stats.drops && Object.keys(stats.drops).length ? Object.entries(stats.drops).map(([k, v]) => `${k} ${v}`).join(", ") : null],
      ];
      box.append(el("section", { class: "card dir-card" }, el("h2", { text: `${name}/ · dataset_info.json` }), kvTable(figures.filter(([, v]) => v !== null && v !== undefined))));
    }
  }

  /* ---------- the demo view ---------- */

  // Steps are counted from 0 everywhere: the URL's step=, the header, the action card, the
  // timeline. The label gives the range, so "step 3" is never read as the third.
  function stepLabel(t, steps) {
    return `step ${t} (0–${steps - 1})`;
  }

  // Why the URL's step= names no step of this demo, or null when it does.
  function stepProblem(raw, steps, demoLabel) {
    const range = steps ? `${demoLabel} has ${steps} steps, step=0 to step=${steps - 1}` : `${demoLabel} has no steps`;
    if (!/^\d+$/.test(raw)) return `step=${raw} is not a step number: ${range}`;
    if (Number(raw) >= steps) return `step=${raw} is out of range: ${range}`;
    return null;
  }

  // A step the URL asks for that does not exist: said in place of the step, never another step shown.
  function showStepProblem(text) {
    state.step = -1; // ArrowRight and Home then go to step 0, End to the last
    $("demo-body").hidden = true;
    const box = $("step-error");
    box.textContent = text;
    box.hidden = false;
    $("step-label").textContent = "no step";
    $("prev").disabled = true;
    $("next").disabled = state.demo.steps === 0;
    for (const tick of $("timeline").querySelectorAll(".tick.current")) tick.classList.remove("current");
  }

  async function openDemo(file, name, step) {
    showView("demo");
    if (!(state.demo && state.file === file && state.demoName === name)) {
      setStatus(`reading ${name}…`);
      const demo = await data.demo(file, name);
      state.file = file;
      state.demoName = name;
      state.demo = demo;
      buildDemo(demo);
      setStatus("");
    }
    const problem = stepProblem(step, state.demo.steps, `${file.split("/").pop()} / ${name}`);
    if (problem) showStepProblem(problem);
    else goStep(Number(step));
  }

  function typeName(t) {
    const d = state.demo;
    const code = d.types[t];
    return d.type_names[code] || `#${code}`;
  }

  function buildDemo(d) {
    const a = d.attrs || {};
    document.title = `${a.language_instruction || d.name} · gui-assets viewer`;
    $("instruction").textContent = a.language_instruction || "(no instruction)";
    const success = d.rewards && d.rewards.length ? d.rewards[d.rewards.length - 1] === 1 : a.success === undefined ? null : Boolean(a.success);
    const chips = [
      ["source", a.source], ["directory", a.directory], ["shard", state.file], ["demo", d.name],
      ["episode", a.episode_id], ["steps", d.steps],
      ["frame", d.frames.agentview ? `${d.frames.agentview[2]}×${d.frames.agentview[1]}` : "none"],
    ];
    const meta = $("demo-meta");
    meta.replaceChildren(...chips.filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => el("span", { class: "chip" }, el("b", { text: k }), ` ${v}`)));
    if (success !== null) meta.append(el("span", { class: `chip ${success ? "ok" : "bad"}`, text: success ? "✓ success" : "✗ failure" }));
    const problems = $("problems");
    problems.hidden = !d.problems.length;
    problems.textContent = d.problems.length ? `This demo departs from the output format: ${d.problems.join("; ")}` : "";

    const frame = $("frame");
    const av = d.frames.agentview;
    frame.removeAttribute("data-step");
    frame.removeAttribute("src");
    if (av) {
      frame.width = av[2];
      frame.height = av[1];
    }
    $("scrubber").max = String(Math.max(0, d.steps - 1));
    buildTimeline(d);
    $("source-ref").textContent = d.source_ref === null ? "(none recorded)" : JSON.stringify(d.source_ref, null, 2);
    fillKv($("demo-attrs"), d.attrs || {});
    fillKv($("file-attrs"), (d.file && d.file.attrs) || {});
    applyZoom();
  }

  function buildTimeline(d) {
    const line = $("timeline");
    const ticks = [];
    for (let t = 0; t < d.steps; t++) {
      const type = typeName(t);
      const mask = d.masks ? d.masks[t] : null;
      const ungrounded = mask && isUngrounded(type, mask);
      const desc = d.descs ? d.descs[t] : type;
      ticks.push(el("button", {
        type: "button", class: `tick${ungrounded ? " ungrounded" : ""}`, "data-step": t,
        title: `${t}: ${desc}${ungrounded ? " (ungrounded)" : ""}`,
        style: { background: colourOf(type) },
        onclick: () => goStep(t),
      }, d.steps <= 60 ? el("span", { text: type.replace("PRESS_", "") }) : null));
    }
    line.replaceChildren(...ticks);
    line.classList.toggle("dense", d.steps > 60);
  }

  function goStep(step) {
    const d = state.demo;
    const t = Math.max(0, Math.min(d.steps - 1, step));
    state.step = t;
    $("step-error").hidden = true;
    $("demo-body").hidden = false;
    setHistory("replaceState", urlFor(state.file, state.demoName, t));
    const version = d.file ? d.file.version : "";
    const frame = $("frame");
    frame.dataset.pending = String(t);
    if (d.frames.agentview) {
      const url = data.frame(state.file, state.demoName, "agentview", t, version);
      if (frame.getAttribute("src") !== url) frame.src = url;
      else if (frame.complete) frameShown();
    } else {
      frameShown();
    }
    const eye = $("eye");
    if (d.frames.eye) eye.src = data.frame(state.file, state.demoName, "eye", t, version);
    eye.hidden = !d.frames.eye;
    $("scrubber").value = String(t);
    $("step-label").textContent = stepLabel(t, d.steps);
    $("prev").disabled = t === 0;
    $("next").disabled = t === d.steps - 1;
    for (const tick of $("timeline").querySelectorAll(".tick.current")) tick.classList.remove("current");
    const tick = $("timeline").children[t];
    if (tick) {
      tick.classList.add("current");
      tick.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
    renderSidebar(t);
  }

  // The overlays follow the pixels: drawn when the frame of the step is on screen.
  function frameShown() {
    const frame = $("frame");
    const t = Number(frame.dataset.pending);
    if (!state.demo || t !== state.step) return;
    renderOverlay(t);
    focusAction();
    frame.dataset.step = String(t);
    prefetch(t + 1);
    prefetch(t - 1);
  }

  const prefetched = new Map();

  function prefetch(t) {
    const d = state.demo;
    if (STATIC || t < 0 || t >= d.steps) return;
    for (const kind of ["agentview", "eye"]) {
      if (!d.frames[kind]) continue;
      const url = data.frame(state.file, state.demoName, kind, t, d.file.version);
      if (prefetched.has(url)) continue;
      const im = new Image();
      im.src = url;
      prefetched.set(url, im);
      if (prefetched.size > 16) prefetched.delete(prefetched.keys().next().value);
    }
  }

  /* ---------- overlays on the frame ---------- */

  function renderOverlay(t) {
    const d = state.demo;
    const overlay = $("overlay");
    overlay.replaceChildren();
    const type = typeName(t);
    const mask = d.masks ? d.masks[t] : [0, 0, 0, 0];
    const p = d.params ? d.params[t] : [0, 0, 0, 0];
    const text = d.texts ? d.texts[t] : "";
    if (d.eye_rect) overlay.append(eyeRect(d.eye_rect[t]));
    if (maskIs(mask, POINT_MASK)) {
      overlay.append(actionPoint(type, p));
      overlay.append(pointTag(type, p, text));
    } else if (maskIs(mask, GESTURE_MASK)) {
      overlay.append(gestureArrow(type, p));
      overlay.append(gestureLabel(type, p, d.descs ? d.descs[t] : ""));
    } else if (type === "SCROLL") {
      overlay.append(directionLabel(d.descs ? d.descs[t] : ""));
    } else {
      overlay.append(actionBanner(type, mask, text));
    }
    if (d.obs_stale && d.obs_stale[t]) overlay.append(el("div", { class: "stale-flag", text: "stale frame: the pre-action frame was not recorded" }));
  }

  function eyeRect(r) {
    const box = el("div", {
      id: "eye-rect",
      "data-x1": r[0], "data-y1": r[1], "data-x2": r[2], "data-y2": r[3],
      style: { left: `${r[0] * 100}%`, top: `${r[1] * 100}%`, width: `${(r[2] - r[0]) * 100}%`, height: `${(r[3] - r[1]) * 100}%` },
    });
    box.append(el("span", { class: "eye-tag", text: "eye" }));
    return box;
  }

  function actionPoint(type, p) {
    const colour = colourOf(type);
    const point = el("div", {
      id: "action-point", "data-x": p[0], "data-y": p[1], "data-type": type,
      style: { left: `${p[0] * 100}%`, top: `${p[1] * 100}%` },
    });
    const g = svg("svg", { viewBox: "-22 -22 44 44", width: 44, height: 44, "aria-hidden": "true" });
    const arms = [[0, -21, 0, -7], [0, 7, 0, 21], [-21, 0, -7, 0], [7, 0, 21, 0]];
    g.append(svg("circle", { r: 13, fill: "none", stroke: "#000", "stroke-width": 5, "stroke-opacity": 0.75 }));
    for (const [x1, y1, x2, y2] of arms) g.append(svg("line", { x1, y1, x2, y2, stroke: "#000", "stroke-width": 5, "stroke-linecap": "round", "stroke-opacity": 0.75 }));
    g.append(svg("circle", { r: 13, fill: "none", stroke: "#fff", "stroke-width": 2.5 }));
    for (const [x1, y1, x2, y2] of arms) g.append(svg("line", { x1, y1, x2, y2, stroke: colour, "stroke-width": 2.5, "stroke-linecap": "round" }));
    g.append(svg("circle", { r: 2, fill: colour, stroke: "#fff", "stroke-width": 1 }));
    point.append(g);
    return point;
  }

  function pointTag(type, p, text) {
    const label = type === "TYPE" && text ? `TYPE “${visibleText(text)}”` : text ? `${type} ${visibleText(text)}` : type;
    const right = p[0] < 0.7;
    const below = p[1] < 0.12;
    return el("div", {
      id: "action-caption", class: "tag",
      style: {
        background: colourOf(type),
        left: right ? `calc(${p[0] * 100}% + 26px)` : null,
        right: right ? null : `calc(${(1 - p[0]) * 100}% + 26px)`,
        top: below ? `calc(${p[1] * 100}% + 14px)` : null,
        bottom: below ? null : `calc(${(1 - p[1]) * 100}% + 14px)`,
      },
      text: label,
    });
  }

  function viewDirection(p) {
    const dx = p[2] - p[0];
    const dy = p[3] - p[1];
    if (Math.abs(dy) >= Math.abs(dx)) return dy < 0 ? "down" : dy > 0 ? "up" : null;
    return dx < 0 ? "right" : "left";
  }

  function gestureArrow(type, p) {
    const wrap = $("frame-wrap");
    const w = wrap.clientWidth;
    const h = wrap.clientHeight;
    const layer = svg("svg", { id: "arrow-layer", width: w, height: h, viewBox: `0 0 ${w} ${h}`, "aria-hidden": "true" });
    const g = svg("g", { id: "action-arrow", "data-type": type, "data-x1": p[0], "data-y1": p[1], "data-x2": p[2], "data-y2": p[3] });
    const [x1, y1, x2, y2] = [p[0] * w, p[1] * h, p[2] * w, p[3] * h];
    const len = Math.hypot(x2 - x1, y2 - y1);
    const colour = colourOf(type);
    const head = Math.min(18, Math.max(8, len / 3));
    const ux = len ? (x2 - x1) / len : 0;
    const uy = len ? (y2 - y1) / len : 0;
    const bx = x2 - ux * head;
    const by = y2 - uy * head;
    const wing = head * 0.6;
    const points = `${x2},${y2} ${bx - uy * wing},${by + ux * wing} ${bx + uy * wing},${by - ux * wing}`;
    g.append(svg("line", { x1, y1, x2: bx, y2: by, stroke: "#000", "stroke-width": 8, "stroke-linecap": "round", "stroke-opacity": 0.7 }));
    g.append(svg("polygon", { points, fill: "#000", stroke: "#000", "stroke-width": 4, "stroke-linejoin": "round", "stroke-opacity": 0.7 }));
    g.append(svg("line", { x1, y1, x2: bx, y2: by, stroke: colour, "stroke-width": 4, "stroke-linecap": "round" }));
    g.append(svg("polygon", { points, fill: colour, stroke: "#fff", "stroke-width": 1.5, "stroke-linejoin": "round" }));
    g.append(svg("circle", { cx: x1, cy: y1, r: 6, fill: "#fff", stroke: colour, "stroke-width": 3 }));
    layer.append(g);
    return layer;
  }

  function gestureLabel(type, p, desc) {
    const arrows = { down: "↓", up: "↑", left: "←", right: "→" };
    const mx = ((p[0] + p[2]) / 2) * 100;
    const my = ((p[1] + p[3]) / 2) * 100;
    const side = mx < 70 ? { left: `calc(${mx}% + 16px)` } : { right: `calc(${100 - mx}% + 16px)` };
    const style = { ...side, top: `calc(${my}% - 14px)`, background: colourOf(type) };
    if (type !== "SCROLL") {
      return el("div", { id: "drag-label", class: "tag", style, text: `${type.toLowerCase()} (${fmt(p[0], 2)}, ${fmt(p[1], 2)}) → (${fmt(p[2], 2)}, ${fmt(p[3], 2)})` });
    }
    const view = viewDirection(p);
    const said = (String(desc).match(/\b(down|up|left|right)\b/) || [])[1];
    const label = el("div", { id: "scroll-label", class: "tag", "data-view": view || "", style },
      el("b", { text: view ? `view ${arrows[view]} ${view}` : "no movement" }),
      el("small", { text: " · arrow = the gesture" }));
    if (said && view && said !== view) label.append(el("span", { class: "warn", text: ` ⚠ action_desc says ${said}` }));
    return label;
  }

  // A SCROLL with no gesture (a source that records the direction only, or a wheel whose travel
  // left the frame): nothing to draw an arrow from, so the label names the view direction its
  // desc records, without inventing where the finger went.
  function directionLabel(desc) {
    const arrows = { down: "↓", up: "↑", left: "←", right: "→" };
    const said = (String(desc).match(/\b(down|up|left|right)\b/) || [])[1];
    const style = { left: "50%", top: "50%", transform: "translate(-50%, -50%)", background: colourOf("SCROLL") };
    return el("div", { id: "scroll-label", class: "tag", "data-view": said || "", style },
      el("b", { text: said ? `view ${arrows[said]} ${said}` : "no direction recorded" }),
      el("small", { text: " · no gesture recorded" }));
  }

  // A pointer step with an all-zero mask whose point was lost. A SCROLL without gesture is shown
  // by its direction instead: some sources record only that (no point was ever there to lose).
  function isUngrounded(type, mask) {
    return POINTER_TYPES.has(type) && type !== "SCROLL" && mask.every((m) => !m);
  }

  function actionBanner(type, mask, text) {
    const ungrounded = isUngrounded(type, mask);
    const banner = el("div", { id: "action-banner", class: "tag", style: { background: colourOf(type) } }, el("b", { text: type }));
    if (text) banner.append(el("span", { class: "banner-text", text: ` ${visibleText(text)}` }));
    if (ungrounded) banner.append(el("span", { class: "ungrounded-flag", text: "ungrounded: no point recorded" }));
    return banner;
  }

  /* ---------- the sidebar ---------- */

  function renderSidebar(t) {
    const d = state.demo;
    const type = typeName(t);
    const mask = d.masks ? d.masks[t] : [0, 0, 0, 0];
    const p = d.params ? d.params[t] : [0, 0, 0, 0];
    const text = d.texts ? d.texts[t] : "";
    const av = d.frames.agentview;
    const ungrounded = isUngrounded(type, mask);
    const flags = [];
    if (ungrounded) flags.push(el("span", { class: "flag bad", text: "ungrounded" }));
    if (type === "SCROLL" && mask.every((m) => !m)) flags.push(el("span", { class: "flag", text: "no gesture" }));
    if (d.obs_stale && d.obs_stale[t]) flags.push(el("span", { class: "flag warn", text: "stale frame" }));
    if (d.dones && d.dones[t]) flags.push(el("span", { class: "flag", text: "done" }));
    if (d.rewards && d.rewards[t]) flags.push(el("span", { class: "flag ok", text: "reward 1" }));
    const names = ["x1", "y1", "x2", "y2"];
    const params = el("table", { class: "params" },
      el("thead", {}, el("tr", {}, el("th", { text: "param" }), el("th", { text: "value" }), el("th", { text: "px" }), el("th", { text: "mask" }))),
      el("tbody", {}, ...names.map((n, i) => {
        const px = av ? Math.round(p[i] * (i % 2 === 0 ? av[2] : av[1])) : null;
        return el("tr", { class: mask[i] ? "" : "masked" },
          el("td", { text: n }), el("td", { class: "mono", text: mask[i] ? fmt(p[i]) : "—" }),
          el("td", { class: "mono", text: mask[i] && px !== null ? px : "" }), el("td", { class: "mono", text: fmt(mask[i], 0) }));
      })));
    $("action-card").replaceChildren(...present(
      el("div", { class: "action-head" }, el("span", { class: "badge", style: { background: colourOf(type) }, text: type }), el("span", { class: "muted", text: stepLabel(t, d.steps) }), ...flags),
      el("div", { class: "desc mono", id: "action-desc", text: d.descs ? d.descs[t] : "" }),
      text ? el("div", { class: "text-box" }, el("span", { class: "muted", text: "action_text " }), el("code", { id: "action-text", text: visibleText(text) })) : null,
      params,
    ));
    const r = d.eye_rect ? d.eye_rect[t] : null;
    $("eye-info").replaceChildren(
      el("div", { class: "muted", text: "eye_rect" }),
      el("div", { class: "mono", text: r ? `${fmt(r[0], 3)}, ${fmt(r[1], 3)} → ${fmt(r[2], 3)}, ${fmt(r[3], 3)}` : "—" }),
      el("div", { class: "muted small", text: "centred where the previous action left the pointer" }));
    const s = d.states ? d.states[t] : null;
    const hw = d.native_hw ? d.native_hw[t] : null;
    const resized = hw && av && (hw[0] !== av[1] || hw[1] !== av[2]);
    $("state-card").replaceChildren(el("h2", { text: "State" }), kvTable([
      ["cursor (x, y)", s ? `${fmt(s[0], 3)}, ${fmt(s[1], 3)}` : "—"],
      ["scroll (x, y)", s ? `${fmt(s[2], 3)}, ${fmt(s[3], 3)}` : "—"],
      ["progress", s ? fmt(s[4], 3) : "—"],
      ["native_hw (h, w)", hw ? `${hw[0]}, ${hw[1]}${resized ? " (frame resized)" : ""}` : "—"],
      ["states", s ? `[${s.map((v) => fmt(v, 3)).join(", ")}]` : "—"],
    ]));
    const thought = d.thoughts ? d.thoughts[t] : "";
    $("thought-card").hidden = !thought;
    $("thought").textContent = thought || "";
  }

  function kvTable(pairs) {
    return el("table", { class: "kv" }, el("tbody", {}, ...pairs.map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v })))));
  }

  function fillKv(table, attrs) {
    const rows = Object.entries(attrs).map(([k, v]) => {
      let shown = v;
      if (typeof v === "string" && /^[[{]/.test(v)) {
        try { shown = JSON.stringify(JSON.parse(v), null, 1); } catch (e) { shown = v; }
      } else if (typeof v !== "string") {
        shown = JSON.stringify(v);
      }
      return el("tr", {}, el("th", { text: k }), el("td", {}, el("pre", { text: shown })));
    });
    table.replaceChildren(el("tbody", {}, ...rows));
  }

  /* ---------- zoom ---------- */

  function applyZoom() {
    const d = state.demo;
    if (!d || !d.frames.agentview) return;
    const [, h, w] = d.frames.agentview;
    const stage = $("stage");
    let scale = Number(state.zoom);
    if (state.zoom === "fit") {
      const availW = stage.clientWidth - 2;
      const availH = stage.clientHeight - 2;
      scale = Math.min(1, availW / w, availH > 80 ? availH / h : Infinity);
      if (!(scale > 0)) scale = 1;
    }
    const wrap = $("frame-wrap");
    wrap.style.width = `${w * scale}px`;
    wrap.style.height = `${h * scale}px`;
    wrap.dataset.scale = scale.toFixed(4);
    for (const b of $("zoom").querySelectorAll("button")) b.classList.toggle("active", b.dataset.zoom === String(state.zoom));
    if ($("frame").dataset.step === String(state.step)) renderOverlay(state.step);
  }

  function setZoom(zoom) {
    state.zoom = zoom;
    applyZoom();
    focusAction();
  }

  // Zoomed in, keep the step's action in view: its point, a gesture's middle, or the eye window.
  function focusAction() {
    const d = state.demo;
    if (!d || state.zoom === "fit") return;
    const t = state.step;
    const p = d.params ? d.params[t] : [0, 0, 0, 0];
    const mask = d.masks ? d.masks[t] : [0, 0, 0, 0];
    const r = d.eye_rect ? d.eye_rect[t] : [0, 0, 1, 1];
    let [fx, fy] = [(r[0] + r[2]) / 2, (r[1] + r[3]) / 2];
    if (maskIs(mask, POINT_MASK)) [fx, fy] = [p[0], p[1]];
    else if (maskIs(mask, GESTURE_MASK)) [fx, fy] = [(p[0] + p[2]) / 2, (p[1] + p[3]) / 2];
    const stage = $("stage");
    const wrap = $("frame-wrap");
    const x = wrap.offsetLeft + fx * wrap.clientWidth;
    const y = wrap.offsetTop + fy * wrap.clientHeight;
    const visible = x >= stage.scrollLeft + 40 && x <= stage.scrollLeft + stage.clientWidth - 40
      && y >= stage.scrollTop + 40 && y <= stage.scrollTop + stage.clientHeight - 40;
    if (!visible) stage.scrollTo({ left: x - stage.clientWidth / 2, top: y - stage.clientHeight / 2 });
  }

  /* ---------- wiring ---------- */

  function onKey(ev) {
    if (state.view !== "demo" || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const target = ev.target;
    const typing = (target.tagName === "INPUT" && target.type !== "range") || target.tagName === "SELECT" || target.tagName === "TEXTAREA";
    if (typing) return;
    const d = state.demo;
    const moves = { ArrowRight: state.step + 1, ArrowLeft: state.step - 1, Home: 0, End: d ? d.steps - 1 : 0 };
    if (ev.key in moves && d) {
      ev.preventDefault();
      goStep(moves[ev.key]);
    } else if (ev.key === "0" || ev.key === "f") {
      setZoom("fit");
    } else if (ev.key === "1" || ev.key === "2") {
      setZoom(ev.key);
    } else if (ev.key === "Escape") {
      navigate(null, null, 0);
    }
  }

  function wire() {
    document.addEventListener("keydown", onKey);
    window.addEventListener("popstate", route);
    const frame = $("frame");
    frame.addEventListener("load", frameShown);
    frame.addEventListener("error", () => {
      if (frame.getAttribute("src")) setStatus(`frame ${frame.dataset.pending} could not be loaded`, true);
      frameShown();
    });
    $("prev").addEventListener("click", () => goStep(state.step - 1));
    $("next").addEventListener("click", () => goStep(state.step + 1));
    $("scrubber").addEventListener("input", (ev) => goStep(Number(ev.target.value)));
    for (const b of $("zoom").querySelectorAll("button")) b.addEventListener("click", () => setZoom(b.dataset.zoom));
    for (const id of ["back-link", "home-link"]) {
      $(id).addEventListener("click", (ev) => {
        ev.preventDefault();
        navigate(null, null, 0);
      });
    }
    for (const id of ["filter-text", "filter-source", "filter-type", "filter-directory", "filter-success"]) {
      $(id).addEventListener("input", () => {
        state.shown = PAGE_ROWS;
        renderList();
      });
    }
    $("show-more").addEventListener("click", () => {
      state.shown += PAGE_ROWS;
      renderList();
    });
    new ResizeObserver(() => {
      if (state.view === "demo" && state.zoom === "fit") applyZoom();
    }).observe($("stage"));
  }

  wire();
  route();
})();
