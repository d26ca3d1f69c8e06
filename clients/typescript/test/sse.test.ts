// The SSE parser against the standard's rules, fed whole and in pieces.

import assert from "node:assert/strict";
import { test } from "node:test";
import { SSEParser, type SSEFrame } from "../dist/index.js";

const stream =
  "\ufeffretry: 1500\n: connected\n\n" +
  'id: 1\nevent: reset\ndata: {"a":1}\n\n' +
  "data:no space\r\ndata:  two spaces\r\n\r\n" + // CRLF, multi-line data
  "id: 2\revent: leader.begin\rdata: x\r\r" + // CR alone
  "event: ignored-no-data\n\n" +
  "retry: soon\nid\ndata: y\n\n" + // bad retry ignored; empty id resets
  "data: é→😀\n\n" + // several bytes per character, split across chunks below
  "id: 9\ndata: cut off";

const want: SSEFrame[] = [
  { id: "1", hasId: true, event: "reset", data: '{"a":1}' },
  { id: "1", hasId: false, event: "message", data: "no space\n two spaces" },
  { id: "2", hasId: true, event: "leader.begin", data: "x" },
  { id: "", hasId: true, event: "message", data: "y" },
  { id: "", hasId: false, event: "message", data: "é→😀" },
];

function parse(chunks: Uint8Array[]): { frames: SSEFrame[]; parser: SSEParser } {
  const parser = new SSEParser();
  const frames = chunks.flatMap((c) => parser.push(c));
  return { frames, parser };
}

test("the SSE parser follows the standard", () => {
  const bytes = new TextEncoder().encode(stream);
  const { frames, parser } = parse([bytes]);
  assert.deepEqual(frames, want);
  assert.equal(parser.retryMs, 1500);
  assert.equal(parser.lastId, "9", "the id of a message cut off by the end still counts as seen");
});

test("the SSE parser gives the same frames however the stream is cut", () => {
  const bytes = new TextEncoder().encode(stream);
  // One byte at a time: every CR/LF pair and every UTF-8 sequence is split.
  const single = parse([...bytes].map((b) => Uint8Array.of(b)));
  assert.deepEqual(single.frames, want);
  // Random cuts from a fixed seed.
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed / 0x7fffffff);
  for (let round = 0; round < 200; round++) {
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; ) {
      const n = 1 + Math.floor(rand() * 12);
      chunks.push(bytes.subarray(i, i + n));
      i += n;
    }
    assert.deepEqual(parse(chunks).frames, want, `round ${round}`);
  }
});

test("the SSE parser refuses a line over its limit", () => {
  const parser = new SSEParser("", 16);
  assert.deepEqual(parser.push("data: short\n\n"), [{ id: "", hasId: false, event: "message", data: "short" }]);
  assert.throws(() => parser.push("data: " + "x".repeat(32)), /longer than 16/);
});

test("the SSE parser ignores ids holding NUL and keeps the last id across messages", () => {
  const parser = new SSEParser("5");
  const frames = parser.push("id: a\u0000b\ndata: one\n\nid: 6\n\ndata: two\n\n");
  assert.deepEqual(frames, [
    { id: "5", hasId: false, event: "message", data: "one" },
    { id: "6", hasId: false, event: "message", data: "two" },
  ]);
});

test("the SSE parser survives arbitrary input", () => {
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
  const alphabet = ["\n", "\r", ":", " ", "data", "id", "event", "retry", "\u0000", "\ufeff", "x", "é", "7"];
  for (let round = 0; round < 500; round++) {
    let stream = "";
    for (let i = rand(40); i > 0; i--) stream += alphabet[rand(alphabet.length)];
    const bytes = new TextEncoder().encode(stream);
    const parser = new SSEParser();
    const frames: SSEFrame[] = [];
    for (let i = 0; i < bytes.length; ) {
      const n = 1 + rand(5);
      frames.push(...parser.push(bytes.subarray(i, i + n)));
      i += n;
    }
    assert.deepEqual(frames, new SSEParser().push(bytes), `round ${round}: ${JSON.stringify(stream)}`);
    for (const f of frames) assert.ok(!f.id.includes("\u0000"), `an id with NUL from ${JSON.stringify(stream)}`);
  }
});
