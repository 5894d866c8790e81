/**
 * Public API of the tool layer: definitions, registry, argument schemas,
 * built-in tools and rooted file access.
 *
 * @module
 */
export { isToolOutcome, TOOL_CONTROLS, TOOL_NAME_PATTERN, ToolError, toolOutcome } from "./definition.ts";
export type { AnyToolDefinition, JsonSchema, ToolContext, ToolControl, ToolDefinition, ToolEffect, ToolOutcome } from "./definition.ts";
export { ToolRegistrationError, ToolRegistry } from "./registry.ts";
export type { RegisteredTool } from "./registry.ts";
export { DEFAULT_MAX_SCHEMA_ERRORS, SchemaCompileError, SchemaCompiler } from "./schema.ts";
export type { ArgumentCheck, ArgumentError, ArgumentValidator, SchemaCompilerOptions } from "./schema.ts";
export { createEchoTool, ECHO_PARAMETERS } from "./builtin/echo.ts";
export { createReadFileTool, READ_FILE_PARAMETERS } from "./builtin/read_file.ts";
export type { ReadFileArgs, ReadFileResult, ReadFileToolOptions } from "./builtin/read_file.ts";
export { DEFAULT_MAX_FILE_BYTES, readRootedFile, resolveRoot, splitRelativePath } from "./fs/rooted.ts";
export type { RootedFile } from "./fs/rooted.ts";
