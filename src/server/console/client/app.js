// The agentcore console's script (docs/console.md): an ES module without a
// framework. It builds every view with DOM calls and text nodes (never HTML
// from data), talks to the daemon's /v1 API with the session cookie, and sends
// the CSRF token from the page's meta tag on every request that changes state.
// Built into the binary by scripts/build-console.mjs (src/server/console/assets.ts).

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

// ------------------------------------------------------------------ runs

function statusBadge(status) {
  return h("span", { class: `badge badge-${String(status).replace(/[^a-z_]/g, "")}` }, String(status));
}

function viewRuns() {
  const body = h("tbody");
  const table = h(
    "table",
    {},
    h("caption", {}, "Runs of this daemon (updated every 2 seconds)"),
    h(
      "thead",
      {},
      h("tr", {}, ...["Run", "Status", "Session", "Stop reason", "Approvals", "Started"].map((t) => h("th", { scope: "col" }, t))),
    ),
    body,
  );
  const note = h("p", {}, link("#/start", "Start a run"));
  const err = h("div");
  show("Runs", note, err, h("div", { class: "scroll" }, table));
  poll(async () => {
    try {
      const { runs } = await api("GET", "/v1/runs");
      err.replaceChildren();
      fill(
        body,
        ...(runs.length === 0
          ? [h("tr", {}, h("td", { colspan: 6 }, "No runs yet."))]
          : runs
              .slice()
              .reverse()
              .map((r) =>
                h(
                  "tr",
                  {},
                  h("td", {}, link(`#/runs/${encodeURIComponent(r.run_id)}`, r.run_id)),
                  h("td", {}, statusBadge(r.status)),
                  h(
                    "td",
                    {},
                    r.session
                      ? link(`#/sessions/${encodeURIComponent(r.session.session_id)}`, `${r.session.session_id} (${r.session.branch})`)
                      : "—",
                  ),
                  h("td", {}, r.result ? `${r.result.status} / ${r.result.stop_reason}` : "—"),
                  h("td", {}, String(r.pending_approvals ?? 0)),
                  h("td", {}, fmtTime(r.created_at)),
                ),
              )),
      );
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  }, 2000);
}

/** The image types the daemon takes; nothing else is rendered. */
const IMAGE_TYPES = { "image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP" };
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const fmtBytes = (n) =>
  typeof n !== "number" || !Number.isFinite(n)
    ? "size unknown"
    : n < 1000
      ? `${n} B`
      : n < 1e6
        ? `${(n / 1000).toFixed(1)} kB`
        : `${(n / 1e6).toFixed(1)} MB`;

/**
 * Images (`{media_type, sha256, bytes, data}`) as a list of bounded <img>
 * elements with data: URLs, each named in its alt text ("image 1 of the
 * task, PNG, 1.2 kB, sha256 ab12…"). An image of another type, or without
 * its bytes, is named but not rendered.
 */
function imageList(images, of) {
  return h(
    "ul",
    { class: "images" },
    ...images.map((im, i) => {
      const kind = IMAGE_TYPES[im?.media_type];
      const sha = typeof im?.sha256 === "string" ? `, sha256 ${im.sha256.slice(0, 12)}…` : "";
      const name = `image ${i + 1} of ${of}, ${kind ?? "unknown type"}, ${fmtBytes(im?.bytes)}${sha}`;
      if (kind === undefined || typeof im.data !== "string" || im.data === "" || !BASE64.test(im.data))
        return h(
          "li",
          { class: "image-missing" },
          `${name}: not shown (${kind === undefined ? "not an image type the daemon takes" : "no bytes"})`,
        );
      return h(
        "li",
        {},
        h(
          "figure",
          {},
          h("img", { src: `data:${im.media_type};base64,${im.data}`, alt: name, "data-sha256": im.sha256 ?? "" }),
          h("figcaption", { "aria-hidden": "true" }, name),
        ),
      );
    }),
  );
}

/** The tool call's arguments as text (the model's raw text, or the parsed value). */
const argText = (call) => (typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {}, null, 2));

function viewRun(id) {
  const statusEl = h("span", {}, "…");
  const output = h("div", { class: "output", "aria-live": "polite", "aria-atomic": "false", id: "run-output" });
  const thinking = h("details", { hidden: true }, h("summary", {}, "Thinking"), h("pre", { class: "thinking" }));
  const taskImages = h("div", { id: "task-images" });
  const scopeEl = h("span", { id: "run-scope" });
  const tools = h("ol", { class: "tools", id: "run-tools", "aria-live": "polite" });
  const approvalsEl = h("div", { id: "run-approvals" });
  const resultEl = h("dl", { class: "result", id: "run-result" });
  const err = h("div");
  const calls = new Map();

  const steerInput = h("input", { type: "text", name: "steer" });
  const steerForm = h(
    "form",
    {
      class: "inline",
      onsubmit: async (ev) => {
        ev.preventDefault();
        try {
          const r = await api("POST", `/v1/runs/${encodeURIComponent(id)}/steer`, { content: steerInput.value });
          announce(`Steering message ${r?.status ?? "queued"}.`);
          steerInput.value = "";
        } catch (e) {
          err.replaceChildren(errorBox(e));
        }
      },
    },
    field("Steer the run (a message for its next safe point)", steerInput),
    h("button", { type: "submit" }, "Steer"),
  );
  const abortBtn = h(
    "button",
    {
      type: "button",
      class: "danger",
      onclick: async () => {
        try {
          await api("POST", `/v1/runs/${encodeURIComponent(id)}/abort`, { reason: "aborted from the console" });
          announce("Abort sent.");
        } catch (e) {
          err.replaceChildren(errorBox(e));
        }
      },
    },
    "Abort",
  );

  show(
    `Run ${id}`,
    h("p", {}, "Status: ", statusEl, " ", scopeEl, " ", link("#/runs", "All runs")),
    err,
    h("section", { "aria-labelledby": "h-out" }, h("h2", { id: "h-out" }, "Output"), taskImages, output, thinking),
    h("section", { "aria-labelledby": "h-appr" }, h("h2", { id: "h-appr" }, "Waiting approvals"), approvalsEl),
    h("section", { "aria-labelledby": "h-tools" }, h("h2", { id: "h-tools" }, "Tool calls"), tools),
    h("section", { "aria-labelledby": "h-res" }, h("h2", { id: "h-res" }, "Result"), resultEl),
    h("section", { "aria-labelledby": "h-ctl" }, h("h2", { id: "h-ctl" }, "Control"), steerForm, abortBtn),
  );

  const callItem = (callId, name) => {
    let c = calls.get(callId);
    if (c !== undefined) return c;
    const args = h("pre", { class: "args" });
    const state = h("span", { class: "badge" }, "streaming");
    const dur = h("span", { class: "dur" });
    const res = h("pre", { class: "tool-result" });
    const verdict = h("p", { class: "verdict", hidden: true });
    const imgs = h("div", { class: "tool-images" });
    const li = h(
      "li",
      { class: "tool", "data-call": callId },
      h("p", {}, h("strong", {}, name ?? "tool"), " ", h("code", {}, callId), " ", state, " ", dur),
      h("p", { class: "label" }, "Arguments"),
      args,
      verdict,
      h("p", { class: "label" }, "Result"),
      res,
      imgs,
    );
    tools.append(li);
    c = { li, args, state, dur, res, verdict, imgs, name: name ?? "tool", started: null, streamed: "", deltas: 0 };
    calls.set(callId, c);
    return c;
  };

  const setResult = (result) => {
    if (!result) return;
    const u = result.usage ?? {};
    const rows = [
      ["Status", result.status],
      ["Stop reason", result.stop_reason],
      ["Turns", result.turns],
      ["Input tokens", u.input_tokens ?? "—"],
      ["Output tokens", u.output_tokens ?? "—"],
      ["Total tokens", u.total_tokens ?? "—"],
      ["Model requests", u.request_count ?? "—"],
    ];
    if (result.error) rows.push(["Error", result.error]);
    resultEl.replaceChildren(...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))]));
  };

  // The daemon's own duration of each finished call, from the execution history (when it keeps one).
  let durationTimer = null;
  const durations = () => {
    clearTimeout(durationTimer);
    durationTimer = setTimeout(async () => {
      try {
        const h = await api("GET", "/v1/history?limit=10000");
        if (!h.enabled) return;
        for (const [callId, c] of calls) {
          const rec = h.records.findLast((r) => r.call_id === callId && (r.run_id === undefined || r.run_id === c.runId));
          if (rec !== undefined) c.dur.textContent = `${rec.duration_ms} ms`;
        }
      } catch {
        /* the page's own figure stays */
      }
    }, 300);
  };
  onLeave(() => clearTimeout(durationTimer));

  const pendingApproval = (a) => approvalCard(a, () => refreshStatus());

  // Refreshes overlap (the stream's events, the timer): only the latest one started may paint.
  let refreshes = 0;
  let shownApprovals = null;
  const refreshStatus = async () => {
    const mine = ++refreshes;
    try {
      const v = await api("GET", `/v1/runs/${encodeURIComponent(id)}`);
      const { approvals } = await api("GET", "/v1/approvals");
      if (mine !== refreshes) return;
      statusEl.replaceChildren(statusBadge(v.status));
      scopeEl.textContent = `Tools: ${Array.isArray(v.tools) ? (v.tools.length === 0 ? "none" : v.tools.join(", ")) : "all"}; policy: ${v.policy ?? "daemon"}.`;
      if (v.result) setResult(v.result);
      const waiting = approvals.filter((a) => a.agent_id === v.agent_id);
      const key = waiting.map((a) => a.approval_id).join(",");
      if (key === shownApprovals) return; // keep a reason being typed
      shownApprovals = key;
      approvalsEl.replaceChildren(...(waiting.length === 0 ? [h("p", {}, "None.")] : waiting.map(pendingApproval)));
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  };

  const onEvent = ({ event, data }) => {
    switch (event) {
      case "agent_started":
        if (Array.isArray(data.images) && data.images.length > 0)
          taskImages.replaceChildren(h("p", { class: "label" }, "Task images"), imageList(data.images, "the task"));
        break;
      case "assistant_text_delta":
        output.append(data.delta);
        break;
      case "assistant_thinking_delta":
        thinking.hidden = false;
        thinking.querySelector("pre").append(data.delta);
        break;
      case "tool_call_arguments_delta": {
        // the arguments as the model streams them, and the validator's verdict once they can no longer become valid JSON
        const c = callItem(data.tool_call_id, data.tool);
        c.streamed += data.delta ?? "";
        c.deltas++;
        c.li.dataset.deltas = String(c.deltas);
        c.args.textContent = c.streamed;
        if (data.error) {
          c.verdict.hidden = false;
          c.verdict.textContent = `These arguments can no longer become valid JSON: ${data.error.message} (byte ${data.error.offset})`;
          c.state.textContent = "invalid arguments";
          c.state.className = "badge badge-failed";
        }
        break;
      }
      case "tool_started": {
        const c = callItem(data.tool_call.id, data.tool_call.name);
        if (c.deltas === 0) c.args.textContent = argText(data.tool_call);
        c.state.textContent = "running";
        c.state.className = "badge badge-running";
        c.started = performance.now();
        break;
      }
      case "tool_approval_requested": {
        const c = callItem(data.tool_call.id, data.tool_call.name);
        if (c.deltas === 0) c.args.textContent = argText(data.tool_call);
        c.state.textContent = "waiting for approval";
        c.state.className = "badge badge-waiting";
        break;
      }
      case "tool_approval_decided": {
        const c = callItem(data.tool_call_id);
        c.state.textContent = data.approved ? "approved" : `denied${data.reason ? `: ${data.reason}` : ""}`;
        break;
      }
      case "tool_completed": {
        const c = callItem(data.tool_call.id, data.tool_call.name);
        const r = data.result;
        const failed = r.cancelled || r.error !== null;
        c.state.textContent = r.cancelled ? "cancelled" : failed ? "failed" : "completed";
        c.state.className = `badge badge-${failed ? "failed" : "completed"}`;
        if (c.started !== null) c.dur.textContent = `${Math.round(performance.now() - c.started)} ms (as seen here)`;
        c.runId = data.run_id;
        durations();
        c.res.textContent = r.error ?? r.output ?? (r.messages ?? []).map((m) => pretty(m.content)).join("\n");
        const images = (r.messages ?? []).flatMap((m) => (Array.isArray(m.images) ? m.images : []));
        if (images.length > 0)
          c.imgs.replaceChildren(h("p", { class: "label" }, "Result images"), imageList(images, `the ${c.name} result`));
        break;
      }
      case "approval_requested":
      case "approval_resolved":
        refreshStatus();
        break;
      case "message_completed":
        if (output.lastChild && !output.textContent.endsWith("\n")) output.append("\n");
        break;
      case "agent_finished":
        setResult(data.result);
        announce(`Run finished: ${data.result.status}, ${data.result.stop_reason}.`);
        break;
      case "done":
        refreshStatus();
        break;
    }
  };

  const ac = new AbortController();
  onLeave(() => ac.abort());
  poll(refreshStatus, 2000);
  (async () => {
    try {
      const res = await fetch(`/v1/runs/${encodeURIComponent(id)}/events?after=0`, {
        signal: ac.signal,
        headers: { accept: "text/event-stream" },
      });
      if (!res.ok) {
        const text = await res.text();
        let e = null;
        try {
          e = JSON.parse(text).error;
        } catch {}
        err.replaceChildren(errorBox(new ApiError(res.status, e?.code ?? `HTTP_${res.status}`, e?.message ?? text)));
        return;
      }
      await readSse(res, onEvent, ac.signal);
      refreshStatus();
    } catch (e) {
      if (!ac.signal.aborted) err.replaceChildren(errorBox(e));
    }
  })();
}

// ------------------------------------------------------------------ approvals

/** One pending approval with its redacted preview and an approve/deny form. */
function approvalCard(a, after) {
  const reason = h("input", { type: "text", name: "reason", maxlength: 1000 });
  const err = h("div");
  const answer = async (approved) => {
    try {
      await api(
        "POST",
        `/v1/approvals/${encodeURIComponent(a.approval_id)}`,
        reason.value === "" ? { approved } : { approved, reason: reason.value },
      );
      announce(`${approved ? "Approved" : "Denied"} ${a.tool}.`);
      after?.();
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  };
  return h(
    "article",
    { class: "card approval", "aria-label": `Approval for ${a.tool}` },
    h("h3", {}, `${a.tool} `, h("span", { class: "badge" }, a.effect)),
    h(
      "dl",
      {},
      h("dt", {}, "Approval"),
      h("dd", {}, h("code", {}, a.approval_id)),
      h("dt", {}, "Rule"),
      h("dd", {}, a.rule_id ?? "—"),
      h("dt", {}, "Why"),
      h("dd", {}, a.reason ?? "—"),
      h("dt", {}, "Run"),
      h("dd", {}, a.run_id ?? "— (a direct call)"),
      h("dt", {}, "Expires"),
      h("dd", {}, fmtTime(a.expires_at)),
    ),
    h("p", { class: "label" }, "Arguments (redacted preview)"),
    h("pre", { class: "args" }, pretty(a.arguments)),
    h(
      "form",
      { class: "inline", onsubmit: (ev) => ev.preventDefault() },
      field("Reason (optional)", reason),
      h("button", { type: "button", onclick: () => answer(true) }, "Approve"),
      h("button", { type: "button", class: "danger", onclick: () => answer(false) }, "Deny"),
    ),
    err,
  );
}

function viewApprovals() {
  const list = h("div", { id: "approvals", "aria-live": "polite" });
  const err = h("div");
  show("Approvals", h("p", {}, "Tool calls waiting for a person (updated every 2 seconds)."), err, list);
  let shown = null;
  let refreshes = 0;
  const refresh = async () => {
    const mine = ++refreshes;
    try {
      const { approvals } = await api("GET", "/v1/approvals");
      if (mine !== refreshes) return; // a later refresh paints
      err.replaceChildren();
      const key = approvals.map((a) => a.approval_id).join(",");
      if (key === shown) return; // keep a reason being typed
      shown = key;
      list.replaceChildren(...(approvals.length === 0 ? [h("p", {}, "Nothing waits.")] : approvals.map((a) => approvalCard(a, refresh))));
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  };
  poll(refresh, 2000);
}

// ------------------------------------------------------------------ sessions

function viewSessions() {
  const body = h("tbody");
  const err = h("div");
  show(
    "Sessions",
    err,
    h(
      "div",
      { class: "scroll" },
      h(
        "table",
        {},
        h("caption", {}, "Sessions in the daemon's store"),
        h("thead", {}, h("tr", {}, ...["Session", "Branches", "Records", "Runs (main)"].map((t) => h("th", { scope: "col" }, t)))),
        body,
      ),
    ),
  );
  api("GET", "/v1/sessions").then(
    ({ sessions }) =>
      fill(
        body,
        ...(sessions.length === 0
          ? [h("tr", {}, h("td", { colspan: 4 }, "No sessions yet."))]
          : sessions.map((s) =>
              h(
                "tr",
                {},
                h("td", {}, link(`#/sessions/${encodeURIComponent(s.session_id)}`, s.session_id)),
                h("td", {}, s.branches.join(", ")),
                h("td", {}, String(s.records)),
                h("td", {}, String(s.runs)),
              ),
            )),
      ),
    (e) => err.replaceChildren(errorBox(e)),
  );
}

/** Branches as a nested list: each under the branch it was forked from. */
function branchTree(branches) {
  const children = new Map();
  for (const b of branches) {
    const parent = b.source_branch_id ?? "";
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(b);
  }
  const known = new Set(branches.map((b) => b.branch_id));
  const build = (parent) =>
    h(
      "ul",
      { role: parent === "" ? "tree" : "group", "aria-label": parent === "" ? "Branches" : undefined },
      ...(children.get(parent) ?? []).map((b) =>
        h(
          "li",
          { role: "treeitem", "aria-expanded": children.has(b.branch_id) ? "true" : undefined, "data-branch": b.branch_id },
          h("strong", {}, b.branch_id),
          b.intent ? ` (${b.intent}` : "",
          b.base_record_id ? `${b.intent ? ", " : " ("}from ${b.base_record_id.slice(0, 12)})` : b.intent ? ")" : "",
          children.has(b.branch_id) ? build(b.branch_id) : null,
        ),
      ),
    );
  // branches whose source is not listed hang at the top
  for (const [parent, list] of children) if (parent !== "" && !known.has(parent)) children.set("", [...(children.get("") ?? []), ...list]);
  return build("");
}

function viewSession(id) {
  const err = h("div");
  const treeEl = h("div", { id: "branch-tree" });
  const recBody = h("tbody");
  const path = `/v1/sessions/${encodeURIComponent(id)}`;
  const act = async (what, body) => {
    try {
      const r = await api("POST", `${path}/${what}`, body);
      announce(`${what} done: branch ${r.branch?.branch_id ?? r.branch_id ?? ""}.`);
      err.replaceChildren(
        h(
          "p",
          { class: "ok", role: "status" },
          `${what}: branch ${r.branch?.branch_id ?? r.branch_id ?? "?"}${r.task ? `, task: ${r.task}` : ""}`,
        ),
      );
      await load();
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  };
  const optional = (v) => (v.trim() === "" ? undefined : v.trim());
  const form = (title, inputs, submit) => {
    const els = inputs.map(([label, name, required]) => [label, h("input", { type: "text", name, required: required || undefined })]);
    return h(
      "form",
      {
        class: "card",
        "aria-label": title,
        onsubmit: (ev) => {
          ev.preventDefault();
          const values = Object.fromEntries(els.map(([, el]) => [el.name, optional(el.value)]));
          submit(values);
        },
      },
      h("h3", {}, title),
      ...els.map(([label, el]) => field(label, el)),
      h("button", { type: "submit" }, title),
    );
  };
  show(
    `Session ${id}`,
    h("p", {}, link("#/sessions", "All sessions")),
    err,
    h("section", { "aria-labelledby": "h-tree" }, h("h2", { id: "h-tree" }, "Branches"), treeEl),
    h(
      "section",
      { "aria-labelledby": "h-act", class: "forms" },
      h("h2", { id: "h-act" }, "Fork, roll back, retry"),
      form(
        "Fork",
        [
          ["From record id (default: the head of main)", "from"],
          ["New branch name (optional)", "name"],
        ],
        (v) => act("fork", v),
      ),
      form(
        "Roll back",
        [
          ["To record id", "to", true],
          ["New branch name (optional)", "name"],
        ],
        (v) => act("rollback", v),
      ),
      form(
        "Retry",
        [
          ["Run id (the agent run to retry)", "run", true],
          ["New branch name (optional)", "name"],
        ],
        (v) => act("retry", v),
      ),
    ),
    h(
      "section",
      { "aria-labelledby": "h-rec" },
      h("h2", { id: "h-rec" }, "Records"),
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          {},
          h("caption", {}, "The journal, newest last (at most 300)"),
          h("thead", {}, h("tr", {}, ...["#", "Record", "Branch", "Type", "Run", "Time"].map((t) => h("th", { scope: "col" }, t)))),
          recBody,
        ),
      ),
    ),
  );
  const load = async () => {
    try {
      const t = await api("GET", `${path}/tree`);
      treeEl.replaceChildren(branchTree(t.branches));
      fill(
        recBody,
        ...t.records
          .slice(-300)
          .map((r) =>
            h(
              "tr",
              {},
              h("td", {}, String(r.revision)),
              h("td", {}, h("code", {}, r.record_id)),
              h("td", {}, r.branch_id),
              h("td", {}, r.type),
              h("td", {}, r.data?.run_id ? h("code", {}, String(r.data.run_id)) : ""),
              h("td", {}, fmtTime(r.time)),
            ),
          ),
      );
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  };
  load();
}

// ------------------------------------------------------------------ start a run

function viewStart() {
  const task = h("textarea", { name: "task", rows: 3, required: true });
  const source = h(
    "select",
    { name: "source" },
    h("option", { value: "script" }, "a scripted model"),
    h("option", { value: "model" }, "a model"),
  );
  const script = h("textarea", { name: "script", rows: 5, spellcheck: "false" });
  script.value = '{"content": "Hello from a scripted model."}';
  const preset = h("input", { type: "text", name: "preset" });
  const model = h("input", { type: "text", name: "model" });
  const url = h("input", { type: "url", name: "url" });
  const maxSteps = h("input", { type: "number", name: "max_steps", min: 1, max: 10000 });
  const session = h("input", { type: "text", name: "session" });
  const branch = h("input", { type: "text", name: "branch" });
  const system = h("textarea", { name: "system", rows: 2 });
  const err = h("div");
  const toolSelect = h("select", { name: "tools", multiple: true, size: 4 });
  const policy = h(
    "select",
    { name: "policy" },
    h("option", { value: "daemon" }, "daemon: the daemon's policy as it is"),
    h("option", { value: "read_only" }, "read_only: side-effecting tools are refused"),
    h("option", { value: "ask" }, "ask: side-effecting tools need an approval"),
  );
  api("GET", "/v1/tools").then(
    ({ tools }) => {
      toolSelect.replaceChildren(...tools.map((t) => h("option", { value: t.name }, `${t.name} (${t.effect})`)));
      toolSelect.size = Math.min(8, Math.max(2, tools.length));
    },
    (e) => err.replaceChildren(errorBox(e)),
  );
  const scriptBox = h(
    "fieldset",
    {},
    h("legend", {}, "Scripted model"),
    field("Model turns (JSONL, one turn a line)", script, "See the scripted-model format in docs/agent.md."),
  );
  const modelBox = h(
    "fieldset",
    { hidden: true },
    h("legend", {}, "Model"),
    field(
      "Preset (optional)",
      preset,
      "A model preset name (docs/agent.md); the rest comes from the daemon's CHAT_MODEL, MODEL_URL and MODEL_API_KEY.",
    ),
    field("Model name (optional)", model),
    field("Base URL (optional)", url),
  );
  source.addEventListener("change", () => {
    scriptBox.hidden = source.value !== "script";
    modelBox.hidden = source.value !== "model";
  });
  const submit = async (ev) => {
    ev.preventDefault();
    const body = { task: task.value, detached: true };
    if (source.value === "script") {
      try {
        body.script = script.value
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l, i) => {
            try {
              return JSON.parse(l);
            } catch (e) {
              throw new Error(`script line ${i + 1} is not JSON: ${e.message}`);
            }
          });
      } catch (e) {
        err.replaceChildren(errorBox(e));
        return;
      }
    } else {
      const m = {};
      if (preset.value.trim()) m.preset = preset.value.trim();
      if (model.value.trim()) m.model = model.value.trim();
      if (url.value.trim()) m.url = url.value.trim();
      body.model = m;
    }
    if (maxSteps.value !== "") body.max_steps = Number(maxSteps.value);
    if (session.value.trim()) body.session = session.value.trim();
    if (branch.value.trim()) body.branch = branch.value.trim();
    if (system.value.trim()) body.system = system.value;
    const chosen = [...toolSelect.selectedOptions].map((o) => o.value);
    if (chosen.length > 0) body.tools = chosen;
    if (policy.value !== "daemon") body.policy = policy.value;
    try {
      const res = await fetch("/v1/runs", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", "x-csrf-token": csrf },
        body: JSON.stringify(body),
      });
      if (!res.ok) {
        const text = await res.text();
        let e = null;
        try {
          e = JSON.parse(text).error;
        } catch {}
        throw new ApiError(res.status, e?.code ?? `HTTP_${res.status}`, e?.message ?? text);
      }
      const id = res.headers.get("x-run-id");
      res.body?.cancel().catch(() => {}); // a detached run goes on; its page follows it
      location.hash = `#/runs/${encodeURIComponent(id)}`;
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  };
  show(
    "Start a run",
    h(
      "p",
      {},
      "The run uses the tools chosen here (all of the daemon's when none is chosen; see Tools) under the daemon's policy, narrowed by the preset. It is detached: leaving its page does not stop it.",
    ),
    err,
    h(
      "form",
      { onsubmit: submit, id: "start-form" },
      field("Task", task),
      field("Model source", source),
      scriptBox,
      modelBox,
      h(
        "fieldset",
        {},
        h("legend", {}, "Tools and policy"),
        field(
          "Tools the run may use",
          toolSelect,
          "None chosen: all of the daemon's tools. Ctrl or Shift and a click (or Space) choose more than one.",
        ),
        field("Policy preset", policy, "A preset can only narrow the daemon's own policy: a deny of the daemon stays a deny."),
      ),
      h(
        "fieldset",
        {},
        h("legend", {}, "Limits and session (optional)"),
        field("Max steps", maxSteps),
        field("Session id", session, "Record the run in this session (created when new)."),
        field("Branch", branch),
        field("System prompt", system),
      ),
      h("button", { type: "submit" }, "Start"),
    ),
  );
}

// ------------------------------------------------------------------ history

function viewHistory() {
  const tool = h("input", { type: "text", name: "tool" });
  const decision = h(
    "select",
    { name: "decision" },
    ...["", "allow", "deny", "require_approval", "none"].map((v) => h("option", { value: v }, v === "" ? "any" : v)),
  );
  const status = h("select", { name: "status" }, ...["", "success", "failed"].map((v) => h("option", { value: v }, v === "" ? "any" : v)));
  const since = h("input", { type: "datetime-local", name: "since" });
  const body = h("tbody");
  const count = h("p", { role: "status" });
  const err = h("div");
  let records = [];
  const render = () => {
    const t = tool.value.trim();
    const s = since.value === "" ? null : new Date(since.value).getTime();
    const rows = records.filter(
      (r) =>
        (t === "" || r.tool === t) &&
        (decision.value === "" || (decision.value === "none" ? r.decision === null : r.decision?.action === decision.value)) &&
        (status.value === "" || (status.value === "success") === r.success) &&
        (s === null || new Date(r.time).getTime() >= s),
    );
    count.textContent = `${rows.length} of ${records.length} calls`;
    fill(
      body,
      ...rows
        .slice()
        .reverse()
        .map((r) =>
          h(
            "tr",
            {},
            h("td", {}, fmtTime(r.time)),
            h("td", {}, r.tool),
            h(
              "td",
              {},
              r.decision
                ? `${r.decision.action}${r.decision.approved === undefined ? "" : r.decision.approved ? " (approved)" : " (denied)"} by ${r.decision.by}`
                : "—",
            ),
            h("td", {}, r.success ? "success" : `failed: ${r.code}`),
            h("td", {}, `${r.duration_ms} ms`),
            h("td", {}, r.call_id ? h("code", {}, r.call_id) : "—"),
          ),
        ),
    );
  };
  for (const el of [tool, decision, status, since]) el.addEventListener("input", render);
  show(
    "History",
    h(
      "form",
      { class: "filters", "aria-label": "Filter the history", onsubmit: (e) => e.preventDefault() },
      field("Tool", tool),
      field("Decision", decision),
      field("Status", status),
      field("Since", since),
    ),
    err,
    count,
    h(
      "div",
      { class: "scroll" },
      h(
        "table",
        {},
        h("caption", {}, "Tool calls in the execution history, newest first"),
        h("thead", {}, h("tr", {}, ...["Time", "Tool", "Decision", "Status", "Duration", "Call"].map((x) => h("th", { scope: "col" }, x)))),
        body,
      ),
    ),
  );
  api("GET", "/v1/history").then(
    (r) => {
      if (r.enabled === false)
        err.replaceChildren(
          h(
            "p",
            {},
            "This daemon keeps no execution history: start it with a config whose ",
            h("code", {}, "history"),
            " names a log file.",
          ),
        );
      records = r.records;
      render();
    },
    (e) => err.replaceChildren(errorBox(e)),
  );
}

// ------------------------------------------------------------------ tools

function viewTools() {
  const list = h("div");
  const err = h("div");
  show("Tools", err, list);
  api("GET", "/v1/tools").then(
    ({ tools }) =>
      list.replaceChildren(
        ...tools.map((t) =>
          h(
            "article",
            { class: "card", "aria-label": `Tool ${t.name}` },
            h("h2", {}, t.name, " ", h("span", { class: "badge" }, t.effect), t.strict ? h("span", { class: "badge" }, "strict") : null),
            h("p", {}, t.description ?? ""),
            h("details", {}, h("summary", {}, `Schema of ${t.name}`), h("pre", { class: "args" }, pretty(t.parameters ?? {}))),
          ),
        ),
      ),
    (e) => err.replaceChildren(errorBox(e)),
  );
}

// ------------------------------------------------------------------ router

function route() {
  for (const fn of cleanups) fn();
  cleanups = [];
  const hash = location.hash;
  const parts = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  for (const a of document.querySelectorAll("nav a")) {
    if (hash.startsWith(a.getAttribute("href"))) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  switch (parts[0]) {
    case "runs":
      if (parts[1]) viewRun(parts[1]);
      else viewRuns();
      break;
    case "approvals":
      viewApprovals();
      break;
    case "sessions":
      if (parts[1]) viewSession(parts[1]);
      else viewSessions();
      break;
    case "start":
      viewStart();
      break;
    case "history":
      viewHistory();
      break;
    case "tools":
      viewTools();
      break;
    default:
      viewRuns();
  }
  main.focus();
}

/** The sign-in code in the address's fragment, if any. */
const codeInHash = () => /^#code=([0-9a-fA-F]+)$/.exec(location.hash)?.[1];

window.addEventListener("hashchange", () => {
  const code = codeInHash();
  if (code) signIn(code);
  else if (location.hash === "#main")
    return; // the skip link
  else if (signedIn) route();
});
const code = codeInHash();
if (code) signIn(code);
else if (!signedIn) renderSignedOut();
else {
  const out = document.getElementById("signout");
  out.hidden = false;
  out.addEventListener("click", async () => {
    await api("POST", "/console/logout").catch(() => {});
    history.replaceState(null, "", "/");
    location.reload();
  });
  route();
}
