/**
 * Composition of {@link ToolMiddleware} functions: the first one is the
 * outermost (`first:before, second:before, handler, second:after, first:after`).
 *
 * @module
 */
import type { ToolCallContext, ToolCallOutcome, ToolMiddleware } from "./types.ts";

/** The innermost step: runs the tool's handler. */
export type ToolCallTerminal = (ctx: ToolCallContext) => Promise<ToolCallOutcome>;

/**
 * Wrap `terminal` with `middleware`, first = outermost. A middleware calling
 * `next` twice gets a rejected promise the second time (a call runs once).
 * When a middleware passes a new context object to `next`, the `decision`
 * set further in is copied back onto its own context.
 */
export function composeMiddleware(middleware: readonly ToolMiddleware[], terminal: ToolCallTerminal): ToolCallTerminal {
  const list = [...middleware];
  return (ctx) => {
    let index = -1;
    const step = (i: number, c: ToolCallContext): Promise<ToolCallOutcome> => {
      if (i <= index) return Promise.reject(new Error("middleware called next() more than once"));
      index = i;
      if (i === list.length) return terminal(c);
      try {
        return Promise.resolve(
          list[i]!(c, (n) => {
            const inner = n ?? c;
            if (inner === c) return step(i + 1, c);
            // A transformed context: the decision set inside is copied back, so outer middleware (history) see it.
            return step(i + 1, inner).finally(() => {
              if (inner.decision !== undefined) c.decision = inner.decision;
            });
          }),
        );
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return step(0, ctx);
  };
}
