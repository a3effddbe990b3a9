// A thread as the feed builds it: its messages by position at a version, and the rule
// that moves them one change event on (the wire format of GET /threads/{id}/events;
// the same rule as threadfold.workers.feed.apply).
//
// A snapshot gives each message's position (`positions`, beside `messages`); a change
// names positions: if `reset`, drop every message; drop the `removed` positions; set
// each upsert's position (a held one is replaced in place, a new one lies past all).
// The messages in position order are then the thread's, exactly GET state's.

/** Entries `{position, message}` of a snapshot, in position order. */
export function entriesOf(snapshot) {
  const entries = snapshot.messages.map((message, i) => ({
    position: snapshot.positions[i],
    message,
  }));
  return entries.sort((a, b) => a.position - b.position);
}

const idOf = (entry) => entry.message?.id ?? entry.id;

/**
 * Apply a change event to `entries` (the thread at `change.prev`); the new entries.
 * `marks` says what the page shows as changed: ids `added` and `updated`, and
 * `removed` (each with the message, and the id of the message kept before it, where
 * its fading ghost stands). A message moved (removed and upserted at once) is updated.
 */
export function applyChange(entries, change) {
  const byPosition = new Map(change.reset ? [] : entries.map((e) => [e.position, e]));
  for (const removed of change.removed) byPosition.delete(removed.position);
  for (const upsert of change.upserts) {
    byPosition.set(upsert.position, { position: upsert.position, message: upsert.message });
  }
  const after = [...byPosition.values()].sort((a, b) => a.position - b.position);

  const before = new Map(entries.map((e) => [idOf(e), e]));
  const upserted = new Set(change.upserts.map((u) => u.message?.id ?? u.id));
  const staying = new Set(after.map(idOf));
  const marks = { added: [], updated: [], removed: [] };
  for (const id of upserted) (before.has(id) ? marks.updated : marks.added).push(id);
  let kept = null;
  for (const entry of entries) {
    const id = idOf(entry);
    if (staying.has(id)) kept = id;
    else marks.removed.push({ message: entry.message, after: kept });
  }
  return { entries: after, marks };
}

/** Versions `<ms>-<seq>` compare as integer pairs. */
export function compareVersions(a, b) {
  const [am, as] = a.split("-").map(BigInt);
  const [bm, bs] = b.split("-").map(BigInt);
  if (am !== bm) return am < bm ? -1 : 1;
  if (as !== bs) return as < bs ? -1 : 1;
  return 0;
}

/**
 * One followed thread: the live entries and version, the versions seen (for the
 * slider), and what it takes to rebuild any of them without the server (the last
 * snapshot and the changes after it, bounded) when time travel cannot serve it (the
 * log trimmed with THREADFOLD_RETENTION_SECONDS=0).
 */
export class FollowedThread {
  constructor(threadId, maxVersions = 500) {
    this.threadId = threadId;
    this.entries = [];
    this.version = null;
    this.exists = true;
    this.versions = [];
    this.maxVersions = maxVersions;
    this.base = null; // { version, entries } of the last snapshot
    this.changes = []; // the change events after it, in order
  }

  get messages() {
    return this.entries.map((e) => e.message);
  }

  /** A snapshot replaces everything (a start, a resume gap or a resync). */
  snapshot(data) {
    const previous = new Map(this.entries.map((e) => [idOf(e), e.message]));
    this.entries = entriesOf(data);
    this.version = data.version;
    this.exists = data.exists !== false;
    this.base = { version: data.version, entries: this.entries };
    this.changes = [];
    this.#seen(data.version);
    const marks = { added: [], updated: [], removed: [] };
    if (!previous.size) return marks; // the first: nothing to mark
    const ids = new Set(this.entries.map(idOf));
    for (const { message } of this.entries) {
      if (!previous.has(message.id)) marks.added.push(message.id);
      else if (JSON.stringify(previous.get(message.id)) !== JSON.stringify(message)) {
        marks.updated.push(message.id);
      }
    }
    for (const [id, message] of previous) {
      if (!ids.has(id)) marks.removed.push({ message, after: null });
    }
    return marks;
  }

  /**
   * The thread was removed (deleted, expired or pruned): it is the empty thread at 0-0,
   * on which its next incarnation's first change applies. The versions seen were of
   * the incarnation that is gone, so the slider starts again.
   */
  deleted(data) {
    const marks = { added: [], updated: [], removed: [] };
    for (const { message } of this.entries) marks.removed.push({ message, after: null });
    this.entries = [];
    this.version = data.version;
    this.exists = false;
    this.base = { version: data.version, entries: [] };
    this.changes = [];
    this.versions = [];
    this.#seen(data.version);
    return marks;
  }

  /** A change applies only on the version it names (its prev); else the chain broke. */
  change(data) {
    if (this.version !== null && compareVersions(data.version, this.version) <= 0) {
      return { stale: true };
    }
    if (data.prev !== this.version) return { gap: true };
    const { entries, marks } = applyChange(this.entries, data);
    this.entries = entries;
    this.version = data.version;
    this.exists = true;
    this.changes.push(data);
    if (this.changes.length > this.maxVersions) {
      // Memory stays bounded: the oldest change folds into the base.
      const oldest = this.changes.shift();
      this.base = { version: oldest.version, entries: applyChange(this.base.entries, oldest).entries };
    }
    this.#seen(data.version);
    return marks;
  }

  /** The messages at `version` from the last snapshot and the changes since, or null. */
  rebuild(version) {
    if (!this.base || compareVersions(version, this.base.version) < 0) return null;
    let entries = this.base.entries;
    for (const change of this.changes) {
      if (compareVersions(change.version, version) > 0) break;
      entries = applyChange(entries, change).entries;
    }
    return entries.map((e) => e.message);
  }

  #seen(version) {
    if (this.versions[this.versions.length - 1] === version) return;
    this.versions.push(version);
    if (this.versions.length > this.maxVersions) this.versions.shift();
  }
}
