/**
 * The OpenAPI 3.1 document served at `GET /v1/openapi.json`. Written by hand
 * next to the routes in `app.ts`; a test checks that every route of the app
 * is described here and every path here is routed.
 *
 * @module
 */

import { AGENT_EVENT_KINDS } from "../agent/events.ts";
import { RUN_STATUSES, STOP_REASONS } from "../agent/types.ts";

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ "application/json": { schema } });
const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { description: ERROR_TEXT[c] ?? "refused", content: json(ref("Envelope")) }]));

const ERROR_TEXT: Record<number, string> = {
  400: "malformed body or field (INVALID_REQUEST, JSON_*)",
  401: "missing or wrong bearer token (UNAUTHORIZED)",
  403: "Host or Origin refused (FORBIDDEN)",
  404: "no such run, approval, session or route (NOT_FOUND)",
  409: "not possible in the current state (CONFLICT)",
  413: "body over the cap (JSON_SIZE)",
  415: "body is not JSON / NDJSON, or is compressed (Content-Encoding) (INVALID_REQUEST)",
  500: "the run stopped: its records could not be written, for another reason of the store (STORE_FAILED); details.result is the failed run's result",
  503: "too busy or shutting down (OVERLOADED); or the run stopped because the session store is unreachable, still after the retries (STORE_UNAVAILABLE); with Retry-After",
  507: "the run stopped: its records could not be written, the session store being full or read-only (STORE_FULL, STORE_READONLY); details.result is the failed run's result",
  504: "the request outlived its deadline (TIMEOUT)",
};

const STD = [401, 403, 503];
const idParam = (name: string, description: string) => ({ name, in: "path", required: true, schema: { type: "string" }, description });
const sse = {
  "text/event-stream": {
    schema: {
      type: "string",
      description:
        "SSE: `id: <n>` (per run, from 1), `event: <agent event kind | approval_requested | approval_resolved>`, `data: <JSON>` (an agent event is an AgentEvent), `: heartbeat` comments, a final `event: done` (no id)",
    },
  },
};

const runOp = (summary: string, body: unknown | null, created: boolean) => ({
  summary,
  requestBody:
    body === null
      ? { required: false, description: "empty, or {}", content: json({ type: "object", additionalProperties: false }) }
      : { required: true, content: json(body) },
  responses: {
    [created ? "201" : "200"]: {
      description: "the run's events (default), or with `Accept: application/json` the run once idle",
      content: { ...sse, ...json(ref("Run")) },
    },
    ...errors(400, 404, 409, 413, 415, 500, 504, 507, ...STD),
  },
});

/** The OpenAPI document for this version of the daemon. */
export function openApiDocument(version: string): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: {
      title: "agentcore daemon",
      version,
      description:
        "Local API of `agentcore serve`. Every route but GET /v1/health needs `Authorization: Bearer <token>`; Host must be a loopback name with the daemon's port; Origin must be absent or allowlisted. Refusals are result envelopes. In cluster mode (a PostgreSQL store, docs/cluster.md) POST /v1/runs queues the run and answers 201 with it as JSON (status `queued`), and the run routes, events and approvals act on the runs of every daemon of the store.",
    },
    servers: [{ url: "http://127.0.0.1:8787" }],
    security: [{ bearer: [] }],
    paths: {
      "/v1/health": {
        get: {
          summary: "liveness (no token needed)",
          security: [],
          responses: {
            "200": { description: "ok", content: json({ type: "object", properties: { status: { enum: ["ok", "stopping"] } } }) },
            ...errors(403),
          },
        },
      },
      "/v1/openapi.json": {
        get: {
          summary: "this document",
          responses: { "200": { description: "OpenAPI 3.1", content: json({ type: "object" }) }, ...errors(...STD) },
        },
      },
      "/v1/tools": {
        get: {
          summary: "registered tools",
          responses: {
            "200": {
              description: "tools",
              content: json({ type: "object", properties: { tools: { type: "array", items: ref("Tool") } } }),
            },
            ...errors(...STD),
          },
        },
      },
      "/v1/history": {
        get: {
          summary: "the execution history (the config's history log), read only, newest last; enabled false without a log",
          parameters: [
            { name: "tool", in: "query", schema: { type: "string" } },
            { name: "failed", in: "query", schema: { type: "string", enum: ["true", "false"] } },
            { name: "since", in: "query", schema: { type: "string", format: "date-time" } },
            { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 10000, default: 1000 } },
          ],
          responses: {
            "200": {
              description: "history records",
              content: json({
                type: "object",
                properties: { enabled: { type: "boolean" }, records: { type: "array", items: { type: "object" } } },
              }),
            },
            "400": { description: "a bad query parameter (INVALID_REQUEST)", content: json(ref("Envelope")) },
            ...errors(504, ...STD),
          },
        },
      },
      "/v1/calls": {
        post: {
          summary: "dispatch one tool call (agentcore, OpenAI chat, OpenAI Responses or Anthropic shape)",
          requestBody: { required: true, content: json({ type: "object" }) },
          responses: {
            "200": { description: "the call's envelope (success or a tool failure)", content: json(ref("Envelope")) },
            "400": { description: "the call is not valid JSON or not a call (JSON_*, INVALID_CALL)", content: json(ref("Envelope")) },
            ...errors(413, 415, 504, ...STD),
          },
        },
      },
      "/v1/calls/batch": {
        post: {
          summary: "dispatch NDJSON calls in order; envelopes stream back as NDJSON, one per non-blank line",
          requestBody: { required: true, content: { "application/x-ndjson": { schema: { type: "string" } } } },
          responses: {
            "200": {
              description: "one envelope per line, in input order; failures carry details.input_line",
              content: { "application/x-ndjson": { schema: { type: "string" } } },
            },
            ...errors(413, 415, 504, ...STD),
          },
        },
      },
      "/v1/runs": {
        post: runOp("create a run and start its task", ref("RunRequest"), true),
        get: {
          summary: "every run the daemon holds",
          responses: {
            "200": { description: "runs", content: json({ type: "object", properties: { runs: { type: "array", items: ref("Run") } } }) },
            ...errors(...STD),
          },
        },
      },
      "/v1/runs/{run_id}": {
        get: {
          summary: "a run's status and results",
          parameters: [idParam("run_id", "run id")],
          responses: { "200": { description: "the run", content: json(ref("Run")) }, ...errors(404, ...STD) },
        },
      },
      "/v1/runs/{run_id}/events": {
        get: {
          summary: "attach to a run's events (disconnecting never aborts); ends with `done` when idle",
          parameters: [
            idParam("run_id", "run id"),
            {
              name: "Last-Event-ID",
              in: "header",
              required: false,
              schema: { type: "string" },
              description: "replay the run's kept items after this id first",
            },
            { name: "after", in: "query", required: false, schema: { type: "integer", minimum: 0 }, description: "same as Last-Event-ID" },
          ],
          responses: { "200": { description: "SSE", content: sse }, ...errors(400, 404, ...STD) },
        },
      },
      "/v1/runs/{run_id}/abort": {
        post: {
          summary: "abort the active run",
          parameters: [idParam("run_id", "run id")],
          requestBody: {
            required: false,
            content: json({ type: "object", properties: { reason: { type: "string" } }, additionalProperties: false }),
          },
          responses: {
            "200": {
              description: "whether something was aborted",
              content: json({ type: "object", properties: { run_id: { type: "string" }, aborted: { type: "boolean" } } }),
            },
            ...errors(400, 404, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/runs/{run_id}/steer": {
        post: {
          summary: "queue a message for the active run",
          parameters: [idParam("run_id", "run id")],
          requestBody: {
            required: true,
            content: json({
              type: "object",
              required: ["content"],
              properties: { content: { type: "string" } },
              additionalProperties: false,
            }),
          },
          responses: {
            "202": { description: "accepted", content: json(ref("ControlReceipt")) },
            "409": { description: "agent_idle, queue_full or run_closing", content: json(ref("ControlReceipt")) },
            ...errors(400, 404, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/runs/{run_id}/follow_up": {
        post: {
          summary: "queue a task to run after the active run",
          parameters: [idParam("run_id", "run id")],
          requestBody: {
            required: true,
            content: json({ type: "object", required: ["task"], properties: { task: { type: "string" } }, additionalProperties: false }),
          },
          responses: {
            "202": { description: "accepted", content: json(ref("ControlReceipt")) },
            "409": { description: "refused (agent_idle, queue_full, run_closing)", content: json(ref("ControlReceipt")) },
            ...errors(400, 404, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/runs/{run_id}/continue": {
        post: { ...runOp("continue the agent's last run without a new message", null, false), parameters: [idParam("run_id", "run id")] },
      },
      "/v1/runs/{run_id}/compact": {
        post: {
          ...runOp("compact the conversation now (needs `compaction` at creation)", null, false),
          parameters: [idParam("run_id", "run id")],
        },
      },
      "/v1/approvals": {
        get: {
          summary: "pending approvals",
          responses: {
            "200": {
              description: "pending, oldest first",
              content: json({ type: "object", properties: { approvals: { type: "array", items: ref("Approval") } } }),
            },
            ...errors(...STD),
          },
        },
      },
      "/v1/approvals/{approval_id}": {
        post: {
          summary: "answer a pending approval",
          parameters: [idParam("approval_id", "approval id")],
          requestBody: {
            required: true,
            content: json({
              type: "object",
              required: ["approved"],
              properties: { approved: { type: "boolean" }, reason: { type: "string" } },
              additionalProperties: false,
            }),
          },
          responses: { "200": { description: "recorded", content: json({ type: "object" }) }, ...errors(400, 404, 413, 415, 504, ...STD) },
        },
      },
      "/v1/sessions": {
        get: {
          summary: "sessions in the journal directory",
          responses: { "200": { description: "sessions", content: json({ type: "object" }) }, ...errors(504, ...STD) },
        },
      },
      "/v1/sessions/{session_id}": {
        get: {
          summary: "a branch's runs and messages",
          parameters: [
            idParam("session_id", "session id"),
            { name: "branch", in: "query", required: false, schema: { type: "string", default: "main" } },
          ],
          responses: { "200": { description: "the checkout", content: json({ type: "object" }) }, ...errors(400, 404, 504, ...STD) },
        },
      },
      "/v1/sessions/{session_id}/tree": {
        get: {
          summary: "branches and every record",
          parameters: [idParam("session_id", "session id")],
          responses: { "200": { description: "the tree", content: json({ type: "object" }) }, ...errors(400, 404, 504, ...STD) },
        },
      },
      "/v1/sessions/{session_id}/fork": {
        post: {
          summary: "new branch at a record (default: head of main)",
          parameters: [idParam("session_id", "session id")],
          requestBody: {
            required: false,
            content: json({
              type: "object",
              properties: { from: { type: "string" }, name: { type: "string" } },
              additionalProperties: false,
            }),
          },
          responses: {
            "201": { description: "the branch", content: json({ type: "object" }) },
            ...errors(400, 404, 409, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/sessions/{session_id}/rollback": {
        post: {
          summary: "new branch at an earlier record (main is never rewritten)",
          parameters: [idParam("session_id", "session id")],
          requestBody: {
            required: true,
            content: json({
              type: "object",
              required: ["to"],
              properties: { to: { type: "string" }, name: { type: "string" } },
              additionalProperties: false,
            }),
          },
          responses: {
            "201": { description: "the branch", content: json({ type: "object" }) },
            ...errors(400, 404, 409, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/sessions/{session_id}/retry": {
        post: {
          summary: "new branch just before a run; returns its task (start it with POST /v1/runs {session, branch, task})",
          parameters: [idParam("session_id", "session id")],
          requestBody: {
            required: true,
            content: json({
              type: "object",
              required: ["run"],
              properties: { run: { type: "string" }, name: { type: "string" } },
              additionalProperties: false,
            }),
          },
          responses: {
            "201": { description: "the branch and task", content: json({ type: "object" }) },
            ...errors(400, 404, 409, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/sessions/{session_id}/recover": {
        post: {
          summary:
            "close the runs a crash left unfinished on a branch (each gets run_finished cancelled/external_abort, 'run interrupted'; unanswered tool calls a cancelled answer); a run that waited for an approval becomes suspended (awaiting_approval) instead, to answer and resume; a no-op on a healthy branch",
          parameters: [idParam("session_id", "session id")],
          requestBody: {
            required: false,
            content: json({
              type: "object",
              properties: {
                branch: { type: "string", default: "main" },
                force: { type: "boolean", default: false, description: "recover even when a run's live-run mark names a live process" },
              },
              additionalProperties: false,
            }),
          },
          responses: {
            "200": {
              description:
                "the recovery: session_id, branch_id, recovered (run_id, cancelled_tool_calls, result, record_id per run), head_id",
              content: json({ type: "object" }),
            },
            ...errors(400, 404, 409, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/sessions/{session_id}/approvals": {
        get: {
          summary: "the approvals a branch waits for (journaled approval_requested records not answered yet)",
          parameters: [idParam("session_id", "session id"), { name: "branch", in: "query", schema: { type: "string", default: "main" } }],
          responses: {
            "200": {
              description:
                "session_id, branch_id, pending: [{run_id, tool_call_id, tool, effect, rule_id, reason, arguments (redacted), requested_at, decision: null}]",
              content: json({ type: "object" }),
            },
            ...errors(404, 504, ...STD),
          },
        },
      },
      "/v1/sessions/{session_id}/approvals/{tool_call_id}": {
        post: {
          summary:
            "answer the approval a suspended run waits for (journaled as approval_decided); then POST /v1/sessions/{session_id}/resume",
          parameters: [idParam("session_id", "session id"), idParam("tool_call_id", "the call that waits")],
          requestBody: {
            required: true,
            content: json({
              type: "object",
              required: ["approved"],
              properties: { approved: { type: "boolean" }, reason: { type: "string" }, branch: { type: "string", default: "main" } },
              additionalProperties: false,
            }),
          },
          responses: {
            "200": { description: "the answer, its record_id, and the call ids still pending", content: json({ type: "object" }) },
            ...errors(400, 404, 409, 413, 415, 504, ...STD),
          },
        },
      },
      "/v1/sessions/{session_id}/resume": {
        post: runOp(
          "go on with the branch's suspended run (stop reason awaiting_approval) once its approvals are answered: approved calls run, denied ones get the policy's rejection payload; a new run, followable at /v1/runs/{run_id}/events",
          {
            type: "object",
            additionalProperties: false,
            description: "a RunRequest without task and session (the model or script, limits, branch, suspend_on_approval)",
          },
          true,
        ),
      },
      "/mcp": {
        post: {
          summary:
            "MCP Streamable HTTP endpoint: the registered tools (tools/list, tools/call) for MCP clients; same token, Host and Origin checks",
          requestBody: { required: true, content: json({ type: "object", description: "a JSON-RPC message" }) },
          responses: {
            "200": {
              description: "JSON-RPC response (JSON, or SSE when the server streams)",
              content: { ...json({ type: "object" }), "text/event-stream": { schema: { type: "string" } } },
            },
            "400": {
              description:
                "not strict JSON (duplicate key, not UTF-8, __proto__: -32700 with data {code, offset, line, column}) or not JSON-RPC",
              content: json(ref("JsonRpcError")),
            },
            "413": { description: "body over the cap", content: json(ref("JsonRpcError")) },
            "415": { description: "Content-Type is not application/json", content: json(ref("JsonRpcError")) },
            ...errors(...STD),
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "the token from the daemon's token file, or AGENTCORE_TOKEN" },
      },
      schemas: {
        Envelope: {
          type: "object",
          required: ["id", "success", "tool", "result", "error", "duration_ms"],
          properties: {
            id: { type: ["string", "null"] },
            success: { type: "boolean" },
            tool: { type: ["string", "null"] },
            result: {},
            error: {
              oneOf: [
                { type: "null" },
                {
                  type: "object",
                  required: ["code", "message", "details"],
                  properties: { code: { type: "string" }, message: { type: "string" }, details: { type: "object" } },
                },
              ],
            },
            duration_ms: { type: "number" },
          },
        },
        JsonRpcError: {
          type: "object",
          required: ["jsonrpc", "error", "id"],
          properties: {
            jsonrpc: { const: "2.0" },
            error: {
              type: "object",
              required: ["code", "message"],
              properties: { code: { type: "integer" }, message: { type: "string" }, data: { type: "object" } },
            },
            id: { type: "null" },
          },
        },
        Tool: {
          type: "object",
          properties: {
            name: { type: "string" },
            description: { type: "string" },
            effect: { enum: ["read_only", "side_effecting"] },
            strict: { type: "boolean" },
            parameters: {},
          },
        },
        RunRequest: {
          type: "object",
          required: ["task"],
          additionalProperties: false,
          properties: {
            task: { type: "string" },
            model: {
              type: "object",
              additionalProperties: false,
              properties: {
                preset: { enum: ["openai", "lmstudio", "ollama"] },
                model: { type: "string" },
                url: { type: "string", description: "a URL other than MODEL_URL never receives MODEL_API_KEY" },
              },
            },
            script: { type: "array", description: "scripted model turns (instead of model): no network", items: { type: "object" } },
            max_steps: { type: "integer", minimum: 1, maximum: 10000 },
            max_run_tokens: { type: "integer", minimum: 1 },
            system: { type: "string" },
            session: { type: "string" },
            branch: { type: "string", default: "main" },
            detached: { type: "boolean", default: false, description: "when true, a client disconnect does not abort the run" },
            output_schema: {
              type: "object",
              description:
                "structured output: a JSON Schema the task's final answer must match. The model is asked for JSON (the provider's json_schema response format, or instructions where the server refuses it); a mismatch gets one repair turn naming the JSON Pointer errors, a second ends the run failed with stop reason output_invalid; the result carries the value as output_value. A schema that does not compile is a 400 at /output_schema",
            },
            images: {
              type: "array",
              maxItems: 16,
              description:
                "the task's images, sent to the model as image_url content parts after the task's text; PNG, JPEG, GIF or WebP by their magic bytes (a declared media_type must match them), at most 10 MiB each, and the whole body within the daemon's body cap (--max-body-bytes, default 1 MiB). A session journals each by its sha256 (the bytes in a blob). A bad image is a 400 whose details.location points at it (/images/0/data). Not taken in cluster mode",
              items: {
                oneOf: [
                  {
                    type: "object",
                    required: ["data_url"],
                    additionalProperties: false,
                    properties: { data_url: { type: "string", description: "data:image/png;base64,…" } },
                  },
                  {
                    type: "object",
                    required: ["media_type", "data"],
                    additionalProperties: false,
                    properties: {
                      media_type: { type: "string", enum: ["image/png", "image/jpeg", "image/gif", "image/webp"] },
                      data: { type: "string", description: "the bytes, base64" },
                    },
                  },
                ],
              },
            },
            tools: {
              type: "array",
              maxItems: 1000,
              items: { type: "string", minLength: 1 },
              description:
                "the daemon's registered tools (GET /v1/tools) this run may use; absent: all of them. The others are not offered to the model, and a call naming one gets the unknown-tool error. A name the daemon does not register is a 400 at /tools naming it (details.unknown)",
            },
            policy: {
              enum: ["daemon", "read_only", "ask"],
              default: "daemon",
              description:
                "a policy preset that only narrows the daemon's own policy (a deny of the daemon stays a deny): daemon adds nothing; read_only refuses side-effecting tools before the daemon's policy asks anyone (DENIED, rule_id preset:read_only); ask, after the daemon's policy, makes side-effecting calls wait for an approval (rule_id preset:ask), unless the daemon's policy already had one approved",
            },
            suspend_on_approval: {
              type: "boolean",
              default: false,
              description:
                "needs session: a call that needs an approval is journaled and the run ends awaiting_approval instead of waiting in the queue (answer at POST /v1/sessions/{session_id}/approvals/{tool_call_id}, then resume)",
            },
            compaction: {
              type: "object",
              required: ["context_window"],
              additionalProperties: false,
              description:
                "enables `compact`. `{context_window: N}` alone (N >= 1024) derives the rest as `agent --context-window N` does: reserve_tokens = floor(N / 4), keep_recent_tokens = 1 (every turn but the latest is summarised)",
              properties: {
                context_window: { type: "integer", minimum: 1, maximum: 100_000_000 },
                reserve_tokens: {
                  type: "integer",
                  minimum: 0,
                  description: "tokens kept free for the answer (< context_window); default floor(context_window / 4)",
                },
                keep_recent_tokens: {
                  type: "integer",
                  minimum: 1,
                  description: "recent history kept verbatim (<= context_window - reserve_tokens); default 1",
                },
              },
            },
          },
        },
        Run: {
          type: "object",
          properties: {
            run_id: { type: "string" },
            status: { enum: ["running", "idle", "closed"] },
            agent_id: { type: "string" },
            agent_status: { type: "string" },
            detached: { type: "boolean" },
            session: { type: ["object", "null"] },
            created_at: { type: "string" },
            result: { oneOf: [{ type: "null" }, ref("RunResult")], description: "the latest finished agent run's result" },
            results: {
              type: "array",
              items: { type: "object", properties: { agent_run_id: { type: "string" }, result: ref("RunResult") } },
            },
            can_continue: { type: "boolean" },
            continue_rejection_reason: { type: ["string", "null"] },
            pending_approvals: { type: "integer" },
            tools: { type: ["array", "null"], items: { type: "string" }, description: "the tools the run may use (null: all)" },
            policy: { enum: ["daemon", "read_only", "ask"], description: "the run's policy preset" },
          },
        },
        RunResult: {
          type: "object",
          description: "an agent run's result (also in `agent_finished` and `done`)",
          required: ["status", "stop_reason", "turns", "output", "error", "usage"],
          properties: {
            status: { enum: [...RUN_STATUSES] },
            stop_reason: {
              enum: [...STOP_REASONS],
              description:
                "max_tokens: the answer was cut off at the model's output limit (finish_reason length); content_filter: the provider's filter stopped it. Both end the run failed, and tool calls in that answer are not run",
            },
            turns: { type: "integer" },
            output: { type: ["string", "null"] },
            output_value: {
              description: "with output_schema, once the answer matched it: the answer parsed as JSON (absent otherwise)",
            },
            error: { type: ["string", "null"] },
            error_code: {
              type: "string",
              description:
                "only with stop_reason store_failed: the store error's code (STORE_FULL, STORE_READONLY, STORE_UNAVAILABLE, or another, e.g. SESSION_CONFLICT; docs/durability.md)",
            },
            usage: { type: "object" },
          },
        },
        AgentEvent: {
          type: "object",
          description:
            "an agent event as sent in `data:` (SSE) and by `agent --events jsonl`: agent_id, run_id, sequence, kind, and the kind's fields. tool_call_arguments_delta (never journaled): turn, index, tool_call_id, tool, delta, and error {code, message, offset, line, column} once the streamed arguments can no longer become valid JSON (offset: the byte of the first impossible one). output_repair_requested: turn, errors [{path, keyword, message}], message (the repair turn's user message)",
          required: ["agent_id", "run_id", "sequence", "kind"],
          properties: {
            agent_id: { type: "string" },
            run_id: { type: "string" },
            sequence: { type: "integer" },
            kind: { enum: [...AGENT_EVENT_KINDS] },
            turn: { type: "integer" },
            tool_call_id: { type: "string" },
            tool: { type: "string" },
            index: { type: "integer" },
            delta: { type: "string" },
            error: {},
          },
        },
        ControlReceipt: {
          type: "object",
          properties: {
            run_id: { type: "string" },
            control: { type: "object" },
            status: { enum: ["accepted", "agent_idle", "queue_full", "run_closing"] },
            queue_size: { type: "integer" },
          },
        },
        Approval: {
          type: "object",
          properties: {
            approval_id: { type: "string" },
            tool: { type: "string" },
            effect: { type: "string" },
            arguments: { description: "redacted preview" },
            tool_call_id: { type: ["string", "null"] },
            reason: { type: ["string", "null"] },
            rule_id: { type: ["string", "null"] },
            agent_id: { type: ["string", "null"] },
            run_id: { type: ["string", "null"], description: "the agent run id (event run_id)" },
            turn: { type: ["integer", "null"] },
            created_at: { type: "string" },
            expires_at: { type: "string" },
          },
        },
      },
    },
  };
}
