// render.mjs: the page's elements, built from the state with DOM calls,
// never from markup, so that nothing a candidate sends can become markup.

import { now } from "./api.mjs";
import { describe, holdersOf, parseDuration, slots, span } from "./model.mjs";

export const $ = (id) => document.getElementById(id);

// el builds an element: attributes (on* as listeners), then children
// (strings become text).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  e.append(...children.flat().filter((c) => c !== undefined && c !== null));
  return e;
}

const clock = (iso) => new Date(iso).toLocaleTimeString([], { hour12: false });

// renderList shows the elections, marking selected.
export function renderList(elections, selected) {
  $("elections").replaceChildren(...elections.map((e) => {
    const hs = e.holders || [];
    const who = hs.length > 1
      ? `${hs.map((h) => h.id).join(", ")} hold`
      : e.leader ? `${e.leader.id} leads, term ${e.leader.term}` : "no leader";
    const n = `${e.candidates} candidate${e.candidates === 1 ? "" : "s"}`;
    return el("li", {},
      el("a", { href: `#${e.name}`, "aria-current": selected === e.name ? "page" : null, "data-election": e.name },
        el("span", { class: "name" }, e.name),
        el("span", { class: "muted" }, `${who} · ${n}`)));
  }));
}

// markSelected marks the election selected in the list.
export function markSelected(selected) {
  for (const a of $("elections").querySelectorAll("a")) {
    if (a.dataset.election === selected) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

// renderElection shows the view v: v.state, v.events, and when v.canAdmin
// the transfer buttons, which call actions.transfer(id, button), or while
// a transfer is pending its cancel button, which calls
// actions.cancel(button).
export function renderElection(v, actions) {
  const s = v.state;
  const section = $("election");
  section.dataset.admin = v.canAdmin === null ? "unknown" : v.canAdmin ? "yes" : "no";
  section.classList.toggle("can-admin", v.canAdmin === true);
  $("settings").textContent = s && s.settings
    ? `term ${s.term} · ${slots(s) > 1 ? `${slots(s)} holders · ` : ""}handover delay ${s.settings.handover_delay} · error cooldown ${s.settings.error_cooldown}`
    : s ? `term ${s.term}` : "";
  renderLeader(s);
  renderTransferFrom(v);
  renderTransfer(v, actions.cancel);
  renderCandidates(v, actions.transfer);
  $("events").replaceChildren(...(v.events.length
    ? v.events.map(eventItem)
    : [el("li", { class: "muted" }, "None since this page opened.")]));
  tick();
}

function renderLeader(s) {
  const box = $("leader");
  $("leader-title").textContent = slots(s) > 1 ? `Holders (${holdersOf(s).length} of ${slots(s)})` : "Leader";
  if (!s) {
    box.replaceChildren(el("p", { class: "muted" }, "Waiting for the election's first events…"));
    return;
  }
  const l = s.leader;
  const held = s.handover_until
    ? [` A handover delay holds the next ${slots(s) > 1 ? "holder" : "leader"} back for `, el("span", { "data-until": s.handover_until }), "."]
    : [];
  if (!l) {
    box.replaceChildren(el("p", { class: "none" }, slots(s) > 1 ? "Nobody holds." : "Nobody leads.", ...held));
    return;
  }
  if (slots(s) > 1) {
    box.replaceChildren(el("ol", { class: "holders" }, holdersOf(s).map((h) => el("li", { "data-holder": h.id },
      el("dl", { class: "facts" },
        el("dt", {}, "Candidate"), el("dd", { class: "leader-id" }, h.id),
        el("dt", {}, "Term"), el("dd", { class: "leader-term" }, String(h.term)),
        el("dt", {}, "Since"), el("dd", {}, h.since ? [clock(h.since), " (", el("span", { "data-since": h.since }), " ago)"] : "—"),
        el("dt", {}, "Expires in"), el("dd", {}, h.expires_at ? el("span", { "data-until": h.expires_at }) : "—"),
        el("dt", {}, "Metadata"), el("dd", {}, metadata(h.metadata)))))),
    held.length ? el("p", { class: "muted" }, ...held) : null);
    return;
  }
  box.replaceChildren(el("dl", { class: "facts" },
    el("dt", {}, "Candidate"), el("dd", { class: "leader-id" }, l.id),
    el("dt", {}, "Term"), el("dd", { class: "leader-term" }, String(l.term)),
    el("dt", {}, "Since"), el("dd", {}, l.since ? [clock(l.since), " (", el("span", { "data-since": l.since }), " ago)"] : "—"),
    el("dt", {}, "Expires in"), el("dd", {}, l.expires_at ? el("span", { "data-until": l.expires_at }) : "—"),
    el("dt", {}, "Metadata"), el("dd", {}, metadata(l.metadata))));
}

// renderTransfer shows the pending transfer, if any, with a button to
// cancel it for a token that may.
function renderTransfer(v, onCancel) {
  const box = $("transfer");
  const t = v.state && v.state.leader && v.state.transfer;
  if (!t) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const why = t.reason === "preempted" ? " (it has a higher priority)" : "";
  box.hidden = false;
  box.replaceChildren(
    el("p", {},
      el("strong", {}, "Transfer pending: "),
      `${t.from || v.state.leader.id} is asked to hand over to `, el("span", { class: "transfer-to" }, t.to), why,
      t.requested_at ? ` since ${clock(t.requested_at)}` : "",
      `. It hands over at its next heartbeat; if it does not, ${t.to} leads when its TTL runs out.`),
    v.canAdmin
      ? el("button", {
        type: "button", class: "cancel-transfer", "aria-label": `Cancel the transfer to ${t.to}`,
        onclick: (e) => onCancel(e.currentTarget),
      }, "Cancel transfer")
      : null);
}

// renderTransferFrom offers, with several holders, the choice of the
// holder that a transfer replaces.
function renderTransferFrom(v) {
  const row = $("transfer-from-row");
  const hs = holdersOf(v.state);
  if (slots(v.state) <= 1 || hs.length < 2) {
    row.hidden = true;
    return;
  }
  const select = $("transfer-from");
  const keep = select.value;
  select.replaceChildren(...hs.map((h) => el("option", { value: h.id }, `${h.id} (term ${h.term})`)));
  select.value = hs.some((h) => h.id === keep) ? keep : hs[hs.length - 1].id;
  row.hidden = false;
}

function renderCandidates(v, onTransfer) {
  const s = v.state;
  const many = slots(s) > 1;
  const pending = s && s.leader && s.transfer ? s.transfer.to : null;
  // A keyboard user on a transfer button keeps the focus across renders.
  const focused = document.activeElement && document.activeElement.dataset.to;
  let pos = 0; // as the gateway counts: 0 leads, 1 is next; -1 cools down
  const rows = (s ? s.candidates : []).map((c) => {
    // No second transfer while one is pending: the gateway would refuse it.
    const offer = v.canAdmin && s.leader && c.state === "follower" && !pending;
    const ttl = parseDuration(c.ttl);
    const at = c.state === "error" ? -1 : pos++;
    return el("tr", { "data-id": c.id, "data-state": c.state },
      el("td", {}, c.state === "leader" ? (many ? "holds" : "leads") : at < 0 ? "cooling down" : String(at)),
      el("th", { scope: "row" }, c.id),
      el("td", {}, el("span", { class: `state state-${c.state}` }, c.state),
        c.id === pending ? el("span", { class: "state state-target" }, "transfer target") : null,
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
          onclick: (e) => onTransfer(c.id, e.currentTarget),
        }, many ? "Make holder" : "Make leader")
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
  return el("li", { "data-type": p.type },
    el("time", { datetime: p.timestamp }, clock(p.timestamp)),
    el("span", { class: `type type-${p.type.replace(".", "-")}` }, p.type),
    el("span", {}, describe(p.type, p.data || {})));
}

// tick counts the expiry times down and the leader's time up; the page
// calls it once a second.
export function tick() {
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
