/** Moved to src/runtime/middleware/policy.ts (issue 14); this re-export goes once the front ends import it from there. */
export * from "../runtime/middleware/policy.ts";
