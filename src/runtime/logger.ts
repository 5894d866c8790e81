/** Moved to src/core/logger.ts (issue 14); this re-export goes once the front ends import it from there. */
export * from "../core/logger.ts";
