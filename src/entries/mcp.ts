/**
 * `agentcore/mcp`: the Model Context Protocol both ways. `attachMcpServers`
 * (and `McpToolHandler`) turn the tools of MCP servers (stdio or HTTP) into
 * agentcore tools; `createMcpServer` serves agentcore's tools over MCP;
 * `parseMcpServers` reads the `mcpServers` config. Loads the MCP SDKs.
 *
 * @module
 */
export { AgentcoreError, isAgentcoreError } from "../core/errors.ts";
export * from "../mcp/index.ts";
