// The console's script, part 3 of 6: sessions, a session's page and its branches.
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
