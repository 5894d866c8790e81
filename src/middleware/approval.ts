/** Moved to src/runtime/middleware/approval.ts (issue 14); this re-export goes once the front ends import it from there. */
export * from "../runtime/middleware/approval.ts";
