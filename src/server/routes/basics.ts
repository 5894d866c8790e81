/**
 * `GET /v1/health` (open: no token, never counted), `GET /v1/openapi.json`
 * and `GET /v1/tools`.
 *
 * @module
 */
import { VERSION } from "../../core/version.ts";
import { jsonResponse } from "../errors.ts";
import { subApp, type AppDeps } from "./deps.ts";

/** `GET /v1/health`: `{"status":"ok"}`, or `"stopping"` during shutdown. */
export function healthRoutes(deps: AppDeps) {
  return subApp().get("/health", () => jsonResponse({ status: deps.stopping() ? "stopping" : "ok" }));
}

/** `GET /v1/openapi.json` (the document's builder is loaded on the first request). */
export function openApiRoutes() {
  return subApp().get("/openapi.json", async () => jsonResponse((await import("../openapi.ts")).openApiDocument(VERSION)));
}

/** `GET /v1/tools`: the registered tools. */
export function toolRoutes(deps: AppDeps) {
  return subApp().get("/tools", () =>
    jsonResponse({
      tools: deps.runtime.registry.list().map((t) => ({
        name: t.name,
        description: t.description,
        effect: t.effect ?? "side_effecting",
        strict: t.strict ?? false,
        parameters: t.parameters ?? null,
      })),
    }),
  );
}
