// The side panels: the pipeline (GET /pipeline) and the threads list (GET /threads, or
// POST /threads/search under a metadata filter), each read again every REFRESH_MS.

import { ApiError, getJson, postJson } from "./api.js";

export const REFRESH_MS = 2000;
const SPARK_POINTS = 60;

const $ = (id) => document.getElementById(id);

export function formatMs(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60000)} min`;
}

function ago(ms) {
  const seconds = Math.max(0, (Date.now() - ms) / 1000);
  if (seconds < 60) return `${Math.round(seconds)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

function rate(value) {
  if (value === null) return "–";
  return value >= 100 ? Math.round(value).toLocaleString() : value.toFixed(1);
}

function problem(error) {
  if (error instanceof ApiError && error.status === 401) return "API key needed";
  return error instanceof ApiError ? error.message : "API unreachable";
}

/**
 * The `q` quantile of a cumulative histogram (`counts` has one more entry than
 * `bounds`: +Inf), interpolated within its bucket as Prometheus's histogram_quantile;
 * null without observations.
 */
export function quantile(q, bounds, counts) {
  const total = counts[counts.length - 1] || 0;
  if (total <= 0) return null;
  const rank = q * total;
  let below = 0;
  let lower = 0;
  for (let i = 0; i < bounds.length; i += 1) {
    if (counts[i] >= rank) {
      const inside = counts[i] - below;
      return lower + (bounds[i] - lower) * (inside ? (rank - below) / inside : 1);
    }
    below = counts[i];
    lower = bounds[i];
  }
  return bounds[bounds.length - 1];
}

/** The pipeline panel: rates and the lag's p99 over the interval between two samples. */
export class PipelinePanel {
  constructor() {
    this.previous = null;
    this.ingest = [];
    this.apply = [];
  }

  async refresh() {
    let sample;
    try {
      sample = await getJson("/pipeline");
    } catch (error) {
      $("pipeline-note").textContent = problem(error);
      return;
    }
    const before = this.previous;
    this.previous = sample;
    $("p-backlog").textContent = sample.threads_with_backlog.toLocaleString();
    const procs = sample.processes;
    $("p-extra").textContent =
      `quarantined ${sample.threads_quarantined} · api ${procs.api ?? 0} · workers ${procs.worker ?? 0}`;
    if (!before || sample.at_ms <= before.at_ms) {
      $("pipeline-note").textContent = "sampling…";
      return;
    }
    const seconds = (sample.at_ms - before.at_ms) / 1000;
    const ingest = Math.max(0, sample.deltas_ingested - before.deltas_ingested) / seconds;
    const apply = Math.max(0, sample.entries_applied - before.entries_applied) / seconds;
    $("p-ingest").textContent = rate(ingest);
    $("p-apply").textContent = rate(apply);
    const lag = sample.visible_lag_ms;
    const window = lag.counts.map((n, i) => n - (before.visible_lag_ms.counts[i] || 0));
    const p99 = quantile(0.99, lag.bounds, window);
    $("p-lag").textContent = p99 === null ? "–" : Math.round(p99).toLocaleString();
    $("pipeline-note").textContent = `over the last ${seconds.toFixed(1)} s`;
    this.#spark(ingest, apply);
  }

  #spark(ingest, apply) {
    this.ingest = [...this.ingest, ingest].slice(-SPARK_POINTS);
    this.apply = [...this.apply, apply].slice(-SPARK_POINTS);
    const top = Math.max(1, ...this.ingest, ...this.apply);
    // The samples so far stretched over the width (up to the last SPARK_POINTS).
    const step = 300 / Math.max(1, this.ingest.length - 1);
    const points = (values) =>
      values.map((v, i) => `${(i * step).toFixed(1)},${(46 - (v / top) * 42).toFixed(1)}`).join(" ");
    $("p-spark").querySelector(".ingest").setAttribute("points", points(this.ingest));
    $("p-spark").querySelector(".apply").setAttribute("points", points(this.apply));
  }
}

/** How many threads the list shows, unfiltered (GET /threads) or filtered (a search). */
const LIST_LIMIT = 100;
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A metadata value as typed in the filter: a JSON number, `true` or `false` is that
 * value (metadata values are typed, and a search matches exactly: `5` is not `"5"`); a
 * JSON string in quotes is its text; anything else is the text itself, trimmed.
 */
export function typedValue(text) {
  const value = text.trim();
  if (value === "true") return true;
  if (value === "false") return false;
  if (JSON_NUMBER.test(value) && Number.isFinite(Number(value))) return Number(value);
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    try {
      const parsed = JSON.parse(value);
      if (typeof parsed === "string") return parsed;
    } catch {
      // not a JSON string ('"a"b"'): the text as typed
    }
  }
  return value;
}

/** A metadata value written as the filter reads it: typedValue(shownValue(v)) is v. */
export function shownValue(value) {
  if (typeof value !== "string") return String(value);
  return typedValue(value) === value ? value : JSON.stringify(value);
}

function until(ms) {
  const seconds = (ms - Date.now()) / 1000;
  if (seconds < 1) return "now"; // due: the next TTL sweep removes it
  if (seconds < 60) return `in ${Math.round(seconds)} s`;
  if (seconds < 3600) return `in ${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `in ${Math.round(seconds / 3600)} h`;
  return `in ${Math.round(seconds / 86400)} d`;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The expiry line of a row: relative text, the absolute time and the TTL on hover. */
function expiry(t) {
  const node = el("span", "expiry");
  if (t.expires_at_ms === null || t.expires_at_ms === undefined) {
    node.textContent = "never expires";
    node.classList.add("never");
    node.title = t.pinned ? "pinned: it never expires" : "no TTL: kept until deleted";
    node.dataset.expires = "never";
    return node;
  }
  node.textContent = `expires ${until(t.expires_at_ms)}`;
  node.classList.toggle("soon", t.expires_at_ms - Date.now() < 60000);
  const ttl = t.ttl_seconds === null || t.ttl_seconds === undefined
    ? "the deployment's TTL"
    : `its own TTL of ${t.ttl_seconds.toLocaleString()} s`;
  const at = new Date(t.expires_at_ms).toLocaleString();
  node.title = `expires ${at} · ${ttl}, which each write restarts`;
  node.dataset.expires = String(t.expires_at_ms);
  return node;
}

/** The metadata chips of a row; a click on one filters the list by it. */
function chips(metadata) {
  const node = el("span", "chips");
  for (const [key, value] of Object.entries(metadata || {})) {
    const text = `${key}=${shownValue(value)}`;
    const chip = el("button", "chip", text);
    chip.type = "button";
    chip.dataset.key = key;
    chip.dataset.value = shownValue(value);
    // A long value is cut to the cell's width: the whole of it is on hover.
    chip.title = `${text}\nclick: only the threads with this value`;
    node.append(chip);
  }
  return node;
}

/**
 * The threads list; `selected` is the thread shown, `open(id)` shows another. With a
 * filter (one metadata key and value) the rows come from POST /threads/search, else
 * from GET /threads; either is read again every REFRESH_MS.
 */
export class ThreadsPanel {
  constructor(open) {
    this.open = open;
    this.selected = null;
    this.threads = [];
    this.filter = null; // {key, value} of the search shown, or null: every thread
    this.more = false; // the search has threads past the page shown
    this.loaded = false; // this.threads answers this.filter (not a former one)
    this.refused = false; // the API refused the filter: its message is shown instead
    this.sent = 0; // the latest refresh sent
    this.answered = 0; // the latest refresh shown: answers to older ones are dropped
    $("threads").addEventListener("click", (event) => {
      const chip = event.target.closest("button.chip");
      if (chip) {
        this.filterBy(chip.dataset.key, chip.dataset.value);
        return;
      }
      const row = event.target.closest("tr[data-thread]");
      if (row) this.open(row.dataset.thread);
    });
    $("filter-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.filterBy($("filter-key").value, $("filter-value").value);
    });
    $("filter-clear").addEventListener("click", () => this.filterBy("", ""));
  }

  /** Show only the threads whose metadata `key` is `text` (typedValue); no key: all. */
  filterBy(key, text) {
    key = key.trim();
    $("filter-key").value = key;
    $("filter-value").value = key ? text : "";
    this.filter = key ? { key, value: typedValue(text) } : null;
    this.threads = [];
    this.more = false;
    this.loaded = false;
    this.refused = false;
    this.#refusal("");
    $("filter-clear").hidden = !this.filter;
    $("threads-note").textContent = this.filter ? "searching…" : "loading…";
    this.render();
    return this.refresh();
  }

  async refresh() {
    const filter = this.filter;
    const sent = ++this.sent;
    let body;
    try {
      body = filter
        ? await postJson("/threads/search", {
          metadata: { [filter.key]: filter.value },
          limit: LIST_LIMIT,
        })
        : await getJson(`/threads?limit=${LIST_LIMIT}`);
    } catch (error) {
      if (this.#stale(sent, filter)) return;
      this.#failed(error, filter);
      return;
    }
    if (this.#stale(sent, filter)) return;
    this.threads = body.threads;
    this.more = Boolean(body.cursor);
    this.loaded = true;
    this.refused = false;
    this.#refusal("");
    const n = this.threads.length;
    const count = `${n}${this.more ? "+" : ""} thread${n === 1 && !this.more ? "" : "s"}`;
    const which = filter ? ` with ${this.#filterText()}` : "";
    $("threads-note").textContent = `${count}${which}, latest first`;
    this.render();
  }

  /** An answer to a former filter, or older than one shown (the refreshes overlapped). */
  #stale(sent, filter) {
    if (filter !== this.filter || sent < this.answered) return true;
    this.answered = sent;
    return false;
  }

  #failed(error, filter) {
    // The filter itself refused (a 422 naming the field): say why, and list nothing
    // rather than threads the filter does not select. Any other failure keeps the rows
    // last shown, as the unfiltered list does.
    const status = error instanceof ApiError ? error.status : 0;
    if (filter && status >= 400 && status < 500 && status !== 401 && status !== 429) {
      this.threads = [];
      this.more = false;
      this.refused = true;
      this.#refusal(`Filter refused: ${error.message}`);
      $("threads-note").textContent = "filter refused";
      this.render();
      return;
    }
    $("threads-note").textContent = problem(error);
  }

  #filterText() {
    return `${this.filter.key}=${shownValue(this.filter.value)}`;
  }

  #refusal(text) {
    $("filter-error").hidden = !text;
    $("filter-error").textContent = text;
  }

  select(threadId) {
    this.selected = threadId;
    this.render();
  }

  render() {
    const rows = this.threads.map((t) => {
      const row = document.createElement("tr");
      row.dataset.thread = t.thread_id;
      row.dataset.pinned = String(Boolean(t.pinned));
      row.classList.toggle("selected", t.thread_id === this.selected);
      row.classList.toggle("has-backlog", t.backlog > 0);
      const name = document.createElement("td");
      name.className = "tid";
      const cell = el("div", "cell");
      cell.append(el("span", "name", t.thread_id));
      const sub = el("div", "sub");
      sub.append(chips(t.metadata), expiry(t));
      name.append(cell, sub);
      const created = t.created_ms ? ` · created ${new Date(t.created_ms).toLocaleString()}` : "";
      name.title = `${t.thread_id} · version ${t.version}${created}`;
      if (t.pinned) {
        const badge = el("span", "badge pinned", "pinned");
        badge.title = "pinned: it never expires, and prune skips it";
        cell.append(badge);
      }
      if (t.quarantined) {
        const badge = el("span", "badge quarantined", "quarantined");
        badge.title = t.quarantine_reason || "";
        cell.append(badge);
      }
      const td = (text, className) => el("td", className, text);
      row.append(
        name,
        td(t.messages.toLocaleString(), "num"),
        td(t.backlog.toLocaleString(), "num backlog"),
        td(formatMs(t.lag_ms), "num"),
        td(ago(t.last_activity_ms), "ago"),
      );
      return row;
    });
    $("threads").tBodies[0].replaceChildren(...rows);
    const none = this.threads.length === 0;
    $("threads-empty").hidden = !none || this.filter !== null;
    $("threads-none").hidden = !none || !this.filter || !this.loaded || this.refused;
    if (this.filter) $("threads-none").textContent = `No thread has ${this.#filterText()}.`;
  }
}
