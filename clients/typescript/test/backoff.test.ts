// The back-off and Retry-After, with the Go client's vectors.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRetryAfter, retryDelay } from "../dist/index.js";

test("retryDelay doubles with jitter and honours Retry-After", () => {
  const cases: { name: string; failures: number; retryAfter?: number; jitter?: number; want: number }[] = [
    { name: "first failure, no jitter", failures: 1, want: 50 },
    { name: "first failure, most jitter", failures: 1, jitter: 0.999, want: 99.95 },
    { name: "third failure doubles twice", failures: 3, jitter: 0.5, want: 300 },
    { name: "capped at the limit", failures: 40, jitter: 0.999, want: 1999 },
    { name: "Retry-After lengthens the wait", failures: 1, retryAfter: 1000, want: 1000 },
    { name: "Retry-After is capped at the limit", failures: 1, retryAfter: 3_600_000, want: 2000 },
    { name: "a shorter Retry-After does not shorten it", failures: 3, retryAfter: 1, want: 200 },
  ];
  for (const c of cases) {
    const got = retryDelay(100, 2000, c.failures, c.retryAfter ?? 0, c.jitter ?? 0);
    assert.ok(Math.abs(got - c.want) < 1e-9, `${c.name}: ${got}, want ${c.want}`);
  }
});

test("parseRetryAfter reads seconds and dates", () => {
  const now = Date.UTC(2026, 10, 23, 10, 0, 0);
  const cases: [string, string, number][] = [
    ["absent", "", 0],
    ["seconds", "2", 2000],
    ["date", new Date(now + 90_000).toUTCString(), 90_000],
    ["past date", new Date(now - 60_000).toUTCString(), 0],
    ["garbage", "soon", 0],
    ["negative", "-3", 0],
  ];
  for (const [name, value, want] of cases) assert.equal(parseRetryAfter(value, now), want, name);
});
