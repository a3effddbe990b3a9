// A thread as the feed builds it: the messages at a version, and the rule that moves
// them one change event on (docs: the wire format of GET /threads/{id}/events; the
// same rule as threadfold.workers.feed.apply).

/**
 * Apply a change event to `messages` (the list at `change.prev`), in place:
 * if `reset`, empty the list; delete every id in `removed` (a message that moved to the
 * end is listed there too); then for each upsert in ascending position, replace the
 * message with that id in place if present, else append.
 * Returns what the page marks: ids `added`, `updated`, and `removed` (with the message
 * and the id of the message before it, where its ghost is shown while it fades).
 */
export function applyChange(messages, change) {
  const before = new Map(messages.map((m, i) => [m.id, i]));
  const upserted = new Set(change.upserts.map((u) => u.message.id));
  const gone = [];
  if (change.reset) {
    for (const m of messages) gone.push({ message: m, after: null });
    messages.length = 0;
  }
  if (change.removed.length) {
    const removed = new Set(change.removed);
    let kept = null; // the last message before it that stays: where its ghost goes
    for (const m of messages) {
      if (!removed.has(m.id)) kept = m.id;
      else if (!upserted.has(m.id)) gone.push({ message: m, after: kept });
    }
    const staying = messages.filter((m) => !removed.has(m.id));
    messages.splice(0, messages.length, ...staying);
  }
  const index = new Map(messages.map((m, i) => [m.id, i]));
  const added = [];
  const updated = [];
  const upserts = [...change.upserts].sort((a, b) => a.position - b.position);
  for (const { message } of upserts) {
    const at = index.get(message.id);
    if (at !== undefined) messages[at] = message;
    else {
      index.set(message.id, messages.length);
      messages.push(message);
    }
    (before.has(message.id) ? updated : added).push(message.id);
  }
  return { added, updated, removed: gone };
}

/** Versions `<ms>-<seq>` compare as integer pairs. */
export function compareVersions(a, b) {
  const [am, as] = a.split("-").map(BigInt);
  const [bm, bs] = b.split("-").map(BigInt);
  if (am !== bm) return am < bm ? -1 : 1;
  if (as !== bs) return as < bs ? -1 : 1;
  return 0;
}

/** The ms part of a version: when it was written (Redis's clock). */
export const versionMs = (version) => Number(version.split("-")[0]);

/**
 * One followed thread: the live messages and version, the versions seen (for the
 * slider), and what it takes to rebuild any of them without the server (the last
 * snapshot and the changes after it) when time travel cannot serve it (the log
 * trimmed with THREADFOLD_RETENTION_SECONDS=0).
 */
export class FollowedThread {
  constructor(threadId, maxVersions = 500) {
    this.threadId = threadId;
    this.messages = [];
    this.version = null;
    this.exists = true;
    this.versions = [];
    this.maxVersions = maxVersions;
    this.base = null; // { version, messages } of the last snapshot
    this.changes = []; // the change events after it, in order
  }

  /** A snapshot replaces everything (a start, a resume gap or a resync). */
  snapshot(data) {
    const previous = new Map(this.messages.map((m) => [m.id, m]));
    this.messages = [...data.messages];
    this.version = data.version;
    this.exists = data.exists !== false;
    this.base = { version: data.version, messages: [...data.messages] };
    this.changes = [];
    this.#seen(data.version);
    const added = [];
    const updated = [];
    for (const m of this.messages) {
      if (!previous.has(m.id)) added.push(m.id);
      else if (JSON.stringify(previous.get(m.id)) !== JSON.stringify(m)) updated.push(m.id);
    }
    const ids = new Set(this.messages.map((m) => m.id));
    const removed = [...previous.values()]
      .filter((m) => !ids.has(m.id))
      .map((m) => ({ message: m, after: null }));
    return { added: previous.size ? added : [], updated, removed };
  }

  /** A change applies only on the version it names (its prev); else the chain broke. */
  change(data) {
    if (this.version !== null && compareVersions(data.version, this.version) <= 0) {
      return { stale: true };
    }
    if (data.prev !== this.version) return { gap: true };
    const marks = applyChange(this.messages, data);
    this.version = data.version;
    this.exists = true;
    this.changes.push(data);
    if (this.changes.length > this.maxVersions) {
      // Keep memory bounded: the oldest change folds into the base.
      const oldest = this.changes.shift();
      applyChange(this.base.messages, oldest);
      this.base.version = oldest.version;
    }
    this.#seen(data.version);
    return marks;
  }

  /** The messages at `version` from the last snapshot and the changes since, or null. */
  rebuild(version) {
    if (!this.base || compareVersions(version, this.base.version) < 0) return null;
    const messages = [...this.base.messages];
    for (const change of this.changes) {
      if (compareVersions(change.version, version) > 0) break;
      applyChange(messages, change);
    }
    return messages;
  }

  #seen(version) {
    const last = this.versions[this.versions.length - 1];
    if (last === version) return;
    this.versions.push(version);
    if (this.versions.length > this.maxVersions) this.versions.shift();
  }
}
