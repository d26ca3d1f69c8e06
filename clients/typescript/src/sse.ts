// A streamed parser of text/event-stream, as the HTML standard's "event
// stream interpretation" defines it, fed chunk by chunk.

/** One dispatched message of an event stream. */
export interface SSEFrame {
  /** The last event id after this message (sticky across messages, as the standard says). */
  id: string;
  /** Whether this message itself carried an id field. */
  hasId: boolean;
  /** The event field, "message" when the stream named none. */
  event: string;
  data: string;
}

/** MAX_SSE_LINE bounds one line of an event stream, in characters; the gateway's lines are a few kilobytes at most. */
export const MAX_SSE_LINE = 1 << 20;

/**
 * SSEParser turns the chunks of an event stream into messages. Lines may
 * end in CRLF, LF or CR, also split across chunks; comments and messages
 * without data are consumed silently; a message cut off by the end of the
 * stream is never returned. It keeps the last event id and the latest
 * retry hint.
 */
export class SSEParser {
  /** The last event id seen, including ids of messages without data. */
  lastId: string;
  /** The latest valid retry field, in milliseconds; 0 until the stream sends one. */
  retryMs = 0;

  readonly #decoder = new TextDecoder();
  readonly #maxLine: number;
  #buf = "";
  #skipLF = false;
  #first = true;
  #data: string[] = [];
  #hasData = false;
  #hasId = false;
  #event = "";

  constructor(lastId = "", maxLine = MAX_SSE_LINE) {
    this.lastId = lastId;
    this.#maxLine = maxLine;
  }

  /**
   * push feeds a chunk (bytes, decoded as UTF-8 across chunks, or text) and
   * returns the messages it completes. It throws when a line grows past
   * the limit.
   */
  push(chunk: Uint8Array | string): SSEFrame[] {
    let text = typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    if (this.#first && text.length > 0) {
      this.#first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const out: SSEFrame[] = [];
    let start = 0;
    if (this.#skipLF && text.length > 0) {
      this.#skipLF = false;
      if (text[0] === "\n") start = 1;
    }
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (c !== "\n" && c !== "\r") continue;
      const line = this.#buf + text.slice(start, i);
      this.#buf = "";
      if (c === "\r") {
        if (i + 1 < text.length) {
          if (text[i + 1] === "\n") i++;
        } else {
          this.#skipLF = true; // a LF that may start the next chunk ends the same line
        }
      }
      start = i + 1;
      const frame = this.#line(line);
      if (frame) out.push(frame);
    }
    this.#buf += text.slice(start);
    if (this.#buf.length > this.#maxLine) {
      throw new Error(`elector: event stream line longer than ${this.#maxLine} characters`);
    }
    return out;
  }

  #line(line: string): SSEFrame | undefined {
    if (line === "") {
      if (!this.#hasData) {
        this.#event = "";
        this.#hasId = false;
        return undefined;
      }
      const frame = { id: this.lastId, hasId: this.#hasId, event: this.#event || "message", data: this.#data.join("\n") };
      this.#data = [];
      this.#hasData = false;
      this.#hasId = false;
      this.#event = "";
      return frame;
    }
    if (line[0] === ":") return undefined;
    const colon = line.indexOf(":");
    let field = line;
    let value = "";
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
    }
    switch (field) {
      case "event":
        this.#event = value;
        break;
      case "data":
        this.#data.push(value);
        this.#hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) {
          this.lastId = value;
          this.#hasId = true;
        }
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
    }
    return undefined;
  }
}
