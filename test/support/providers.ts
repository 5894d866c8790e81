/** Small helpers shared by the provider tests. */
import type { ModelStreamEvent } from "../../src/providers/types.ts";

/** Every event of a stream, in order. */
export async function collect(it: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

/** The rejection of `p`; fails the test when `p` resolves. */
export async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}
