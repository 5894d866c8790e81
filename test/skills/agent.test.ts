/**
 * Skills in the agent: the index and active-skill messages in the requests a
 * model actually receives (ScriptedModel, and once over real HTTP through the
 * openai SDK), activation at run start and after steering, the reset per run,
 * and that nothing about skills reaches the history or a session journal.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createAgent, type AgentEvent } from "../../src/agent/index.ts";
import { CompactionPolicy } from "../../src/context/index.ts";
import { OpenAIModelAdapter } from "../../src/providers/openai.ts";
import { ScriptedModel } from "../../src/providers/scripted.ts";
import type { ChatMessage } from "../../src/providers/types.ts";
import { createRuntime } from "../../src/runtime/index.ts";
import { JsonlSessionStorage, restoreSession, SessionRecorder, sessionMessages } from "../../src/session/index.ts";
import { discoverSkills, NO_DESCRIPTION, SkillCatalog, SkillError, skillIndexMessage } from "../../src/skills/index.ts";
import { REPO } from "../support/binary.ts";
import { startOpenAIServer, textReply, type ScriptedOpenAIServer } from "../support/openai-server.ts";
import { cleanupRoots, skillsRoot, tempRoot } from "../support/skills.ts";

afterAll(cleanupRoots);

const md = (front: string, body: string) => `---\n${front}\n---\n${body}\n`;

/** Two skills: `alpha` (with template and sample) and `beta` (SKILL.md only, no description). */
function twoSkills(): SkillCatalog {
  return discoverSkills(
    skillsRoot({
      "alpha/SKILL.md": md("name: alpha\ndescription: The first skill.", "ALPHA BODY"),
      "alpha/template.md": "ALPHA TEMPLATE",
      "alpha/examples/sample.md": "ALPHA SAMPLE",
      "beta/SKILL.md": md("name: beta", "BETA BODY"),
    }),
  );
}

const text = (s: string) => ({ content: s, usage: { input_tokens: 10, output_tokens: 2 } });
const contents = (msgs: ChatMessage[]) => msgs.map((m) => `${m.role}:${String(m.content).split("\n")[0]}`);
const systemTexts = (msgs: ChatMessage[]) => msgs.filter((m) => m.role === "system").map((m) => m.content as string);

function collect(): { events: AgentEvent[]; sink: (e: AgentEvent) => void } {
  const events: AgentEvent[] = [];
  return { events, sink: (e) => void events.push(e) };
}

describe("requests", () => {
  test("index right after the system prompt; active skill message right after the index", async () => {
    const skills = twoSkills();
    const model = new ScriptedModel([text("done")]);
    const agent = createAgent({ model, skills, systemPrompt: "You are terse." });
    const r = await agent.run("Please use $alpha on this");
    expect(r.status).toBe("completed");
    const msgs = model.requests[0]!.messages;
    expect(msgs).toHaveLength(4);
    expect(msgs[0]).toEqual({ role: "system", content: "You are terse." });
    expect(msgs[1]).toEqual(skillIndexMessage(skills)!);
    expect(msgs[1]!.content).toContain(`- name: beta\n  description: ${NO_DESCRIPTION}\n  location: ${skills.get("beta")!.path}`);
    expect(msgs[2]!.role).toBe("system");
    expect(msgs[2]!.content).toStartWith("Active skill: alpha.");
    expect(msgs[2]!.content).toContain(
      "[SKILL.md]\n---\nname: alpha\ndescription: The first skill.\n---\nALPHA BODY\n\n[template.md]\nALPHA TEMPLATE\n\n[examples/sample.md]\nALPHA SAMPLE",
    );
    expect(msgs[3]).toEqual({ role: "user", content: "Please use $alpha on this" });
    expect(agent.activeSkill).toBe("alpha");
    // No skill tool is registered.
    expect(model.requests[0]!.tools).toEqual([]);
    expect(agent.runtime.registry.size).toBe(0);
    await agent.shutdown();
  });

  test("without a system prompt the index comes first; without a mention there is no active message", async () => {
    const model = new ScriptedModel([text("ok")]);
    const agent = createAgent({ model, skills: twoSkills() });
    await agent.run("no skill mentioned, not even $alphas");
    expect(contents(model.requests[0]!.messages)).toEqual([
      "system:Skills are folders of instructions for particular kinds of work. The user turns one on by writing $name or skill:name in a message; the instructions of the active skill then follow in a separate system message.",
      "user:no skill mentioned, not even $alphas",
    ]);
    expect(agent.activeSkill).toBeNull();
    await agent.shutdown();
  });

  test("no skill messages when the catalog is empty", async () => {
    const model = new ScriptedModel([text("ok")]);
    const agent = createAgent({ model, skills: discoverSkills(tempRoot()), systemPrompt: "P" });
    await agent.run("$alpha");
    expect(model.requests[0]!.messages).toEqual([
      { role: "system", content: "P" },
      { role: "user", content: "$alpha" },
    ]);
    await agent.shutdown();
  });

  test("every request of a run carries the messages; a tool turn keeps them in place", async () => {
    const model = new ScriptedModel([
      { content: null, tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"hi"}' }] },
      text("done"),
    ]);
    const agent = createAgent({ model, runtime: createRuntime(), skills: twoSkills(), systemPrompt: "P" });
    await agent.run("skill:BETA go");
    const second = model.requests[1]!.messages;
    expect(second.map((m) => m.role)).toEqual(["system", "system", "system", "user", "assistant", "tool"]);
    expect(second[2]!.content).toStartWith("Active skill: beta.");
    expect(second[2]!.content).toEndWith("[SKILL.md]\n---\nname: beta\n---\nBETA BODY");
    // Only the registered tools are offered.
    expect(model.requests[1]!.tools.map((t) => t.name).sort()).toEqual(["echo", "read_file"]);
    await agent.shutdown();
  });

  test("the example skills; values other than a SkillCatalog are refused", async () => {
    const agent = createAgent({ model: new ScriptedModel([text("ok")]), skills: discoverSkills(join(REPO, "examples", "skills")) });
    expect(agent.skills!.skills.map((s) => s.name)).toEqual(["commit-message", "release-notes"]);
    await agent.run("$release-notes 1.0: first");
    expect(agent.activeSkill).toBe("release-notes");
    await agent.shutdown();
    for (const bad of ["examples/skills", 7, {}, { skills: [] }]) {
      expect(() => createAgent({ model: new ScriptedModel([]), skills: bad as unknown as SkillCatalog })).toThrow(
        /skills must be a SkillCatalog/,
      );
    }
    expect(() => discoverSkills(join(tempRoot(), "missing"))).toThrow(SkillError);
    expect(createAgent({ model: new ScriptedModel([]) }).skills).toBeNull();
  });

  test("a skill file that disappeared after discovery fails the run with a clear error", async () => {
    const root = skillsRoot({ "gone/SKILL.md": "body", "gone/template.md": "t" });
    const skills = discoverSkills(root);
    rmSync(join(root, "gone", "template.md"));
    const model = new ScriptedModel([text("never")]);
    const agent = createAgent({ model, skills });
    const r = await agent.run("$gone");
    expect(r).toMatchObject({ status: "failed", stop_reason: "runtime_error" });
    expect(r.error).toContain(join("gone", "template.md"));
    expect(r.error).toContain("ENOENT");
    expect(model.requests).toHaveLength(0);
    await agent.shutdown();
  });
});

describe("activation", () => {
  test("skill_activated is emitted at run start, after agent_started", async () => {
    const { events, sink } = collect();
    const skills = twoSkills();
    const agent = createAgent({ model: new ScriptedModel([text("ok")]), skills, sinks: [sink] });
    await agent.run("$beta");
    expect(events.map((e) => e.kind)).toEqual([
      "agent_started",
      "skill_activated",
      "turn_started",
      "assistant_text_delta",
      "message_completed",
      "turn_completed",
      "agent_finished",
    ]);
    expect(events[1]).toMatchObject({
      kind: "skill_activated",
      name: "beta",
      path: skills.get("beta")!.path,
      trigger: "run_start",
      sequence: 2,
    });
    await agent.shutdown();
  });

  test("the first skill in discovery order wins", async () => {
    const model = new ScriptedModel([text("ok")]);
    const agent = createAgent({ model, skills: twoSkills() });
    await agent.run("$beta first, then $alpha");
    expect(agent.activeSkill).toBe("alpha");
    await agent.shutdown();
  });

  test("reset at each run start: only the latest user message counts", async () => {
    const model = new ScriptedModel([text("one"), text("two"), text("three")]);
    const { events, sink } = collect();
    const agent = createAgent({ model, skills: twoSkills(), sinks: [sink] });
    await agent.run("$alpha please");
    expect(agent.activeSkill).toBe("alpha");
    await agent.run("now something else");
    expect(agent.activeSkill).toBeNull();
    expect(systemTexts(model.requests[1]!.messages)).toHaveLength(1); // the index only
    await agent.run("and skill:beta");
    expect(agent.activeSkill).toBe("beta");
    expect(systemTexts(model.requests[2]!.messages)[1]).toStartWith("Active skill: beta.");
    expect(events.filter((e) => e.kind === "skill_activated").map((e) => (e as { name?: string }).name)).toEqual(["alpha", "beta"]);
    await agent.shutdown();
  });

  test("continueRun scans the latest user message again", async () => {
    const model = new ScriptedModel([text("first"), text("continued")]);
    const agent = createAgent({ model, skills: twoSkills() });
    await agent.run("$alpha");
    await agent.continueRun();
    expect(agent.activeSkill).toBe("alpha");
    expect(systemTexts(model.requests[1]!.messages)[1]).toStartWith("Active skill: alpha.");
    await agent.shutdown();
  });

  test("steering that mentions a skill activates it for the next request", async () => {
    const { events, sink } = collect();
    const model = new ScriptedModel([text("turn one"), text("turn two"), text("turn three")]);
    const agent = createAgent({
      model,
      skills: twoSkills(),
      sinks: [sink, (e) => void (e.kind === "message_completed" && e.turn === 1 && agent.steer("switch to skill:beta"))],
    });
    const r = await agent.run("start with $alpha");
    expect(r).toMatchObject({ status: "completed", turns: 2, output: "turn two" });
    expect(systemTexts(model.requests[0]!.messages)[1]).toStartWith("Active skill: alpha.");
    expect(systemTexts(model.requests[1]!.messages)[1]).toStartWith("Active skill: beta.");
    expect(model.requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "switch to skill:beta" });
    const kinds = events.map((e) => e.kind);
    const steered = kinds.indexOf("steering_applied");
    expect(kinds.slice(steered, steered + 2)).toEqual(["steering_applied", "skill_activated"]);
    expect(events[steered + 1]).toMatchObject({ name: "beta", trigger: "steering" });
    expect(agent.activeSkill).toBe("beta");
    await agent.shutdown();
  });

  test("steering without a mention keeps the active skill (and emits nothing)", async () => {
    const { events, sink } = collect();
    const model = new ScriptedModel([text("turn one"), text("turn two")]);
    const agent = createAgent({
      model,
      skills: twoSkills(),
      sinks: [sink, (e) => void (e.kind === "message_completed" && e.turn === 1 && agent.steer("shorter please"))],
    });
    await agent.run("$alpha");
    expect(systemTexts(model.requests[1]!.messages)[1]).toStartWith("Active skill: alpha.");
    expect(events.filter((e) => e.kind === "skill_activated")).toHaveLength(1);
    await agent.shutdown();
  });

  test("steering can activate a skill in a run that started without one", async () => {
    const model = new ScriptedModel([text("one"), text("two")]);
    const agent = createAgent({
      model,
      skills: twoSkills(),
      sinks: [(e) => void (e.kind === "message_completed" && e.turn === 1 && agent.steer("use $beta"))],
    });
    await agent.run("plain");
    expect(systemTexts(model.requests[0]!.messages)).toHaveLength(1);
    expect(systemTexts(model.requests[1]!.messages)[1]).toStartWith("Active skill: beta.");
    await agent.shutdown();
  });
});

describe("never persisted", () => {
  test("history, session journal and a restored agent hold no skill messages", async () => {
    const dir = tempRoot("agentcore-skills-sessions-");
    const skills = twoSkills();
    const model = new ScriptedModel([
      {
        content: null,
        tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"x"}' }],
        usage: { input_tokens: 5, output_tokens: 1 },
      },
      text("done"),
      text("again"),
    ]);
    const storage = new JsonlSessionStorage(dir);
    const recorder = new SessionRecorder("s1", storage);
    const agent = createAgent({ agentId: "a1", model, runtime: createRuntime(), skills, sinks: [recorder], systemPrompt: "P" });
    await agent.run("$alpha with a tool");
    expect(recorder.errors).toEqual([]);
    expect(agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    // The model did see them.
    expect(systemTexts(model.requests[1]!.messages)).toHaveLength(3);

    const journal = readFileSync(storage.fileFor("s1"), "utf8");
    for (const needle of [
      "Active skill",
      "[SKILL.md]",
      "ALPHA BODY",
      "ALPHA TEMPLATE",
      "Available skills",
      skills.get("beta")!.path,
      '"role":"system"',
    ]) {
      expect(journal).not.toContain(needle);
    }
    const checkout = (await storage.checkout("s1"))!;
    expect(sessionMessages(checkout.session).map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    await agent.shutdown();

    // Restored into a new agent with skills: the skill messages are rebuilt per request, not restored.
    const model2 = new ScriptedModel([text("continued")]);
    const agent2 = createAgent({
      agentId: "a1",
      model: model2,
      runtime: createRuntime(),
      skills,
      sinks: [new SessionRecorder("s1", storage)],
    });
    restoreSession(agent2, checkout);
    await agent2.continueRun();
    const req = model2.requests[0]!.messages;
    expect(req.map((m) => m.role)).toEqual(["system", "system", "user", "assistant", "tool", "assistant"]);
    expect(req[1]!.content).toStartWith("Active skill: alpha.");
    expect(readFileSync(storage.fileFor("s1"), "utf8")).not.toContain("Active skill");
    await agent2.shutdown();
  });

  test("context pressure counts the skill messages and still finds the reported usage", async () => {
    const skills = twoSkills();
    const pressure = async (withSkills: boolean) => {
      const { events, sink } = collect();
      const model = new ScriptedModel([
        {
          content: null,
          tool_calls: [{ id: "c1", name: "echo", arguments: '{"message":"x"}' }],
          usage: { input_tokens: 500, output_tokens: 50 },
        },
        text("done"),
      ]);
      const policy = new CompactionPolicy({ contextWindow: 100_000, reserveTokens: 1000, keepRecentTokens: 100 });
      const agent = createAgent({
        model,
        runtime: createRuntime(),
        compaction: { policy },
        sinks: [sink],
        ...(withSkills ? { skills } : {}),
      });
      await agent.run("$alpha");
      await agent.shutdown();
      return events
        .filter((e) => e.kind === "context_pressure_evaluated")
        .map((e) => (e as unknown as { decision: Record<string, unknown> }).decision);
    };
    const plain = await pressure(false);
    const skilled = await pressure(true);
    // Turn 2: [index, active, user, assistant(usage), tool] — the usage sits at index 3.
    expect(skilled[1]).toMatchObject({ source: "mixed", reported_tokens: 550, last_usage_index: 3 });
    expect(plain[1]).toMatchObject({ source: "mixed", reported_tokens: 550, last_usage_index: 1 });
    // Turn 1 is estimated only: the skill messages add tokens.
    expect(skilled[0]!.heuristic_tokens as number).toBeGreaterThan((plain[0]!.heuristic_tokens as number) + 100);
    // Turn 2: the trailing tool message is the same, so the totals match.
    expect(skilled[1]!.trailing_tokens).toBe(plain[1]!.trailing_tokens);
  });
});

describe("module loading", () => {
  test("the agent and the agent command do not load the YAML parser; discovery does", () => {
    const probe = `
      await import(${JSON.stringify(join(REPO, "src/cli/agent.ts"))});
      await import(${JSON.stringify(join(REPO, "src/agent/index.ts"))});
      const yaml = () => Object.keys(require.cache).filter((k) => k.includes("/node_modules/yaml/")).length;
      const before = yaml();
      await import(${JSON.stringify(join(REPO, "src/skills/discover.ts"))});
      console.log(JSON.stringify({ before, after: yaml() }));`;
    const r = Bun.spawnSync([process.execPath, "-e", probe], { cwd: REPO, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    expect(r.stderr.toString()).toBe("");
    const { before, after } = JSON.parse(r.stdout.toString()) as { before: number; after: number };
    expect(before).toBe(0);
    expect(after).toBeGreaterThan(0);
  });
});

describe("on the wire", () => {
  let server: ScriptedOpenAIServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  test("the openai SDK sends the index and active skill as system messages", async () => {
    server = await startOpenAIServer([textReply("Drafted.", [100, 5])]);
    const model = new OpenAIModelAdapter({ model: "test-model", baseURL: server.baseURL, apiKey: "sk-test", timeoutMs: 10_000 });
    const skills = discoverSkills(join(REPO, "examples", "skills"));
    const agent = createAgent({ model, skills, systemPrompt: "Be brief." });
    const r = await agent.run("$release-notes 1.2.0: fixed a crash");
    expect(r).toMatchObject({ status: "completed", output: "Drafted." });
    expect(server.requests).toHaveLength(1);
    const body = server.requests[0]!.body as { messages: { role: string; content: string }[]; tools?: unknown };
    expect(body.messages.map((m) => m.role)).toEqual(["system", "system", "system", "user"]);
    expect(body.messages[1]!.content).toBe(skillIndexMessage(skills)!.content as string);
    expect(body.messages[2]!.content).toStartWith("Active skill: release-notes.");
    expect(body.messages[2]!.content).toContain("[template.md]\n## {{version}}");
    expect(body.messages[2]!.content).toContain("[examples/sample.md]\nInput:");
    expect(body.tools).toBeUndefined();
    await agent.shutdown();
  });
});
