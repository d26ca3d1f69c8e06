// model.mjs: an election as the page knows it. A `reset` event's data is
// the whole state; apply changes it as each later event says. Events do
// not carry the candidates' expiry times, positions or settings: the page
// reads those again from the API after each event.

// holdersOf is every holder of state s, the longest-standing first: its
// holders, or its leader alone (an election of one holder lists none).
export function holdersOf(s) {
  if (!s) return [];
  if (s.holders) return s.holders;
  return s.leader ? [s.leader] : [];
}

// slots is the election's holders setting: how many may hold at once.
export function slots(s) {
  return (s && s.settings && s.settings.holders) || 1;
}

// apply returns the state of election name after one event (type, and
// its payload p), changing state in place; state may be null before the
// election's first event. With several holders each holdership begins and
// ends on its own; leader is the longest-standing holder.
export function apply(state, name, type, p) {
  const d = p.data || {};
  const s = state || { election: name, term: d.term, leader: null, candidates: [] };
  const c = d.candidate || {};
  const cand = s.candidates.find((x) => x.id === c.id);
  const many = slots(s) > 1;
  switch (type) {
    case "leader.begin": {
      s.term = d.term;
      s.handover_until = undefined;
      if (!many || (s.transfer && s.transfer.to === c.id)) s.transfer = null; // completed, or dropped with the one leadership
      const holder = { id: c.id, term: d.term, metadata: c.metadata || {}, since: p.timestamp, expires_at: cand && cand.expires_at };
      const holders = many ? holdersOf(s).filter((h) => h.id !== c.id) : [];
      holders.push(holder);
      s.holders = many ? holders : undefined;
      s.leader = holders[0];
      for (const x of s.candidates) {
        if (x.id === c.id) Object.assign(x, { state: "leader", term: d.term });
        else if (!many && x.state === "leader") x.state = "follower";
      }
      break;
    }
    case "leader.end": {
      const holders = holdersOf(s).filter((h) => !(h.id === c.id && h.term === d.term));
      s.holders = many ? holders : undefined;
      s.leader = holders[0] || null;
      if (cand) cand.state = d.reason === "error" ? "error" : "follower";
      break;
    }
    case "candidate.joined":
      if (!cand) s.candidates.push({ id: c.id, state: "follower", metadata: c.metadata || {}, ttl: "", expires_at: "" });
      else if (cand.state === "error") cand.state = "follower";
      break;
    case "candidate.left":
      s.candidates = s.candidates.filter((x) => x.id !== c.id);
      break;
    case "leader.transfer":
      s.transfer = { to: c.id, from: d.previous && d.previous.id, reason: d.reason, requested_at: p.timestamp };
      break;
    case "leader.transfer_cancelled":
      s.transfer = null;
      break;
    default: // leader.error, and types this page does not know: listed only
  }
  return s;
}

// describe says what an event (type, and its payload's data d) means, in
// a line for people.
export function describe(type, d) {
  const id = d.candidate ? d.candidate.id : "?";
  switch (type) {
    case "leader.begin": {
      const prev = d.previous ? ` after ${d.previous.id} (term ${d.previous.term}, ${d.reason || "ended"})` : "";
      return `${id} leads, term ${d.term}${prev}`;
    }
    case "leader.end":
      return d.reason === "holders_reduced"
        ? `${id} stopped holding, term ${d.term}: fewer holders now (it stays in line)`
        : `${id} stopped leading, term ${d.term}: ${d.reason}`;
    case "leader.error": return `${id} reported an error: ${d.detail || "no detail"}`;
    case "candidate.joined": return d.reason === "rejoined" ? `${id} is back in line after its cooldown` : `${id} joined`;
    case "candidate.left": return `${id} left${d.reason ? `: ${d.reason}` : ""}`;
    case "leader.transfer": {
      const from = d.previous ? d.previous.id : "the leader";
      const why = d.reason === "preempted" ? " (preempted: it has a higher priority)" : "";
      return `${from} is asked to hand over to ${id}, term ${d.term}${why}`;
    }
    case "leader.transfer_cancelled":
      return d.reason === "cancelled"
        ? `the transfer to ${id} was cancelled; the leader goes on`
        : `the transfer to ${id} was dropped: ${id} ${d.reason === "error" ? "reported an error" : d.reason || "left"}`;
    case "reset": return "the stream started over from a snapshot (this page fell behind)";
    default: return `${type} of ${id}, term ${d.term}${d.reason ? `: ${d.reason}` : ""}`;
  }
}

// parseDuration reads a Go duration ("1m30s", "500ms") in ms; 0 if it
// cannot.
export function parseDuration(s) {
  const units = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, "µs": 1e-3, ns: 1e-6 };
  let ms = 0;
  for (const [, n, u] of String(s || "").matchAll(/(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)/g)) ms += Number(n) * units[u];
  return ms;
}

// span writes a length of time for people: "42s", "4m 05s", "1h 02m".
export function span(ms) {
  const sec = Math.max(0, Math.floor(ms / 1000));
  if (sec < 60) return `${sec}s`;
  if (sec < 3600) return `${Math.floor(sec / 60)}m ${String(sec % 60).padStart(2, "0")}s`;
  return `${Math.floor(sec / 3600)}h ${String(Math.floor(sec / 60) % 60).padStart(2, "0")}m`;
}
