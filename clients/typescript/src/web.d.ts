// The web platform this library runs on, declared by hand: exactly the
// globals that Node ≥ 18, Deno, Bun and Cloudflare Workers all provide, and
// that the library uses (Web Crypto, which Node 18 lacks without a flag,
// is looked up on globalThis). The build compiles against ECMAScript (lib
// ES2022) and these declarations only, without the DOM's or Node's types,
// so that a use of anything else (a `node:` module, `process`, `Buffer`,
// `document`) fails to compile. Not emitted: the published declarations
// refer to the globals of the program that uses them.

type HeadersInit = Headers | Record<string, string> | [string, string][];

declare class Headers {
  constructor(init?: HeadersInit);
  get(name: string): string | null;
  set(name: string, value: string): void;
  has(name: string): boolean;
  forEach(callback: (value: string, name: string) => void): void;
}

type BodyInit = string | Uint8Array | ArrayBuffer | ReadableStream<Uint8Array>;

interface RequestInit {
  method?: string;
  headers?: HeadersInit;
  body?: BodyInit | null;
  signal?: AbortSignal | null;
  redirect?: "follow" | "error" | "manual";
}

interface ResponseInit {
  status?: number;
  statusText?: string;
  headers?: HeadersInit;
}

declare class Request {
  constructor(input: string | Request, init?: RequestInit);
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  readonly signal: AbortSignal;
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
}

declare class Response {
  constructor(body?: BodyInit | null, init?: ResponseInit);
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | null;
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
}

declare function fetch(input: string | Request, init?: RequestInit): Promise<Response>;

interface ReadableStreamReadResult<T> {
  done: boolean;
  value?: T;
}

interface ReadableStreamDefaultReader<T> {
  read(): Promise<ReadableStreamReadResult<T>>;
  cancel(reason?: unknown): Promise<void>;
  releaseLock(): void;
}

declare class ReadableStream<T> {
  getReader(): ReadableStreamDefaultReader<T>;
  cancel(reason?: unknown): Promise<void>;
}

interface Event {
  readonly type: string;
}

declare class AbortSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: (ev: Event) => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: (ev: Event) => void): void;
  throwIfAborted(): void;
}

declare class AbortController {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  decode(input?: Uint8Array, options?: { stream?: boolean }): string;
}

declare class TextEncoder {
  encode(input?: string): Uint8Array;
}

declare class URL {
  constructor(url: string, base?: string);
  readonly protocol: string;
  readonly host: string;
  readonly href: string;
  readonly search: string;
  readonly hash: string;
}

declare var performance: { now(): number };

declare function atob(data: string): string;
declare function btoa(data: string): string;

declare function setTimeout(callback: () => void, ms?: number): unknown;
declare function clearTimeout(handle: unknown): void;
