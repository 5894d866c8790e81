/**
 * The peer harnesses for the per-turn overhead benchmark, each driven by a
 * zero-latency scripted model equivalent to agentcore's ScriptedModel:
 * turn i (< N) calls `echo` with {"n": i}; turn N answers with text.
 *
 * - pi `Agent`: `@mariozechner/pi-agent-core`'s Agent class, with pi-ai's own
 *   faux provider (its in-process scripted model; one chunk per response).
 * - pi `runAgentLoop`: pi-agent-core's loop function itself, with a minimal
 *   stream function (each call pushes the next prebuilt assistant message as
 *   one `done` event), `convertToLlm` the identity and a no-op event sink:
 *   pi's fastest honest configuration (no Agent state, no provider).
 * - openai-agents: `@openai/agents-core` Runner, with a `Model` whose
 *   getResponse() returns the scripted turn at once. Tracing disabled.
 *
 * Each `prepare…(turns)` makes the scripted model (the fixture) and returns
 * the run, which builds the harness and runs it: the benchmark times only
 * the run. The tools are made beforehand too (pi's is a module constant).
 *
 * @module
 */
import { Agent as PiAgent, type AgentTool, runAgentLoop } from "@mariozechner/pi-agent-core";
import {
  type AssistantMessage as PiAssistantMessage,
  createAssistantMessageEventStream,
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  registerFauxProvider,
} from "@mariozechner/pi-ai";
import { Agent as OaAgent, Runner, tool, Usage, type Model, type ModelRequest, type ModelResponse } from "@openai/agents-core";

const ECHO_SCHEMA = {
  type: "object",
  properties: { n: { type: "integer" } },
  required: ["n"],
  additionalProperties: false,
} as const;

/** The echo tool in pi's shape. */
const PI_ECHO: AgentTool = {
  name: "echo",
  label: "echo",
  description: "Return the arguments",
  parameters: ECHO_SCHEMA as never,
  execute: async (_id: string, args: unknown) => ({ content: [{ type: "text", text: JSON.stringify(args) }], details: args }),
};

/** pi's scripted turns: `turns` echo calls, then "done". */
function piSteps(turns: number): PiAssistantMessage[] {
  const steps: PiAssistantMessage[] = [];
  for (let i = 0; i < turns; i++)
    steps.push(fauxAssistantMessage(fauxToolCall("echo", { n: i }, { id: `call_${i}` }), { stopReason: "toolUse" }));
  steps.push(fauxAssistantMessage(fauxText("done")));
  return steps;
}

/**
 * A run of pi's Agent for `turns` tool turns plus a final text turn: the faux
 * provider and its script are made now, the agent when the run starts. The
 * run returns the number of model calls.
 */
export function preparePi(turns: number): () => Promise<number> {
  const faux = registerFauxProvider({ tokenSize: { min: 1_000_000, max: 1_000_000 } });
  faux.setResponses(piSteps(turns));
  return async () => {
    const agent = new PiAgent({
      initialState: { systemPrompt: "You are a test agent.", model: faux.getModel(), tools: [PI_ECHO] },
      toolExecution: "sequential",
    });
    await agent.prompt("go");
    const calls = faux.state.callCount;
    faux.unregister();
    return calls;
  };
}

/**
 * A run of pi's `runAgentLoop` for `turns` tool turns plus a final text turn,
 * with a minimal stream function (the script is made now). The run returns
 * the number of model calls.
 */
export function preparePiLoop(turns: number): () => Promise<number> {
  const faux = registerFauxProvider({ tokenSize: { min: 1_000_000, max: 1_000_000 } });
  const model = faux.getModel();
  faux.unregister();
  const steps = piSteps(turns);
  return async () => {
    let calls = 0;
    const streamFn = () => {
      const stream = createAssistantMessageEventStream();
      const message = steps[calls++]!;
      stream.push({ type: "done", reason: message.stopReason === "toolUse" ? "toolUse" : "stop", message });
      stream.end();
      return stream;
    };
    await runAgentLoop(
      [{ role: "user", content: "go", timestamp: Date.now() }],
      { systemPrompt: "You are a test agent.", messages: [], tools: [PI_ECHO] },
      { model, convertToLlm: (m) => m as never, toolExecution: "sequential" },
      () => {},
      undefined,
      streamFn as never,
    );
    return calls;
  };
}

class ScriptedOaModel implements Model {
  #i = 0;
  constructor(readonly turns: number) {}
  async getResponse(_req: ModelRequest): Promise<ModelResponse> {
    const i = this.#i++;
    const usage = new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 });
    if (i < this.turns) {
      return {
        usage,
        responseId: `r${i}`,
        output: [{ type: "function_call", callId: `call_${i}`, name: "echo", arguments: JSON.stringify({ n: i }), status: "completed" }],
      };
    }
    return {
      usage,
      responseId: `r${i}`,
      output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }],
    };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not used: the benchmark runs non-streamed");
  }
  get calls(): number {
    return this.#i;
  }
}

/** A run of the OpenAI Agents SDK for `turns` tool turns plus a final text turn (the model and the tool made now). The run returns the number of model calls. */
export function prepareOpenAIAgents(turns: number): () => Promise<number> {
  const model = new ScriptedOaModel(turns);
  const echo = tool({
    name: "echo",
    description: "Return the arguments",
    parameters: ECHO_SCHEMA as never,
    strict: true,
    execute: async (input: unknown) => JSON.stringify(input),
  });
  return async () => {
    const agent = new OaAgent({ name: "bench", instructions: "You are a test agent.", model, tools: [echo] });
    const runner = new Runner({ tracingDisabled: true });
    const result = await runner.run(agent, "go", { maxTurns: turns + 5 });
    if (result.finalOutput !== "done") throw new Error(`openai-agents ended with ${String(result.finalOutput)}`);
    return model.calls;
  };
}

if (import.meta.main) {
  const n = 50;
  console.log("pi Agent model calls:", await preparePi(n)());
  console.log("pi runAgentLoop model calls:", await preparePiLoop(n)());
  console.log("openai-agents model calls:", await prepareOpenAIAgents(n)());
}
