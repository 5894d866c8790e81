/**
 * MCP: the client (tools of MCP servers become agentcore tools) and the
 * server (agentcore's tools served to MCP clients). See docs/mcp.md.
 *
 * @module
 */
export { attachMcpServers, McpStartupError } from "./attach.ts";
export type { McpToolset } from "./attach.ts";
export { McpConnectError, McpToolHandler } from "./client.ts";
export type { McpToolHandlerOptions, McpTransportKind, SkippedMcpTool } from "./client.ts";
export { MCP_DEFAULTS, McpConfigError, parseMcpServers } from "./config.ts";
export type { McpServerConfig } from "./config.ts";
export { capResult, mapCallToolResult } from "./result.ts";
export type { McpBlock, McpCallResult } from "./result.ts";
export { createMcpServer, envelopeToCallToolResult } from "./server.ts";
export type { McpServerOptions } from "./server.ts";
export { McpProtocolError, SAFE_ENV_VARS, serverEnvironment, StdioTransport } from "./stdio.ts";
export type { StdioTransportOptions } from "./stdio.ts";
