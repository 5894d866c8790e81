/**
 * Layer rules for agentcore (DESIGN.md, "Architecture"; issue 14 part 2).
 *
 * Layers from the ground up; each imports only from layers below it:
 *   core -> tools -> runtime -> providers -> context -> session -> skills
 *        -> mcp -> agent -> host -> server -> cli
 * src/mod.ts and the entry files in src/entries/ are the public surface and
 * may import any layer. Nothing in src imports test/, no file cycles, no
 * orphans.
 *
 * Run: npm run lint:layers  (dependency-cruiser runs under Bun here).
 */
"use strict";

const LAYERS = [
  "core",
  "tools",
  "runtime",
  "providers",
  "context",
  "session",
  "skills",
  "mcp",
  "agent",
  "host",
  "server",
  "cli",
];

/** One rule per layer: it may not import any layer above it. */
const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer}`,
  comment: `src/${layer}/ imports only from layers below it (${LAYERS.slice(0, i).join(", ") || "none"}), not from ${LAYERS.slice(i + 1).join(", ")}.`,
  severity: "error",
  from: { path: `^src/${layer}/` },
  to: { path: `^src/(${LAYERS.slice(i + 1).join("|")})/` },
}));

/** Where a file in src may live: a layer, or the public surface on top. */
const PLACED = `^src/((${LAYERS.join("|")})/|mod\\.ts$|entries/)`;

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: "in-a-layer",
      comment: "Every module in src belongs to a layer (src/<layer>/) or is the public surface (src/mod.ts, src/entries/).",
      severity: "error",
      from: { path: "^src/", pathNot: PLACED },
      to: {},
    },
    {
      name: "to-a-layer",
      comment: "Every module in src that is imported belongs to a layer or is the public surface.",
      severity: "error",
      from: {},
      to: { path: "^src/", pathNot: PLACED },
    },
    {
      name: "no-entries-from-layers",
      comment: "The public surface (src/mod.ts, src/entries/) sits on top; no layer imports it.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(mod\\.ts|entries/)" },
      to: { path: "^src/(mod\\.ts|entries/)" },
    },
    {
      name: "no-circular",
      comment: "No file cycles: a cycle means two modules share something that belongs in a module below both.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "no-orphans",
      comment: "Every module in src is reachable from something (an entry imports it or it imports something).",
      severity: "error",
      from: {
        orphan: true,
        path: "^src/",
        // src/server/console/client/: the browser's script, embedded as a string (scripts/build-console.mjs), never imported
        pathNot: ["\\.d\\.ts$", "^src/mod\\.ts$", "^src/entries/", "^src/cli/main\\.ts$", "^src/server/console/client/"],
      },
      to: {},
    },
    {
      name: "no-src-to-test",
      comment: "Library code never imports test code.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^test/" },
    },
    {
      name: "not-to-unresolvable",
      comment: "Every import resolves.",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|dist|asm)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".mjs", ".cjs", ".json"],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
