// events.mjs: an event stream (text/event-stream) read with fetch, which,
// unlike EventSource, can send the API token in a header.

import { authHeaders, errorOf, noteClock } from "./api.mjs";

const DEFAULT_RETRY_MS = 2000;
const MAX_RETRY_MS = 30000;

// eventStreamParser parses text/event-stream as the HTML standard says:
// lines end with CRLF, LF or CR; a line is "field: value" or "field"; a
// blank line dispatches the event, if it has data; lines starting with ":"
// are comments. The last id seen stays across events (and starts as
// lastId): it is where to resume. push takes the text as it arrives, in
// pieces of any size.
export function eventStreamParser(lastId, onEvent, onRetry) {
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
  let afterCR = false; // the last piece ended with CR: an LF first is its pair
  return {
    get lastId() { return id; },
    push(text) {
      if (text === "") return;
      buf += afterCR && text.startsWith("\n") ? text.slice(1) : text;
      afterCR = false;
      for (;;) {
        const i = buf.search(/[\r\n]/);
        if (i < 0) return;
        if (buf[i] === "\r" && i === buf.length - 1) afterCR = true;
        const end = buf.startsWith("\r\n", i) ? i + 2 : i + 1;
        const l = buf.slice(0, i);
        buf = buf.slice(end);
        line(l);
      }
    },
  };
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

// follow reads the event stream at url until signal aborts, reconnecting
// with Last-Event-ID after the gateway's retry hint (longer after each
// failure in a row), so that no event is lost across a reconnection. It
// reports its state to onStatus ("connecting", "live", "reconnecting",
// "stopped", with a text for people) and each event to onEvent. It stops
// on answers that a retry cannot change (4xx but 408 and 429), after
// passing their ApiError to onRefused.
export async function follow(url, { signal, onEvent, onStatus, onRefused }) {
  let lastId = "";
  let retry = DEFAULT_RETRY_MS;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const headers = authHeaders({ Accept: "text/event-stream" });
      if (lastId) headers.set("Last-Event-ID", lastId);
      onStatus("connecting", lastId ? "reconnecting…" : "connecting…");
      const res = await fetch(url, { headers, cache: "no-store", signal });
      noteClock(res);
      if (!res.ok) {
        const err = await errorOf(res);
        if (res.status < 500 && res.status !== 408 && res.status !== 429) {
          onStatus("stopped", "not following");
          onRefused(err);
          return;
        }
        throw err;
      }
      onStatus("live", "live");
      failures = 0;
      const parser = eventStreamParser(lastId, onEvent, (ms) => { retry = ms; });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
        lastId = parser.lastId;
      }
      // The gateway ended the stream (it is shutting down, or this page
      // fell behind): resume where it was.
    } catch (err) {
      if (signal.aborted) return;
      failures++;
      onStatus("reconnecting", `connection lost: ${err.message}`);
    }
    if (signal.aborted) return;
    const wait = Math.min(retry * 2 ** Math.max(0, failures - 1), MAX_RETRY_MS);
    onStatus("reconnecting", `reconnecting in ${Math.round(wait / 1000)}s`);
    await sleep(wait, signal);
  }
}
