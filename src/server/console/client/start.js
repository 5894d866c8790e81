// The console's script, part 4 of 6: the form that starts a run.
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
      if (!res.ok) throw await responseError(res);
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
