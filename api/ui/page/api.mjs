// api.mjs: requests to the gateway with the tab's API token, and the
// problem documents of those that fail.

const TOKEN_KEY = "elector.apiToken";

let clockOffset = 0; // the gateway's clock minus ours, in ms
let unauthenticated = () => {};

// token is the API token of this tab; "" when none was given.
export const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

// setToken keeps value as the tab's API token, or forgets it when empty.
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// onUnauthenticated sets what to do when the gateway answers 401.
export function onUnauthenticated(fn) {
  unauthenticated = fn;
}

export function authHeaders(extra) {
  const h = new Headers(extra);
  if (token()) h.set("Authorization", `Bearer ${token()}`);
  return h;
}

// ApiError is a failed request, with the problem document's detail.
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

// errorOf reads the problem document of a failed response.
export async function errorOf(res) {
  let problem = {};
  try {
    problem = (await res.json()) || {};
  } catch {
    // not a problem document: the status says it all
  }
  const err = new ApiError(res.status, problem);
  if (res.status === 401) unauthenticated(err);
  return err;
}

// noteClock reads the gateway's clock from a response's Date header, so
// that expiry times count down right on a machine whose clock is off. The
// header has whole seconds: differences under 1.5s are its rounding.
export function noteClock(res) {
  const d = Date.parse(res.headers.get("Date") || "");
  if (Number.isNaN(d)) return;
  const off = d + 500 - Date.now();
  clockOffset = Math.abs(off) < 1500 ? 0 : off;
}

// now is the gateway's time, in ms since the epoch.
export const now = () => Date.now() + clockOffset;

// api sends one request and returns the JSON answer, or throws an
// ApiError. Paths are relative, so that the page works behind a proxy that
// serves the gateway under a prefix.
export async function api(method, path, body, signal) {
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

export const electionPath = (name) => `v1/elections/${encodeURIComponent(name)}`;
