export {};
/**
 * Run every benchmark in this folder in the current runtime.
 *
 *   bun scripts/bench/all.ts        (npm run bench)
 *
 * @module
 */
await import("./core.ts");
console.log();
await import("./incremental.ts");
console.log();
await import("./run.ts");
console.log();
await import("./agent.ts");
