// The transcript: one <li> per message, keyed by message id, so that a change redraws
// only the messages it touched (a streamed chunk growing does not restart the others'
// animations). Text goes in with textContent only: message content is never HTML.

const GHOST_MS = 1600; // how long a removed message stays, struck through, fading

const ROLES = {
  human: ["user", "human"],
  HumanMessageChunk: ["user", "human"],
  ai: ["assistant", "ai"],
  AIMessageChunk: ["assistant", "ai"],
  system: ["system", "system"],
  SystemMessageChunk: ["system", "system"],
  tool: ["tool", "tool"],
  ToolMessageChunk: ["tool", "tool"],
  function: ["function", "tool"],
  FunctionMessageChunk: ["function", "tool"],
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((block) => {
      if (typeof block === "string") return block;
      if (block && block.type === "text") return block.text ?? "";
      if (block && (block.type === "image_url" || block.type === "image")) return "[image]";
      return JSON.stringify(block);
    })
    .join("");
}

function preview(text, length = 160) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > length ? `${flat.slice(0, length)}…` : flat;
}

function toolCall(call, results) {
  const box = el("div", "call");
  const title = el("div");
  title.append(el("span", "fn", call.name || "(unnamed tool)"));
  if (call.id) title.append(" ", el("span", "tag", call.id));
  box.append(title);
  box.append(el("div", "args", JSON.stringify(call.args ?? {}, null, 1).replace(/\n\s*/g, " ")));
  const result = results.get(call.id);
  const line = el("div", result ? "result done" : "result");
  if (result) {
    line.append(result.status === "error" ? "✗ error: " : "✓ result: ");
    line.append(el("span", "preview", preview(contentText(result.content)) || "(empty)"));
  } else {
    line.textContent = "… awaiting result";
  }
  box.append(line);
  return box;
}

function fill(node, message, results) {
  const [role, kind] = ROLES[message.type] || [message.role || message.type || "marker", "system"];
  node.className = `msg ${kind}`;
  node.dataset.id = message.id ?? "";
  node.replaceChildren();
  const head = el("div", "head");
  head.append(el("span", "role", role));
  if (message.type && message.type.endsWith("Chunk")) head.append(el("span", "tag streaming", "streaming"));
  if (message.name) head.append(el("span", "tag", message.name));
  if (message.tool_call_id) head.append(el("span", "tag", `↳ ${message.tool_call_id}`));
  if (message.status === "error") head.append(el("span", "tag", "error"));
  head.append(el("span", "mid", message.id ?? ""));
  node.append(head);
  const text = message.type ? contentText(message.content) : JSON.stringify(message);
  const body = el("div", text ? "content" : "content empty", text || "(no text)");
  node.append(body);
  for (const call of message.tool_calls || []) node.append(toolCall(call, results));
}

/** The tool messages by the tool call they answer. */
function resultsOf(messages) {
  const results = new Map();
  for (const m of messages) if (m.tool_call_id) results.set(m.tool_call_id, m);
  return results;
}

function signature(message, results) {
  let sig = JSON.stringify(message);
  for (const call of message.tool_calls || []) {
    const result = results.get(call.id);
    sig += result ? `|${call.id}:${JSON.stringify(result.content)}` : `|${call.id}`;
  }
  return sig;
}

function flash(node, mark) {
  node.classList.remove("added", "updated");
  void node.offsetWidth; // restart the animation
  node.classList.add(mark);
}

export class Transcript {
  constructor(root) {
    this.root = root;
    this.nodes = new Map(); // message id -> { node, sig }
    this.ghosts = []; // { message, after, node, until }
    this.messages = [];
  }

  /** Show `messages`; `marks` ({added, updated, removed}) say what changed. */
  render(messages, marks = null) {
    this.messages = messages;
    const results = resultsOf(messages);
    const now = performance.now();
    for (const gone of marks?.removed || []) {
      const node = el("li");
      fill(node, gone.message, results);
      node.classList.add("removed");
      node.dataset.removed = "true";
      this.ghosts.push({ ...gone, node, until: now + GHOST_MS });
      setTimeout(() => this.#expire(), GHOST_MS + 20);
    }
    this.ghosts = this.ghosts.filter((g) => g.until > now);
    const wanted = [];
    const live = new Set();
    const placed = new Set();
    const ghostsAfter = (id) =>
      this.ghosts.filter((g) => g.after === id).map((g) => (placed.add(g), g.node));
    wanted.push(...ghostsAfter(null));
    for (const message of messages) {
      const sig = signature(message, results);
      let entry = this.nodes.get(message.id);
      if (!entry) {
        entry = { node: el("li"), sig: null };
        this.nodes.set(message.id, entry);
      }
      if (entry.sig !== sig) {
        fill(entry.node, message, results);
        entry.sig = sig;
      }
      live.add(message.id);
      wanted.push(entry.node);
      wanted.push(...ghostsAfter(message.id));
    }
    wanted.push(...this.ghosts.filter((g) => !placed.has(g)).map((g) => g.node));
    for (const [id, entry] of this.nodes) {
      if (!live.has(id)) {
        entry.node.remove();
        this.nodes.delete(id);
      }
    }
    this.#order(wanted);
    for (const id of marks?.added || []) this.#mark(id, "added");
    for (const id of marks?.updated || []) this.#mark(id, "updated");
  }

  /** Dim the messages not in `ids` (a Set of message ids; null: dim none). */
  dim(ids) {
    for (const [id, entry] of this.nodes) {
      entry.node.classList.toggle("outside", ids !== null && !ids.has(id));
    }
  }

  /** Forget every node (another thread, or a jump in history: nothing to animate). */
  clear() {
    this.nodes.clear();
    this.ghosts = [];
    this.messages = [];
    this.root.replaceChildren();
  }

  #mark(id, mark) {
    const entry = this.nodes.get(id);
    if (entry) flash(entry.node, mark);
  }

  #expire() {
    const now = performance.now();
    if (this.ghosts.some((g) => g.until <= now)) this.render(this.messages);
  }

  #order(wanted) {
    const keep = new Set(wanted);
    for (const child of [...this.root.children]) if (!keep.has(child)) child.remove();
    wanted.forEach((node, i) => {
      if (this.root.children[i] !== node) this.root.insertBefore(node, this.root.children[i] || null);
    });
  }
}
