/**
 * Compactors: what writes the summary of the messages a compaction folds away.
 *
 * @module
 */
import type { ChatMessage, ModelAdapter } from "../providers/types.ts";
import type { CompactionRequest } from "./types.ts";

/** A compactor's answer: the summary text and a label of who wrote it. */
export interface CompactorOutput {
  content: string;
  source: string;
}

/** Summarises `request.preparation.messages_to_summarize` (and `request.previous_summary`). Must honour `signal`. */
export interface Compactor {
  compact(request: CompactionRequest, signal: AbortSignal): Promise<CompactorOutput>;
}

/** Builds the summarisation prompt; supplied by the application. */
export type CompactionPromptBuilder = (request: CompactionRequest) => ChatMessage[];

/**
 * A compactor that borrows a model adapter (never started or shut down here)
 * and asks it for a summary with an application-supplied prompt. No tools are
 * offered. Rejects when the model answers with empty content.
 */
export class ModelCompactor implements Compactor {
  constructor(
    private readonly model: ModelAdapter,
    private readonly buildPrompt: CompactionPromptBuilder,
    readonly source: string = "model",
  ) {
    if (typeof model?.complete !== "function") throw new TypeError("ModelCompactor: model must be a ModelAdapter");
    if (typeof buildPrompt !== "function") throw new TypeError("ModelCompactor: buildPrompt must be a function");
    if (typeof source !== "string" || source.trim() === "") throw new TypeError("ModelCompactor: source must be a non-empty string");
  }

  async compact(request: CompactionRequest, signal: AbortSignal): Promise<CompactorOutput> {
    const messages = this.buildPrompt(request);
    if (!Array.isArray(messages) || messages.length === 0) throw new TypeError("ModelCompactor: the prompt builder must return messages");
    const response = await this.model.complete({ messages, tools: [], signal });
    const content = response.message.content?.trim() ?? "";
    if (content === "") throw new Error("compaction model returned empty content");
    return { content, source: this.source };
  }
}
