// The console's script, part 2 of 6 (scripts/build-console.mjs joins the parts, in order, into one module): runs, a run's page, approvals.
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
  const statusEl = h("span", { id: "run-status" }, "…");
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

  // Shown once there is a call to list; the controls only while the run is running.
  const toolsSection = h("section", { "aria-labelledby": "h-tools", hidden: true }, h("h2", { id: "h-tools" }, "Tool calls"), tools);
  const controlSection = h(
    "section",
    { "aria-labelledby": "h-ctl", hidden: true },
    h("h2", { id: "h-ctl" }, "Control"),
    steerForm,
    abortBtn,
  );

  show(
    `Run ${id}`,
    h("p", {}, "Status: ", statusEl, " ", scopeEl, " ", link("#/runs", "All runs")),
    err,
    h("section", { "aria-labelledby": "h-out" }, h("h2", { id: "h-out" }, "Output"), taskImages, output, thinking),
    h("section", { "aria-labelledby": "h-appr" }, h("h2", { id: "h-appr" }, "Waiting approvals"), approvalsEl),
    toolsSection,
    h("section", { "aria-labelledby": "h-res" }, h("h2", { id: "h-res" }, "Result"), resultEl),
    controlSection,
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
    toolsSection.hidden = false;
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
      // A run that is no longer running shows how its last task ended (completed, failed, cancelled…), not `idle`.
      const running = v.status === "running";
      statusEl.replaceChildren(statusBadge(!running && v.result ? v.result.status : v.status));
      controlSection.hidden = !running;
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
        err.replaceChildren(errorBox(await responseError(res)));
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
