/** The scripted OpenAI-compatible server for tests: public as `agentcore/testing` (src/providers/scripted-server.ts). */
export * from "../../src/providers/scripted-server.ts";
