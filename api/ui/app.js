// threadfold's page: the threads list, the pipeline panel and a thread's live
// transcript with a version slider. Plain ES modules served by the API at /ui; routes
// are the URL's fragment (#/t/<thread id>), so the API key of the tab is read once.

import { ApiError, apiKey, follow, getJson, setApiKey } from "./api.js";
import { FollowedThread } from "./feed.js";
import { PipelinePanel, REFRESH_MS, ThreadsPanel } from "./panels.js";
import { Transcript } from "./transcript.js";

const $ = (id) => document.getElementById(id);
const HISTORY_DEBOUNCE_MS = 120;

/** The thread shown: followed live, or an older version picked on the slider. */
class ThreadView {
  constructor() {
    this.transcript = new Transcript($("transcript"));
    this.thread = null;
    this.controller = null;
    this.mode = "live";
    this.picked = null; // the version shown in history mode
    this.request = 0; // the latest history read: older answers are dropped
    this.timer = null;
    $("slider").addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.#slid(), HISTORY_DEBOUNCE_MS);
    });
    $("to-live").addEventListener("click", () => this.live());
    this.budget = null; // the model window's tokens (null: none shown)
    this.windowRequest = 0; // the latest window read: older answers are dropped
    $("window-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const value = Number($("window-input").value);
      this.budget = Number.isInteger(value) && value > 0 ? value : null;
      this.#window();
    });
  }

  /** Read the model window of the version shown and dim what is outside it. */
  async #window() {
    const thread = this.thread;
    const request = ++this.windowRequest;
    const version = this.mode === "history" ? this.picked : thread?.version;
    if (!thread || this.budget === null || !thread.exists || !version) {
      this.transcript.dim(null);
      $("window-label").textContent = "";
      return;
    }
    const at = this.mode === "history" ? `at_version=${version}` : `min_version=${version}&wait=5`;
    const path = `/threads/${encodeURIComponent(thread.threadId)}/context?max_tokens=${this.budget}` +
      `&include_system=true&${at}`;
    let label;
    let ids = null;
    try {
      const found = await getJson(path);
      ids = new Set(found.messages.map((m) => m.id));
      label = `${found.messages.length} of ${found.total} messages · ${found.tokens} tokens`;
      if (found.adjusted === "tool_pairs") label += " · a tool call kept with its answers";
    } catch (error) {
      label = error instanceof ApiError ? error.message : "the API did not answer";
    }
    if (request !== this.windowRequest || thread !== this.thread) return;
    this.transcript.dim(ids);
    $("window-label").textContent = label;
  }

  open(threadId) {
    this.close();
    this.thread = new FollowedThread(threadId);
    this.mode = "live";
    this.transcript.clear();
    $("placeholder").hidden = true;
    $("thread").hidden = false;
    $("thread-title").textContent = threadId;
    this.#banner("");
    this.#header();
    this.#follow();
  }

  close() {
    this.controller?.abort();
    this.controller = null;
    this.thread = null;
    $("thread").hidden = true;
    $("placeholder").hidden = false;
  }

  /** Follow again from the version held (a new key, or a break in the chain). */
  restart() {
    if (!this.thread) return;
    this.controller?.abort();
    this.#follow();
  }

  #follow() {
    const controller = new AbortController();
    this.controller = controller;
    const thread = this.thread;
    follow(thread.threadId, {
      signal: controller.signal,
      lastId: () => thread.version,
      onStatus: (state, error) => {
        if (controller.signal.aborted) return;
        if (this.mode === "live") this.#status(state);
        if (state === "error" && error) this.#banner(`Feed: ${error.message}`, true);
        else if (state === "live") this.#banner(thread.exists ? "" : this.#notYet());
      },
      onEvent: (event) => {
        if (!controller.signal.aborted) this.#event(event);
      },
    });
  }

  #notYet() {
    return "This thread has not been written yet: its first delta will appear here.";
  }

  #event({ event, data }) {
    const thread = this.thread;
    let marks;
    if (event === "snapshot") {
      marks = thread.snapshot(data);
      if (data.reason === "resume_gap" || data.reason === "resync") {
        this.#banner(`Resynchronised from a fresh snapshot (${data.reason.replace("_", " ")}).`);
      } else this.#banner(thread.exists ? "" : this.#notYet());
    } else if (event === "change") {
      marks = thread.change(data);
      if (marks.stale) return;
      if (marks.gap) {
        this.restart(); // the server answers with the changes after our version, or a snapshot
        return;
      }
      this.#banner("");
    } else if (event === "deleted") {
      marks = thread.deleted(data);
      const how = { deleted: "deleted", expired: "removed by its TTL", pruned: "pruned" };
      this.#banner(
        `This thread was ${how[data.reason] || "removed"}; a new first delta will appear here.`,
      );
    } else if (event === "error") {
      this.#banner(`The feed was dropped (${data.error.code}); reconnecting…`, true);
      return;
    } else return;
    if (this.mode === "live") {
      this.transcript.render(thread.messages, marks);
      this.#window();
    }
    this.#header();
  }

  #header() {
    const thread = this.thread;
    const versions = thread.versions;
    const slider = $("slider");
    slider.max = String(Math.max(0, versions.length - 1));
    if (this.mode === "live") {
      slider.value = slider.max;
      $("slider-label").textContent = `${versions.length}/${versions.length} · live`;
    } else {
      const at = Math.max(0, versions.indexOf(this.picked));
      slider.value = String(at);
      $("slider-label").textContent = `${at + 1}/${versions.length} · ${this.picked}`;
    }
    slider.disabled = versions.length < 2;
    const live = this.mode === "live" ? "version" : "live at";
    $("thread-version").textContent = thread.version ? `${live} ${thread.version}` : "";
    const n = this.transcript.messages.length;
    $("thread-count").textContent = `${n} message${n === 1 ? "" : "s"}`;
  }

  #slid() {
    if (!this.thread) return;
    const versions = this.thread.versions;
    const index = Number($("slider").value);
    if (index >= versions.length - 1) this.live();
    else this.history(versions[index]);
  }

  /** Show the thread as of `version` (GET state?at_version=), live updates held back. */
  async history(version) {
    const thread = this.thread;
    this.mode = "history";
    this.picked = version;
    this.#status("history");
    $("to-live").hidden = false;
    this.#header();
    const request = ++this.request;
    let messages;
    let note = `Viewing version ${version}; new changes keep arriving in the background.`;
    try {
      const path = `/threads/${encodeURIComponent(thread.threadId)}/state?at_version=${version}`;
      messages = (await getJson(path)).messages;
    } catch (error) {
      // Time travel needs the log (THREADFOLD_RETENTION_SECONDS); a version this page
      // saw can still be rebuilt from the feed it received.
      messages = thread.rebuild(version);
      const why = error instanceof ApiError ? error.message : "the API did not answer";
      note = messages ? `Version ${version}, rebuilt from the feed this page received (${why}).` : why;
    }
    if (request !== this.request || this.mode !== "history" || thread !== this.thread) return;
    this.transcript.clear();
    this.transcript.render(messages || []);
    this.#banner(note, !messages);
    $("thread").dataset.showing = version;
    this.#header();
    this.#window();
  }

  /** Back to the live transcript. */
  live() {
    if (!this.thread) return;
    this.mode = "live";
    this.picked = null;
    this.request += 1;
    $("to-live").hidden = true;
    delete $("thread").dataset.showing;
    this.transcript.clear();
    this.transcript.render(this.thread.messages);
    this.#banner("");
    this.#status(this.controller ? "live" : "connecting");
    this.#header();
    this.#window();
  }

  #status(state) {
    const labels = { connecting: "connecting", reconnecting: "reconnecting", live: "live",
      history: "history", error: "error" };
    $("live").dataset.state = state;
    $("live").textContent = labels[state] || state;
  }

  #banner(text, error = false) {
    const banner = $("banner");
    banner.hidden = !text;
    banner.textContent = text;
    banner.classList.toggle("error", error);
  }
}

function keyState(state) {
  const labels = { none: "no key", set: "key set for this tab", needed: "key needed" };
  $("key-state").dataset.state = state;
  $("key-state").textContent = labels[state];
}

function main() {
  const view = new ThreadView();
  const open = (threadId) => { location.hash = `#/t/${encodeURIComponent(threadId)}`; };
  const threads = new ThreadsPanel(open);
  const pipeline = new PipelinePanel();
  // Not while the tab is hidden: a list refresh reads every bucket of the keyspace.
  const refresh = () =>
    document.hidden ? Promise.resolve() : Promise.all([threads.refresh(), pipeline.refresh()]);

  const route = () => {
    const found = /^#\/t\/(.+)$/.exec(location.hash);
    const threadId = found ? decodeURIComponent(found[1]) : null;
    if (threadId && threadId !== view.thread?.threadId) view.open(threadId);
    if (!threadId) view.close();
    threads.select(threadId);
  };

  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setApiKey($("key-input").value.trim());
    $("key-input").value = "";
  });
  $("open-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("open-input").value.trim();
    if (id) open(id);
  });
  document.addEventListener("threadfold:key", () => {
    keyState(apiKey() ? "set" : "none");
    refresh();
    view.restart();
  });
  document.addEventListener("threadfold:unauthorized", () => {
    keyState("needed");
    $("key-input").focus();
  });
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", refresh);

  keyState(apiKey() ? "set" : "none");
  route();
  refresh();
  setInterval(refresh, REFRESH_MS);
}

main();
