// The page's HTTP: JSON reads (and the search's POST) with the API key, and the SSE
// feed read with fetch().
//
// EventSource cannot send headers, so with API keys it cannot authenticate: the feed is
// read with fetch() and a ReadableStream instead, parsed as the SSE format says, and
// resumed with Last-Event-ID (the last version applied) after a drop.

const KEY = "threadfold.apiKey";
// A stream silent this long is taken for dead (a half-open connection) and reopened:
// the API sends a heartbeat every THREADFOLD_SSE_HEARTBEAT_SECONDS (5 s by default).
const SILENCE_MS = 30000;

/** The API key of this tab (sessionStorage: kept across navigation, gone with the tab). */
export function apiKey() {
  return sessionStorage.getItem(KEY) || "";
}

export function setApiKey(value) {
  if (value) sessionStorage.setItem(KEY, value);
  else sessionStorage.removeItem(KEY);
  document.dispatchEvent(new CustomEvent("threadfold:key"));
}

export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

function headers(extra = {}) {
  const key = apiKey();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

async function failure(response) {
  let code = "http_error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    code = body.error.code;
    message = body.error.message;
  } catch {
    // not our JSON error shape (a proxy's page): keep the status line
  }
  const retry = Number(response.headers.get("retry-after")) || 0;
  if (response.status === 401) document.dispatchEvent(new CustomEvent("threadfold:unauthorized"));
  return new ApiError(response.status, code, message, retry);
}

/** GET a JSON body of the API; an error answer throws ApiError. */
export async function getJson(path, signal) {
  const response = await fetch(path, { headers: headers(), cache: "no-store", signal });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** POST a JSON body to the API and read its JSON answer; an error answer throws ApiError. */
export async function postJson(path, body, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
    cache: "no-store",
    signal,
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });

/**
 * Follow a thread's feed until `signal` aborts: `onEvent({event, id, data})` for each
 * snapshot and change, `onStatus(state, detail)` for the connection's state
 * ("connecting", "live", "reconnecting", "error"). `lastId()` is asked at each
 * (re)connection: the version the page holds, sent as Last-Event-ID.
 */
export async function follow(threadId, { onEvent, onStatus, lastId, signal }) {
  let retryMs = 1000;
  let attempt = 0;
  while (!signal.aborted) {
    onStatus(attempt ? "reconnecting" : "connecting");
    try {
      const extra = { Accept: "text/event-stream" };
      const last = lastId();
      if (last) extra["Last-Event-ID"] = last;
      const response = await fetch(`/threads/${encodeURIComponent(threadId)}/events`, {
        headers: headers(extra), cache: "no-store", signal,
      });
      if (!response.ok) throw await failure(response);
      attempt = 0;
      onStatus("live");
      await readEvents(response.body, {
        onEvent,
        onRetry: (ms) => { retryMs = ms; },
      });
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiError) {
        onStatus("error", error);
        if (error.status === 401 || error.status === 400 || error.status === 404) return;
        if (error.retryAfter) retryMs = Math.max(retryMs, error.retryAfter * 1000);
      }
    }
    if (signal.aborted) return;
    attempt += 1;
    onStatus("reconnecting");
    await sleep(Math.min(retryMs * attempt, 10000), signal);
  }
}

/** Read an SSE stream until it ends (or stays silent past SILENCE_MS: then cancelled). */
async function readEvents(body, { onEvent, onRetry }) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser(onEvent, onRetry);
  let watchdog = null;
  try {
    for (;;) {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => reader.cancel("silent"), SILENCE_MS);
      const { value, done } = await reader.read();
      if (done) return;
      parser.push(value);
    }
  } finally {
    clearTimeout(watchdog);
  }
}

/** The SSE format's fields (event, data, id, retry); comment lines (heartbeats) ignored. */
class SseParser {
  constructor(onEvent, onRetry) {
    this.onEvent = onEvent;
    this.onRetry = onRetry;
    this.buffer = "";
    this.event = { event: "message", data: [], id: null };
  }

  push(text) {
    this.buffer += text;
    let newline;
    while ((newline = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      if (newline === this.buffer.length - 1 && this.buffer.endsWith("\r")) return; // "\r\n" split
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + (this.buffer.startsWith("\r\n", newline) ? 2 : 1));
      this.#line(line);
    }
  }

  #line(line) {
    const event = this.event;
    if (line === "") {
      if (event.data.length) {
        this.onEvent({ event: event.event, id: event.id, data: JSON.parse(event.data.join("\n")) });
      }
      this.event = { event: "message", data: [], id: null };
      return;
    }
    if (line.startsWith(":")) return; // a heartbeat
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event.event = value;
    else if (field === "data") event.data.push(value);
    else if (field === "id") event.id = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.onRetry(Number(value));
  }
}
