// The console's script, part 5 of 6: the execution history and the tools.
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
