// ui.mjs: elector's live view. It lists the elections and follows the
// chosen one (the part of the address after #) from its event stream: a
// `reset` snapshot, then the events as deltas. Heartbeats make no events,
// so the election and its candidates are read again every few seconds and
// after each event, for their expiry times. Requests carry the tab's API
// token, if one was given (events.mjs says why the stream is read with
// fetch).

import { api, authHeaders, electionPath, onUnauthenticated, setToken, token } from "./api.mjs";
import { follow } from "./events.mjs";
import { apply, describe } from "./model.mjs";
import { $, el, markSelected, renderElection, renderList, tick } from "./render.mjs";

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const MAX_EVENTS = 20;
const LIST_EVERY_MS = 5000;
const REFRESH_EVERY_MS = 5000;

let needsToken = false; // the gateway said 401: wait for a token
let listForbidden = false; // the token may not list every election
let listTimer = 0;

// view is the election on screen: its stream, its state, the last events,
// and whether the token may transfer leadership (null: not known yet).
let view = null;

// ---- Errors and the token -------------------------------------------------

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

onUnauthenticated((err) => {
  if (needsToken) return;
  needsToken = true;
  showTokenForm(true);
  showAlert(token()
    ? `The gateway refused this API token: ${err.message}. Enter another one.`
    : `This gateway needs an API token with the read scope: ${err.message}.`);
  $("token-input").focus();
});

function showTokenForm(show) {
  $("token-form").hidden = !show;
  $("token-set").hidden = show;
}

function useToken(value) {
  setToken(value);
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

// ---- The list of elections ------------------------------------------------

async function loadList() {
  if (needsToken || listForbidden) return;
  const note = $("elections-note");
  try {
    const doc = await api("GET", "v1/elections");
    const all = doc.elections || [];
    renderList(all, view && view.name);
    note.textContent = all.length ? "" : "No elections yet: one appears when a candidate campaigns.";
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

// ---- One election, live ---------------------------------------------------

function openElection(name) {
  if (view && view.name === name) return;
  closeElection();
  const v = {
    name, abort: new AbortController(), state: null, events: [], gen: 0,
    canAdmin: null, timers: [], refreshTimer: 0,
  };
  view = v;
  $("placeholder").hidden = true;
  $("election").hidden = false;
  $("election-title").textContent = name;
  $("action-status").textContent = "";
  render();
  markSelected(name);
  follow(`${electionPath(name)}/events`, {
    signal: v.abort.signal,
    onEvent: (ev) => onEvent(v, ev),
    onStatus: (state, text) => setStream(v, state, text),
    onRefused: (err) => {
      if (err.status !== 401) showAlert(`Cannot follow ${name} (${err.status}): ${err.message}`);
    },
  }).catch((err) => setStream(v, "stopped", err.message));
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
  markSelected(null);
}

function render() {
  if (view) {
    renderElection(view, {
      transfer: (id, button) => transfer(view, id, button),
      cancel: (button) => cancelTransfer(view, button),
    });
  }
}

function setStream(v, state, text) {
  if (v !== view) return;
  const s = $("stream-status");
  s.dataset.state = state;
  s.textContent = text;
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
    v.state = apply(v.state, v.name, ev.type, payload);
    addEvent(v, payload);
    if (ev.type.startsWith("leader.")) $("announce").textContent = describe(ev.type, payload.data || {});
    scheduleRefresh(v);
    scheduleList();
  }
  render();
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
// carry. An answer that an event overtook is dropped: the event scheduled
// another refresh.
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
    settings: e.settings, term: e.term, leader: e.leader, holders: e.holders, handover_until: e.handover_until,
    transfer: e.transfer || null, candidates: list.candidates,
  });
  render();
}

// probeAdmin asks for the election's webhook subscriptions, which need the
// admin scope, to learn whether to offer transfers: a 401 or 403 means no.
// The answer itself is not used.
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

// transfer asks the gateway to move leadership to a follower. The page only
// asks: the gateway has the old leader end its leadership before the new
// one begins with the next term, so a click cannot make two leaders, nor
// can a click sent twice.
async function transfer(v, to, button) {
  button.disabled = true;
  const status = $("action-status");
  status.textContent = `Asking for leadership to move to ${to}…`;
  // With several holders, the one chosen in the select hands over.
  const from = $("transfer-from-row").hidden ? undefined : $("transfer-from").value;
  try {
    await api("POST", `${electionPath(v.name)}/transfer`, from ? { to, from } : { to });
    status.textContent = `Transfer to ${to} requested: ${from || "the leader"} hands over at its next heartbeat, or when its TTL runs out.`;
    if (v === view && v.state && !v.state.transfer) {
      v.state.transfer = { to, from, reason: "transferred", requested_at: new Date().toISOString() };
      render();
    }
  } catch (err) {
    status.textContent = "";
    showAlert(`Transfer to ${to} failed (${err.status}): ${err.message}`);
  } finally {
    button.disabled = false;
  }
}

// cancelTransfer asks the gateway to drop the pending transfer: the leader
// goes on leading. The gateway orders it with the leader's handover, so a
// click that comes too late finds nothing to cancel (409), never two
// leaders.
async function cancelTransfer(v, button) {
  button.disabled = true;
  const status = $("action-status");
  status.textContent = "Cancelling the transfer…";
  try {
    const e = await api("DELETE", `${electionPath(v.name)}/transfer`);
    status.textContent = `Transfer cancelled: ${e.leader ? e.leader.id : "the leader"} goes on leading.`;
    if (v === view && v.state) {
      v.state.transfer = null;
      render();
    }
  } catch (err) {
    status.textContent = "";
    showAlert(`Cancelling the transfer failed (${err.status}): ${err.message}`);
  } finally {
    button.disabled = false;
  }
}

// ---- Start ----------------------------------------------------------------

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
