/** Moved to src/runtime/middleware/index.ts (issue 14); this re-export goes once the front ends import it from there. */
export * from "../runtime/middleware/index.ts";
