/**
 * MCP `CallToolResult` → the `result` of an agentcore envelope.
 *
 * The result is always an object:
 * ```json
 * {"content":[{"type":"text","text":"…"},{"type":"image","mime_type":"image/png","data":"<base64>"}],
 *  "structured_content":{…}}
 * ```
 * - `text` blocks keep their text;
 * - `image` and `audio` blocks keep `mime_type` and the base64 `data`;
 * - `resource_link` blocks keep `uri`, `name`, `mime_type`, `description`;
 * - embedded `resource` blocks keep `uri`, `mime_type` and `text` or `blob`;
 * - unknown block types are kept as `{type, unsupported: true}`;
 * - `structured_content` is present when the server sent `structuredContent`.
 *
 * Wire names are snake_case, as everywhere in agentcore. A result whose JSON
 * is larger than `maxBytes` is cut down (see {@link capResult}) and flagged
 * with `truncated: true` and `original_bytes`.
 *
 * @module
 */

/** One mapped content block. */
export type McpBlock =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; mime_type: string; data: string }
  | { type: "image" | "audio"; mime_type: string; omitted: true; bytes: number }
  | { type: "resource_link"; uri: string; name?: string; mime_type?: string; description?: string }
  | { type: "resource"; uri: string; mime_type?: string; text?: string; blob?: string; omitted?: true }
  | { type: string; unsupported: true };

/** The envelope `result` of a call to an MCP tool. */
export interface McpCallResult {
  content: McpBlock[];
  structured_content?: unknown;
  /** Present (true) only when the result was cut to fit `max_result_bytes`. */
  truncated?: true;
  /** Serialized size before truncation, in bytes. */
  original_bytes?: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const optStr = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function mapBlock(b: unknown): McpBlock {
  if (!isObj(b) || typeof b.type !== "string") return { type: "invalid", unsupported: true };
  switch (b.type) {
    case "text":
      return { type: "text", text: typeof b.text === "string" ? b.text : "" };
    case "image":
    case "audio":
      return { type: b.type, mime_type: optStr(b.mimeType) ?? "application/octet-stream", data: typeof b.data === "string" ? b.data : "" };
    case "resource_link": {
      const out: McpBlock = { type: "resource_link", uri: optStr(b.uri) ?? "" };
      if (typeof b.name === "string") out.name = b.name;
      if (typeof b.mimeType === "string") out.mime_type = b.mimeType;
      if (typeof b.description === "string") out.description = b.description;
      return out;
    }
    case "resource": {
      const r = isObj(b.resource) ? b.resource : {};
      const out: McpBlock = { type: "resource", uri: optStr(r.uri) ?? "" };
      if (typeof r.mimeType === "string") out.mime_type = r.mimeType;
      if (typeof r.text === "string") out.text = r.text;
      if (typeof r.blob === "string") out.blob = r.blob;
      return out;
    }
    default:
      return { type: b.type.slice(0, 64), unsupported: true };
  }
}

/** Map an MCP tool result's content and structured content (not `isError`; the caller decides). */
export function mapCallToolResult(r: { content?: unknown; structuredContent?: unknown }): McpCallResult {
  const content = Array.isArray(r.content) ? r.content.map(mapBlock) : [];
  const out: McpCallResult = { content };
  if (r.structuredContent !== undefined) out.structured_content = r.structuredContent;
  return out;
}

const encoder = new TextEncoder();
const byteLength = (v: unknown): number => encoder.encode(JSON.stringify(v)).length;

/** Cut `s` to at most `maxBytes` UTF-8 bytes on a code point boundary. */
function cutUtf8(s: string, maxBytes: number): string {
  if (maxBytes <= 0) return "";
  const bytes = encoder.encode(s);
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** Room kept for the truncation flags and JSON punctuation. */
const OVERHEAD = 256;

/**
 * Fit `r` into `maxBytes` of JSON. When it is already small enough it is
 * returned unchanged. Otherwise blocks are kept in order while they fit; the
 * first text block that does not fit is cut (marked with a trailing
 * `…[truncated]`); images, audio and embedded resources that do not fit are
 * replaced by `{…, omitted: true, bytes}`; `structured_content` is dropped
 * when it does not fit in what is left. The result then carries
 * `truncated: true` and `original_bytes`.
 */
export function capResult(r: McpCallResult, maxBytes: number): McpCallResult {
  const size = byteLength(r);
  if (size <= maxBytes) return r;
  let room = Math.max(0, maxBytes - OVERHEAD);
  const stubs = r.content.map(stubOf);
  // What the stubs of the blocks after index i need, so that a long text
  // does not crowd out the note that an image was there (at most half the room).
  const after: number[] = new Array(r.content.length + 1).fill(0);
  for (let i = r.content.length - 1; i >= 0; i--) {
    const st = stubs[i];
    after[i] = after[i + 1]! + (st === undefined ? 0 : byteLength(st) + 1);
  }
  const content: McpBlock[] = [];
  r.content.forEach((b, i) => {
    const n = byteLength(b) + 1;
    const reserve = Math.min(after[i + 1]!, Math.floor(room / 2));
    if (n <= room - (b.type === "text" ? reserve : 0)) {
      content.push(b);
      room -= n;
      return;
    }
    if (b.type === "text" && "text" in b) {
      const text = cutUtf8(b.text, room - reserve - 64);
      if (text.length > 0) {
        const kept = { type: "text" as const, text: `${text}…[truncated]` };
        content.push(kept);
        room -= byteLength(kept) + 1;
      }
      return;
    }
    const stub = stubs[i];
    if (stub !== undefined && byteLength(stub) + 1 <= room) {
      content.push(stub);
      room -= byteLength(stub) + 1;
    }
    // anything else that does not fit is dropped; `truncated` says so
  });
  const out: McpCallResult = { content };
  if (r.structured_content !== undefined && byteLength(r.structured_content) + 24 <= room) out.structured_content = r.structured_content;
  out.truncated = true;
  out.original_bytes = size;
  return out;
}

/** The small stand-in of a media or embedded-resource block (undefined for other kinds). */
function stubOf(b: McpBlock): McpBlock | undefined {
  if ((b.type === "image" || b.type === "audio") && "data" in b) {
    return { type: b.type, mime_type: b.mime_type.slice(0, 128), omitted: true, bytes: b.data.length };
  }
  if (b.type === "resource" && "uri" in b) {
    const stub: McpBlock = { type: "resource", uri: b.uri.slice(0, 256), omitted: true };
    if (b.mime_type !== undefined) stub.mime_type = b.mime_type.slice(0, 128);
    return stub;
  }
  return undefined;
}
