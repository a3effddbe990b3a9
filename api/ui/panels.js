// The side panels: the pipeline (GET /pipeline) and the threads list (GET /threads),
// each read again every REFRESH_MS.

import { ApiError, getJson } from "./api.js";

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

/** The threads list; `selected` is the thread shown, `open(id)` shows another. */
export class ThreadsPanel {
  constructor(open) {
    this.open = open;
    this.selected = null;
    this.threads = [];
    $("threads").addEventListener("click", (event) => {
      const row = event.target.closest("tr[data-thread]");
      if (row) this.open(row.dataset.thread);
    });
  }

  async refresh() {
    try {
      const body = await getJson("/threads?limit=100");
      this.threads = body.threads;
      const n = this.threads.length;
      $("threads-note").textContent = `${n} thread${n === 1 ? "" : "s"}, latest first`;
    } catch (error) {
      $("threads-note").textContent = problem(error);
      return;
    }
    this.render();
  }

  select(threadId) {
    this.selected = threadId;
    this.render();
  }

  render() {
    const rows = this.threads.map((t) => {
      const row = document.createElement("tr");
      row.dataset.thread = t.thread_id;
      row.classList.toggle("selected", t.thread_id === this.selected);
      row.classList.toggle("has-backlog", t.backlog > 0);
      const name = document.createElement("td");
      name.className = "tid";
      const cell = document.createElement("div");
      cell.className = "cell";
      const label = document.createElement("span");
      label.className = "name";
      label.textContent = t.thread_id;
      cell.append(label);
      name.append(cell);
      name.title = `${t.thread_id} · version ${t.version}`;
      if (t.quarantined) {
        const badge = document.createElement("span");
        badge.className = "badge quarantined";
        badge.textContent = "quarantined";
        badge.title = t.quarantine_reason || "";
        cell.append(badge);
      }
      const td = (text, className) => {
        const node = document.createElement("td");
        node.className = className;
        node.textContent = text;
        return node;
      };
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
    $("threads-empty").hidden = this.threads.length > 0;
  }
}
