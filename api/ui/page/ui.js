// ui.js: elector's live view. It lists the elections and follows the
// chosen one (the part of the address after #) from its event stream:
// a `reset` snapshot, then the events as deltas. Heartbeats make no events,
// so the candidates' expiry times are read again every few seconds and
// after each event. Requests carry the API token of this tab, if one was
// given, as a bearer token: that is why the stream is read with fetch, which
// can send headers, and not with EventSource, which cannot.
"use strict";

(() => {
  const TOKEN_KEY = "elector.apiToken";
  const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
  const MAX_EVENTS = 20;
  const LIST_EVERY_MS = 5000;
  const REFRESH_EVERY_MS = 5000;
  const DEFAULT_RETRY_MS = 2000;
  const MAX_RETRY_MS = 30000;

  const $ = (id) => document.getElementById(id);

  // el builds an element: attributes (on* as listeners), then children
  // (strings become text, never markup).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    e.append(...children.flat().filter((c) => c !== undefined && c !== null));
    return e;
  }

  // ---- The API ----------------------------------------------------------

  let needsToken = false; // the gateway said 401: wait for a token
  let clockOffset = 0; // the gateway's clock minus ours, in ms

  const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

  function authHeaders(extra) {
    const h = new Headers(extra);
    if (token()) h.set("Authorization", `Bearer ${token()}`);
    return h;
  }

  // ApiError is a failed request, with the problem document's detail.
  class ApiError extends Error {
    constructor(status, problem) {
      super(problem.detail || problem.title || `HTTP ${status}`);
      this.status = status;
      this.problem = problem;
    }
  }

  async function errorOf(res) {
    let problem = {};
    try {
      problem = await res.json();
    } catch {
      // not a problem document: the status says it all
    }
    const err = new ApiError(res.status, problem || {});
    if (res.status === 401) askForToken(err);
    return err;
  }

  // noteClock reads the gateway's clock from a response's Date header, so
  // that expiry times count down right on a machine whose clock is off.
  // The header has whole seconds: differences under 1.5s are its rounding.
  function noteClock(res) {
    const d = Date.parse(res.headers.get("Date") || "");
    if (Number.isNaN(d)) return;
    const off = d + 500 - Date.now();
    clockOffset = Math.abs(off) < 1500 ? 0 : off;
  }

  const now = () => Date.now() + clockOffset;

  // api sends one request; paths are relative, so that the page works
  // behind a proxy that serves the gateway under a prefix.
  async function api(method, path, body, signal) {
    const init = { method, headers: authHeaders({ Accept: "application/json" }), cache: "no-store", signal };
    if (body !== undefined) {
      init.headers.set("Content-Type", "application/json");
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    noteClock(res);
    if (!res.ok) throw await errorOf(res);
    return res.status === 204 ? null : res.json();
  }

  const electionPath = (name) => `v1/elections/${encodeURIComponent(name)}`;

  // ---- Errors and the token ---------------------------------------------

  function showAlert(message) {
    const box = $("alert");
    box.replaceChildren(
      el("span", {}, message),
      el("button", { type: "button", onclick: () => { box.hidden = true; } }, "Dismiss"),
    );
    box.hidden = false;
  }

  function clearAlert() {
    $("alert").hidden = true;
  }

  function askForToken(err) {
    if (needsToken) return;
    needsToken = true;
    showTokenForm(true);
    showAlert(token()
      ? `The gateway refused this API token: ${err.message}. Enter another one.`
      : `This gateway needs an API token with the read scope: ${err.message}.`);
    $("token-input").focus();
  }

  function showTokenForm(show) {
    $("token-form").hidden = !show;
    $("token-set").hidden = show;
  }

  function useToken(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
    needsToken = false;
    listForbidden = false;
    clearAlert();
    showTokenForm(!value);
    $("token-input").value = "";
    const name = view && view.name;
    closeElection();
    loadList();
    if (name) openElection(name);
  }

  // ---- The list of elections --------------------------------------------

  let listForbidden = false; // the token may not list every election
  let listTimer = 0;

  async function loadList() {
    if (needsToken || listForbidden) return;
    const note = $("elections-note");
    try {
      const doc = await api("GET", "v1/elections");
      renderList(doc.elections || []);
      note.textContent = doc.elections && doc.elections.length ? "" : "No elections yet: one appears when a candidate campaigns.";
    } catch (err) {
      if (err.status === 403) {
        listForbidden = true;
        $("elections").replaceChildren();
        note.textContent = `This token may not list every election (${err.message}). Open one by name.`;
      } else if (err.status !== 401) {
        note.textContent = `Could not list the elections: ${err.message}`;
      }
    }
  }

  function scheduleList() {
    clearTimeout(listTimer);
    listTimer = setTimeout(loadList, 300);
  }

  function renderList(elections) {
    const items = elections.map((e) => {
      const who = e.leader ? `${e.leader.id} leads, term ${e.leader.term}` : "no leader";
      const n = `${e.candidates} candidate${e.candidates === 1 ? "" : "s"}`;
      return el("li", {},
        el("a", { href: `#${e.name}`, "aria-current": view && view.name === e.name ? "page" : null, "data-election": e.name },
          el("span", { class: "name" }, e.name),
          el("span", { class: "muted" }, `${who} · ${n}`)));
    });
    $("elections").replaceChildren(...items);
  }

  function markSelected() {
    for (const a of $("elections").querySelectorAll("a")) {
      if (view && a.dataset.election === view.name) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }

  // ---- One election, live -----------------------------------------------

  // view is the election on screen: its stream, its state (a reset
  // snapshot with the events applied), the last events, and whether the
  // token may transfer leadership (null: not known yet).
  let view = null;

  function openElection(name) {
    if (view && view.name === name) return;
    closeElection();
    view = {
      name, abort: new AbortController(), state: null, events: [], gen: 0,
      lastId: "", canAdmin: null, timers: [], refreshTimer: 0,
    };
    $("placeholder").hidden = true;
    $("election").hidden = false;
    $("election-title").textContent = name;
    $("action-status").textContent = "";
    render();
    markSelected();
    const v = view;
    follow(v).catch((err) => setStream(v, "stopped", err.message));
    probeAdmin(v);
    v.timers.push(setInterval(() => refresh(v), REFRESH_EVERY_MS));
  }

  function closeElection() {
    if (!view) return;
    view.abort.abort();
    view.timers.forEach(clearInterval);
    clearTimeout(view.refreshTimer);
    view = null;
    $("election").hidden = true;
    $("placeholder").hidden = false;
    markSelected();
  }

  function setStream(v, state, text) {
    if (v !== view) return;
    const s = $("stream-status");
    s.dataset.state = state;
    s.textContent = text;
  }

  const sleep = (ms, signal) => new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });

  // follow reads the election's event stream until the view closes,
  // reconnecting with Last-Event-ID after the gateway's retry hint (longer
  // after each failure in a row). It gives up on answers a retry cannot
  // change (401, 403, 400) and says why.
  async function follow(v) {
    const signal = v.abort.signal;
    let retry = DEFAULT_RETRY_MS;
    let failures = 0;
    while (!signal.aborted) {
      try {
        const headers = authHeaders({ Accept: "text/event-stream" });
        if (v.lastId) headers.set("Last-Event-ID", v.lastId);
        setStream(v, "connecting", v.lastId ? "reconnecting…" : "connecting…");
        const res = await fetch(`${electionPath(v.name)}/events`, { headers, cache: "no-store", signal });
        noteClock(res);
        if (!res.ok) {
          const err = await errorOf(res);
          if (res.status < 500 && res.status !== 408 && res.status !== 429) {
            setStream(v, "stopped", "not following");
            if (res.status !== 401) showAlert(`Cannot follow ${v.name} (${res.status}): ${err.message}`);
            return;
          }
          throw err;
        }
        setStream(v, "live", "live");
        failures = 0;
        const parser = eventStreamParser(v.lastId, (ev) => onEvent(v, ev), (ms) => { retry = ms; });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(value);
          v.lastId = parser.lastId;
        }
        // The gateway ended the stream (it is shutting down, or this page
        // fell behind): resume where it was.
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        setStream(v, "reconnecting", `connection lost: ${err.message}`);
      }
      if (signal.aborted) return;
      const wait = Math.min(retry * 2 ** Math.max(0, failures - 1), MAX_RETRY_MS);
      setStream(v, "reconnecting", `reconnecting in ${Math.round(wait / 1000)}s`);
      await sleep(wait, signal);
    }
  }

  // eventStreamParser parses text/event-stream as the HTML standard says:
  // lines end with CRLF, LF or CR; "field: value"; a blank line dispatches
  // the event; lines starting with ":" are comments. The last id seen
  // stays across events, to resume from.
  function eventStreamParser(lastId, onEvent, onRetry) {
    let buf = "";
    let type = "";
    let data = [];
    let id = lastId;
    function line(l) {
      if (l === "") {
        if (data.length > 0) onEvent({ type: type || "message", data: data.join("\n"), id });
        type = "";
        data = [];
        return;
      }
      if (l.startsWith(":")) return;
      const c = l.indexOf(":");
      const field = c < 0 ? l : l.slice(0, c);
      let value = c < 0 ? "" : l.slice(c + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
      else if (field === "id" && !value.includes("\0")) id = value;
      else if (field === "retry" && /^\d+$/.test(value)) onRetry(Number(value));
    }
    return {
      get lastId() { return id; },
      push(text) {
        buf += text;
        for (;;) {
          const i = buf.search(/[\r\n]/);
          if (i < 0) return;
          if (buf[i] === "\r" && i === buf.length - 1) return; // maybe half of a CRLF
          const end = buf.startsWith("\r\n", i) ? i + 2 : i + 1;
          const l = buf.slice(0, i);
          buf = buf.slice(end);
          line(l);
        }
      },
    };
  }

  function onEvent(v, ev) {
    if (v !== view) return;
    let payload;
    try {
      payload = JSON.parse(ev.data);
    } catch {
      showAlert(`The event stream sent an event that is not JSON: ${ev.data.slice(0, 200)}`);
      return;
    }
    v.gen++;
    if (ev.type === "reset") {
      const resync = v.state !== null;
      v.state = payload.data;
      if (resync) addEvent(v, { type: "reset", timestamp: payload.timestamp, data: payload.data });
    } else {
      apply(v, ev.type, payload);
      addEvent(v, payload);
      if (ev.type.startsWith("leader.")) $("announce").textContent = describe(ev.type, payload.data || {});
      scheduleRefresh(v);
      scheduleList();
    }
    render();
  }

  // apply changes the view's state as one event says. The candidates'
  // expiry times are not in events: refresh reads them again.
  function apply(v, type, p) {
    const d = p.data || {};
    const s = v.state || (v.state = { election: v.name, term: d.term, leader: null, candidates: [] });
    const c = d.candidate || {};
    const cand = s.candidates.find((x) => x.id === c.id);
    switch (type) {
      case "leader.begin":
        s.term = d.term;
        s.handover_until = undefined;
        s.leader = { id: c.id, term: d.term, metadata: c.metadata || {}, since: p.timestamp, expires_at: cand && cand.expires_at };
        for (const x of s.candidates) {
          if (x.id === c.id) Object.assign(x, { state: "leader", term: d.term });
          else if (x.state === "leader") x.state = "follower";
        }
        break;
      case "leader.end":
        if (s.leader && s.leader.id === c.id) s.leader = null;
        if (cand) cand.state = d.reason === "error" ? "error" : "follower";
        break;
      case "candidate.joined":
        if (!cand) s.candidates.push({ id: c.id, state: "follower", metadata: c.metadata || {}, ttl: "", expires_at: "" });
        else if (cand.state === "error") cand.state = "follower";
        break;
      case "candidate.left":
        s.candidates = s.candidates.filter((x) => x.id !== c.id);
        break;
      default: // leader.error, and types this page does not know: listed only
    }
  }

  function addEvent(v, p) {
    v.events.unshift(p);
    v.events.length = Math.min(v.events.length, MAX_EVENTS);
  }

  function scheduleRefresh(v) {
    clearTimeout(v.refreshTimer);
    v.refreshTimer = setTimeout(() => refresh(v), 250);
  }

  // refresh reads the election and its candidates again: their expiry
  // times, positions, settings and any handover delay, which events do not
  // carry. An answer that an event overtook is dropped: the event
  // scheduled another refresh.
  async function refresh(v) {
    if (v !== view || needsToken || document.hidden) return;
    const gen = v.gen;
    let e;
    let list;
    try {
      [e, list] = await Promise.all([
        api("GET", electionPath(v.name), undefined, v.abort.signal),
        api("GET", `${electionPath(v.name)}/candidates`, undefined, v.abort.signal),
      ]);
    } catch (err) {
      if (err.status !== 404 || !v.state) return; // the stream says what is wrong, or will
      e = { settings: v.state.settings, term: v.state.term, leader: null };
      list = { candidates: [] };
    }
    if (v !== view || gen !== v.gen || !v.state) return;
    Object.assign(v.state, {
      settings: e.settings, term: e.term, leader: e.leader, handover_until: e.handover_until,
      candidates: list.candidates,
    });
    render();
  }

  // probeAdmin asks for the election's webhook subscriptions, which need
  // the admin scope, to learn whether to offer transfers: a 401 or 403
  // means no. The answer itself is not used.
  async function probeAdmin(v) {
    let ok = false;
    try {
      const res = await fetch(`${electionPath(v.name)}/subscriptions`, {
        headers: authHeaders({ Accept: "application/json" }), cache: "no-store", signal: v.abort.signal,
      });
      ok = res.status !== 401 && res.status !== 403;
    } catch {
      ok = false;
    }
    if (v !== view) return;
    v.canAdmin = ok;
    render();
  }

  // transfer asks the gateway to move leadership to a follower. The page
  // only asks: the gateway has the old leader end its leadership before
  // the new one begins with the next term, so a click cannot make two
  // leaders, nor can a click sent twice.
  async function transfer(v, to, button) {
    button.disabled = true;
    const status = $("action-status");
    status.textContent = `Asking for leadership to move to ${to}…`;
    try {
      await api("POST", `${electionPath(v.name)}/transfer`, { to });
      status.textContent = `Transfer to ${to} requested: the leader hands over at its next heartbeat, or when its TTL runs out.`;
    } catch (err) {
      status.textContent = "";
      showAlert(`Transfer to ${to} failed (${err.status}): ${err.message}`);
    } finally {
      button.disabled = false;
    }
  }

  // ---- Rendering --------------------------------------------------------

  function render() {
    if (!view) return;
    const v = view;
    const s = v.state;
    const section = $("election");
    section.dataset.admin = v.canAdmin === null ? "unknown" : v.canAdmin ? "yes" : "no";
    section.classList.toggle("can-admin", v.canAdmin === true);
    $("settings").textContent = s && s.settings
      ? `term ${s.term} · handover delay ${s.settings.handover_delay} · error cooldown ${s.settings.error_cooldown}`
      : s ? `term ${s.term}` : "";
    renderLeader(s);
    renderCandidates(v);
    $("events").replaceChildren(...(v.events.length
      ? v.events.map(eventItem)
      : [el("li", { class: "muted" }, "None since this page opened.")]));
    tick();
  }

  function renderLeader(s) {
    const box = $("leader");
    if (!s) {
      box.replaceChildren(el("p", { class: "muted" }, "Waiting for the election's first events…"));
      return;
    }
    const l = s.leader;
    if (!l) {
      const held = s.handover_until
        ? [" A handover delay holds the next leader back for ", el("span", { "data-until": s.handover_until }), "."]
        : [];
      box.replaceChildren(el("p", { class: "none" }, "Nobody leads.", ...held));
      return;
    }
    box.replaceChildren(el("dl", { class: "facts" },
      el("dt", {}, "Candidate"), el("dd", { class: "leader-id" }, l.id),
      el("dt", {}, "Term"), el("dd", { class: "leader-term" }, String(l.term)),
      el("dt", {}, "Since"), el("dd", {}, l.since ? [clock(l.since), " (", el("span", { "data-since": l.since }), " ago)"] : "—"),
      el("dt", {}, "Expires in"), el("dd", {}, l.expires_at ? el("span", { "data-until": l.expires_at }) : "—"),
      el("dt", {}, "Metadata"), el("dd", {}, metadata(l.metadata))));
  }

  function renderCandidates(v) {
    const s = v.state;
    // A keyboard user on a transfer button keeps the focus across renders.
    const focused = document.activeElement && document.activeElement.dataset.to;
    let pos = 0; // as the gateway counts: 0 leads, 1 is next; -1 cools down
    const rows = (s ? s.candidates : []).map((c) => {
      const offer = v.canAdmin && s.leader && s.leader.id !== c.id && c.state === "follower";
      const ttl = parseDuration(c.ttl);
      const at = c.state === "error" ? -1 : pos++;
      return el("tr", { "data-id": c.id, "data-state": c.state },
        el("td", {}, at === 0 && c.state === "leader" ? "leads" : at < 0 ? "cooling down" : String(at)),
        el("th", { scope: "row" }, c.id),
        el("td", {}, el("span", { class: `state state-${c.state}` }, c.state),
          c.state === "error" && c.cooldown_until ? el("span", { class: "muted" }, ` until ${clock(c.cooldown_until)}`) : null),
        el("td", {}, c.ttl || "…"),
        el("td", { class: "expiry" }, c.expires_at
          ? [el("span", { "data-until": c.expires_at }), ttl > 0
            ? el("progress", { max: ttl, value: ttl, "data-progress": c.expires_at, "aria-label": `time left of ${c.id}'s TTL` })
            : null]
          : "…"),
        el("td", {}, metadata(c.metadata)),
        el("td", { class: "admin-only" }, offer
          ? el("button", {
            type: "button", class: "transfer", "aria-label": `Transfer leadership to ${c.id}`, "data-to": c.id,
            onclick: (e) => transfer(v, c.id, e.currentTarget),
          }, "Make leader")
          : null));
    });
    $("candidates").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No candidates."))]));
    if (focused) {
      const b = [...$("candidates").querySelectorAll("button[data-to]")].find((x) => x.dataset.to === focused);
      if (b) b.focus();
    }
  }

  function metadata(m) {
    const entries = Object.entries(m || {});
    if (entries.length === 0) return el("span", { class: "muted" }, "—");
    return el("span", { class: "meta" }, entries.map(([k, val]) =>
      el("code", {}, `${k}=${typeof val === "string" ? val : JSON.stringify(val)}`)));
  }

  function eventItem(p) {
    const d = p.data || {};
    return el("li", { "data-type": p.type },
      el("time", { datetime: p.timestamp }, clock(p.timestamp)),
      el("span", { class: `type type-${p.type.replace(".", "-")}` }, p.type),
      el("span", {}, describe(p.type, d)));
  }

  function describe(type, d) {
    const id = d.candidate ? d.candidate.id : "?";
    switch (type) {
      case "leader.begin": {
        const prev = d.previous ? ` after ${d.previous.id} (term ${d.previous.term}, ${d.reason || "ended"})` : "";
        return `${id} leads, term ${d.term}${prev}`;
      }
      case "leader.end": return `${id} stopped leading, term ${d.term}: ${d.reason}`;
      case "leader.error": return `${id} reported an error: ${d.detail || "no detail"}`;
      case "candidate.joined": return d.reason === "rejoined" ? `${id} is back in line after its cooldown` : `${id} joined`;
      case "candidate.left": return `${id} left${d.reason ? `: ${d.reason}` : ""}`;
      case "reset": return "the stream started over from a snapshot (this page fell behind)";
      default: return JSON.stringify(d);
    }
  }

  const clock = (iso) => new Date(iso).toLocaleTimeString([], { hour12: false });

  // parseDuration reads a Go duration ("1m30s", "500ms") in ms; 0 if
  // it cannot.
  function parseDuration(s) {
    const units = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, "µs": 1e-3, ns: 1e-6 };
    let ms = 0;
    for (const [, n, u] of String(s || "").matchAll(/(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)/g)) ms += Number(n) * units[u];
    return ms;
  }

  function span(ms) {
    const sec = Math.max(0, Math.floor(ms / 1000));
    if (sec < 60) return `${sec}s`;
    if (sec < 3600) return `${Math.floor(sec / 60)}m ${String(sec % 60).padStart(2, "0")}s`;
    return `${Math.floor(sec / 3600)}h ${String(Math.floor(sec / 60) % 60).padStart(2, "0")}m`;
  }

  // tick counts the expiry times down and the leader's time up, once a
  // second.
  function tick() {
    const t = now();
    for (const e of document.querySelectorAll("[data-until]")) {
      const left = Date.parse(e.dataset.until) - t;
      e.textContent = left > 0 ? span(left) : "due";
      e.classList.toggle("soon", left < 3000);
    }
    for (const e of document.querySelectorAll("[data-progress]")) {
      e.value = Math.max(0, Date.parse(e.dataset.progress) - t);
    }
    for (const e of document.querySelectorAll("[data-since]")) {
      e.textContent = span(t - Date.parse(e.dataset.since));
    }
  }

  // ---- Start ------------------------------------------------------------

  function route() {
    let name = "";
    try {
      name = decodeURIComponent(location.hash.slice(1));
    } catch {
      // not percent-encoding: no election
    }
    if (NAME.test(name)) openElection(name);
    else closeElection();
  }

  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    useToken($("token-input").value.trim());
  });
  $("token-forget").addEventListener("click", () => useToken(""));
  $("open-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = $("open-input");
    const name = input.value.trim();
    if (!NAME.test(name)) {
      showAlert(`"${name}" is not an election name: lower-case letters, digits, "_" and "-", starting with a letter or digit, at most 63.`);
      input.focus();
      return;
    }
    clearAlert();
    location.hash = name;
  });
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      loadList();
      if (view) refresh(view);
    }
  });

  showTokenForm(!token());
  loadList();
  route();
  setInterval(() => { if (!document.hidden) loadList(); }, LIST_EVERY_MS);
  setInterval(tick, 1000);
})();
