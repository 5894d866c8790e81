// The agentcore console's script (docs/console.md): an ES module without a
// framework. It builds every view with DOM calls and text nodes (never HTML
// from data), talks to the daemon's /v1 API with the session cookie, and sends
// the CSRF token from the page's meta tag on every request that changes state.
// Built into the binary by scripts/build-console.mjs
// (src/server/console/assets.generated.ts), which joins the parts in
// src/server/console/client/ in order into the one module served as
// /console/app.js. This is part 1 of 6: the DOM helpers, the API, sign-in.

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute("content") ?? "";
const csrf = meta("csrf-token");
const signedIn = meta("agentcore-signed-in") === "yes";
const main = document.getElementById("main");
const announcer = document.getElementById("announce");

/** Cleanups of the current view (timers, streams), run when the route changes. */
let cleanups = [];
const onLeave = (fn) => cleanups.push(fn);

// ------------------------------------------------------------------ DOM helpers

/** An element: `h("p", {class: "x"}, "text", child)`. Strings become text nodes. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

/** Say something to screen readers (the status live region). */
function announce(text) {
  announcer.textContent = "";
  setTimeout(() => (announcer.textContent = text), 20);
}

function show(title, ...children) {
  document.title = `${title} · agentcore console`;
  main.replaceChildren(h("h1", {}, title), ...children);
}

const pretty = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
const fmtTime = (iso) => (iso ? new Date(iso).toLocaleString() : "");
const link = (href, text) => h("a", { href }, text);

/** Give each cell of `tbody` its column's name (shown before it when a narrow screen stacks the rows). */
function labelCells(tbody) {
  const names = [...(tbody.closest("table")?.querySelectorAll("thead th") ?? [])].map((th) => th.textContent);
  for (const tr of tbody.rows) [...tr.cells].forEach((td, i) => td.colSpan === 1 && names[i] && td.setAttribute("data-label", names[i]));
}

/** Put `rows` in `tbody`, their cells labelled. */
function fill(tbody, ...rows) {
  tbody.replaceChildren(...rows);
  labelCells(tbody);
}

/** A labelled field: `field("Task", h("textarea", {…}))`; gives the control an id. */
let fieldIds = 0;
function field(label, control, hint) {
  const id = control.id || `f${++fieldIds}`;
  control.id = id;
  const hintId = hint ? `${id}-hint` : undefined;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hint ? h("p", { class: "hint", id: hintId }, hint) : null);
}

/** An error box for a failed request, focusable so it is read. */
function errorBox(err) {
  return h("p", { class: "error", role: "alert" }, err instanceof ApiError ? `${err.code}: ${err.message}` : String(err?.message ?? err));
}

// ------------------------------------------------------------------ API

class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Call the daemon; JSON in and out; throws ApiError with the envelope's code and message. */
async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (method !== "GET") headers["x-csrf-token"] = csrf;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const text = await res.text();
  let data = null;
  try {
    data = text === "" ? null : JSON.parse(text);
  } catch {
    data = null;
  }
  if (!res.ok) {
    const e = data?.error;
    if (res.status === 401) renderSignedOut("Your console session has ended.");
    throw new ApiError(res.status, e?.code ?? `HTTP_${res.status}`, e?.message ?? (text.slice(0, 200) || res.statusText), e?.details);
  }
  return data;
}

/** The ApiError of a refused streaming request (its envelope's code and message, or its text). */
async function responseError(res) {
  const text = await res.text();
  let e = null;
  try {
    e = JSON.parse(text).error;
  } catch {}
  return new ApiError(res.status, e?.code ?? `HTTP_${res.status}`, e?.message ?? text);
}

/** Read a text/event-stream response: calls `onMessage({event, id, data})` per message until it ends. */
async function readSse(res, onMessage, signal) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  signal?.addEventListener("abort", () => reader.cancel().catch(() => {}));
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ done: true }));
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut = buf.indexOf("\n\n");
    while (cut >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      const msg = { event: "message", id: null, data: "" };
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const key = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (key === "event") msg.event = val;
        else if (key === "id") msg.id = val;
        else if (key === "data") msg.data += (msg.data === "" ? "" : "\n") + val;
      }
      if (msg.data !== "") {
        try {
          msg.data = JSON.parse(msg.data);
        } catch {
          /* keep the text */
        }
        onMessage(msg);
      }
      cut = buf.indexOf("\n\n");
    }
  }
}

/** Call `fn` now and every `ms` while the view is shown. */
function poll(fn, ms) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    await fn();
    if (!stopped) timer = setTimeout(tick, ms);
  };
  onLeave(() => {
    stopped = true;
    clearTimeout(timer);
  });
  tick();
}

// ------------------------------------------------------------------ sign-in

function renderSignedOut(why) {
  document.getElementById("signout").hidden = true;
  show(
    "Sign in",
    why ? h("p", { role: "alert" }, why) : null,
    h(
      "p",
      {},
      "Open the link that ",
      h("code", {}, "agentcore serve"),
      " printed when it started (",
      h("code", {}, "http://127.0.0.1:PORT/#code=…"),
      "). Each link works once and for a few minutes. For a fresh one: ",
      h("code", {}, 'curl -s -X POST -H "Authorization: Bearer $(cat TOKEN_FILE)" http://127.0.0.1:PORT/console/codes'),
      ".",
    ),
  );
}

async function signIn(code) {
  // The code leaves the address bar (and the history) before anything else.
  history.replaceState(null, "", "/");
  show("Signing in…");
  try {
    await api("POST", "/console/session", { code });
    // a fresh page (a reload: only a new page carries this session's CSRF token)
    history.replaceState(null, "", "/#/runs");
    location.reload();
  } catch (e) {
    renderSignedOut(e instanceof ApiError ? e.message : String(e));
  }
}
