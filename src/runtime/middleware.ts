/** Moved to src/runtime/middleware/types.ts (issue 14); this re-export goes once the front ends import it from there. */
export type * from "./middleware/types.ts";
