/**
 * OTLP/HTTP export of agentcore's spans, for the binary and the daemon.
 *
 * When `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`
 * is set (and `OTEL_SDK_DISABLED` is not `true`, `OTEL_TRACES_EXPORTER` not
 * `none`), {@link startTelemetry} loads the official OpenTelemetry SDK
 * packages (dynamically: nothing of them loads otherwise), registers a
 * tracer provider with a batch span processor and an OTLP/HTTP exporter
 * (`http/protobuf`, or `http/json` by `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`),
 * the AsyncLocalStorage context manager and the W3C trace-context
 * propagator, and returns the handle whose `shutdown()` flushes and stops it
 * (the CLI awaits it before the process ends; an ending signal no command
 * handles runs it too, through the host's clean-ups).
 *
 * The standard variables are honoured: the exporter reads the endpoint,
 * `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`, `…_TIMEOUT` and `…_COMPRESSION`
 * itself; here are read `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`
 * (service name `agentcore` by default), `OTEL_TRACES_SAMPLER` and
 * `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*`, and the span attribute limits.
 *
 * @module
 */
import { holdCleanup } from "../core/cleanup.ts";
import { AgentcoreError } from "../core/errors.ts";
import { VERSION } from "../core/version.ts";

/** A bad `OTEL_*` variable: says which, what it holds, and what it takes. */
export class TelemetryConfigError extends AgentcoreError {
  readonly code: string = "TELEMETRY_CONFIG";
  override name = "TelemetryConfigError";
}

/** A running export: `shutdown()` flushes what is buffered, then stops. */
export interface Telemetry {
  /** `http/protobuf` or `http/json`. */
  readonly protocol: "http/protobuf" | "http/json";
  /** Where the spans go (the traces URL). */
  readonly endpoint: string;
  /** Flush the buffered spans (bounded by the exporter's timeout) and stop. Never throws. */
  shutdown(): Promise<void>;
}

type Env = Readonly<Record<string, string | undefined>>;

function value(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === "" ? undefined : v;
}

/** Whether `env` asks for export (an OTLP endpoint, the SDK not disabled, the traces exporter not `none`). */
export function telemetryWanted(env: Env): boolean {
  if (value(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return false;
  const exporters = value(env, "OTEL_TRACES_EXPORTER");
  if (exporters !== undefined && exporters.split(",").every((e) => e.trim().toLowerCase() === "none")) return false;
  return value(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") !== undefined || value(env, "OTEL_EXPORTER_OTLP_ENDPOINT") !== undefined;
}

/** The traces URL: the signal's endpoint as it is, or the general one with `/v1/traces` appended. */
export function tracesEndpoint(env: Env): string {
  const own = value(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const raw = own ?? `${value(env, "OTEL_EXPORTER_OTLP_ENDPOINT")!.replace(/\/+$/, "")}/v1/traces`;
  const name = own !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new TelemetryConfigError(`${name} is not a URL: ${JSON.stringify(raw)}; give one like http://127.0.0.1:4318`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new TelemetryConfigError(`${name} must be an http:// or https:// URL (OTLP/HTTP), got ${JSON.stringify(raw)}`);
  return raw;
}

function protocolOf(env: Env): "http/protobuf" | "http/json" {
  const name =
    value(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const p = value(env, name) ?? "http/protobuf";
  if (p === "http/protobuf" || p === "http/json") return p;
  throw new TelemetryConfigError(
    `${name}=${JSON.stringify(p)} is not supported: agentcore exports over OTLP/HTTP, so use http/protobuf (the default) or http/json`,
  );
}

function number(env: Env, name: string, min: number): number | undefined {
  const v = value(env, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new TelemetryConfigError(`${name} must be a number ≥ ${min}, got ${JSON.stringify(v)}`);
  return n;
}

type SdkTrace = typeof import("@opentelemetry/sdk-trace");

/** The sampler of `OTEL_TRACES_SAMPLER` (default `parentbased_always_on`), as the specification names them. */
function samplerOf(env: Env, sdk: SdkTrace): import("@opentelemetry/sdk-trace").Sampler {
  const name = (value(env, "OTEL_TRACES_SAMPLER") ?? "parentbased_always_on").toLowerCase();
  const ratio = (): number => {
    const arg = value(env, "OTEL_TRACES_SAMPLER_ARG");
    if (arg === undefined) return 1;
    const r = Number(arg);
    if (!Number.isFinite(r) || r < 0 || r > 1)
      throw new TelemetryConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got ${JSON.stringify(arg)}`);
    return r;
  };
  switch (name) {
    case "always_on":
      return new sdk.AlwaysOnSampler();
    case "always_off":
      return new sdk.AlwaysOffSampler();
    case "traceidratio":
      return new sdk.TraceIdRatioBasedSampler(ratio());
    case "parentbased_always_on":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
    case "parentbased_always_off":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio()) });
    default:
      throw new TelemetryConfigError(
        `OTEL_TRACES_SAMPLER=${JSON.stringify(name)} is not supported; use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio`,
      );
  }
}

/**
 * Start exporting when `env` asks for it (see the module doc); null when it
 * does not, and then nothing is loaded. A bad variable is a
 * {@link TelemetryConfigError}.
 */
export async function startTelemetry(env: Env): Promise<Telemetry | null> {
  if (!telemetryWanted(env)) return null;
  const endpoint = tracesEndpoint(env);
  const protocol = protocolOf(env);
  const [api, sdk, resources, core, hooks] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/core"),
    import("@opentelemetry/context-async-hooks"),
  ]);
  const sampler = samplerOf(env, sdk);
  const lengthLimit = number(env, "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", 0) ?? number(env, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", 0);
  const countLimit = number(env, "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", 0) ?? number(env, "OTEL_ATTRIBUTE_COUNT_LIMIT", 0);
  const bsp = {
    scheduledDelayMillis: number(env, "OTEL_BSP_SCHEDULE_DELAY", 0),
    exportTimeoutMillis: number(env, "OTEL_BSP_EXPORT_TIMEOUT", 0),
    maxQueueSize: number(env, "OTEL_BSP_MAX_QUEUE_SIZE", 1),
    maxExportBatchSize: number(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1),
  };
  const exporter =
    protocol === "http/json"
      ? new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter({ url: endpoint })
      : new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter({ url: endpoint });
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over agentcore's defaults.
  const resource = resources
    .resourceFromAttributes({ "service.name": "agentcore", "service.version": VERSION })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const processor = new sdk.BatchSpanProcessor({
    exporter,
    ...Object.fromEntries(Object.entries(bsp).filter(([, v]) => v !== undefined)),
  });
  const provider = new sdk.TracerProvider({
    resource,
    sampler,
    spanProcessors: [processor],
    spanLimits: {
      ...(lengthLimit !== undefined ? { attributeValueLengthLimit: lengthLimit } : {}),
      ...(countLimit !== undefined ? { attributeCountLimit: countLimit } : {}),
    },
  });
  const contextManager = new hooks.AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contextManager);
  api.propagation.setGlobalPropagator(
    new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] }),
  );
  api.trace.setGlobalTracerProvider(provider);
  let stopping: Promise<void> | null = null;
  // An ending signal that no command handles still flushes the spans (the host runs this, then exits 128 + n).
  const release = holdCleanup({ signal: () => handle.shutdown() });
  const handle: Telemetry = {
    protocol,
    endpoint,
    shutdown() {
      stopping ??= (async () => {
        release();
        try {
          await provider.forceFlush();
        } catch {
          // an unreachable collector must not change how the command ends
        }
        try {
          await provider.shutdown();
        } catch {
          // as above
        }
        api.trace.disable();
        api.propagation.disable();
        api.context.disable();
      })();
      return stopping;
    },
  };
  return handle;
}
