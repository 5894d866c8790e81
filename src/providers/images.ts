/**
 * Images in the conversation: a task's images and a tool result's images.
 *
 * An image travels as an {@link ImageAttachment}: its media type (PNG, JPEG,
 * GIF or WebP, taken from the magic bytes, never from a file name), the
 * SHA-256 of its bytes, its size and, in memory, the bytes as base64. A
 * message carries them in `images` beside its text; the request to the model
 * turns them into OpenAI-style content parts
 * (`{"type":"image_url","image_url":{"url":"data:image/png;base64,…"}}`), and
 * a session journal keeps only the reference (`media_type`, `sha256`,
 * `bytes`), with the bytes in a blob of the store.
 *
 * @example
 * ```ts
 * const image = imageFromBytes(await Bun.file("chart.png").bytes());
 * await agent.run("What does this chart show?", { images: [image] });
 * ```
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { AgentcoreError } from "../core/errors.ts";

/** The image types a task or tool result may carry. */
export type ImageMediaType = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

export const IMAGE_MEDIA_TYPES: readonly ImageMediaType[] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/** The default cap on one image's bytes: 10 MiB (OpenAI takes up to 20 MB; local servers often less). */
export const DEFAULT_MAX_IMAGE_BYTES = 10 * 1024 * 1024;

/** The most images one task may carry. */
export const MAX_TASK_IMAGES = 16;

/**
 * One image of a message. `data` (base64 of the bytes) is there in memory
 * and in requests; a journal record leaves it out and keeps the rest, the
 * bytes going to the store's blob named by `sha256`.
 */
export interface ImageAttachment {
  media_type: ImageMediaType;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  /** Size of the bytes. */
  bytes: number;
  /** The bytes, base64 (absent in a journal record until the blob is loaded back). */
  data?: string;
}

/**
 * What a library caller may give as an image: a data URL
 * (`data:image/png;base64,…`), the bytes, or the bytes (or their base64) with
 * a media type. The type is always checked against the magic bytes.
 */
export type ImageInput =
  | string
  | Uint8Array
  | ArrayBuffer
  | { data: Uint8Array | ArrayBuffer | string; mediaType?: string }
  | ImageAttachment;

/** A bad image: not one of the four types, too large, or not valid base64 / data URL. `where` names the input. */
export class ImageInputError extends AgentcoreError {
  readonly code: string = "INVALID_IMAGE";
  override name = "ImageInputError";
  constructor(
    message: string,
    readonly where: string,
  ) {
    super(`${where}: ${message}`);
  }
}

/** Options of the image constructors. */
export interface ImageOptions {
  /** Cap on the bytes (default {@link DEFAULT_MAX_IMAGE_BYTES}). */
  maxBytes?: number;
  /** What the input is called in errors (default `image`). */
  where?: string;
}

const startsWith = (b: Uint8Array, sig: readonly number[], at = 0): boolean =>
  b.length >= at + sig.length && sig.every((x, i) => b[at + i] === x);
const ascii = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));

/** The image type of `bytes` by its magic bytes, or null when it is none of PNG, JPEG, GIF, WebP. */
export function sniffImageType(bytes: Uint8Array): ImageMediaType | null {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg";
  if (startsWith(bytes, ascii("GIF87a")) || startsWith(bytes, ascii("GIF89a"))) return "image/gif";
  if (startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8)) return "image/webp";
  return null;
}

/** Lowercase hex SHA-256 of `bytes`. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Whether `s` is a lowercase hex SHA-256 (64 hex digits). */
export function isSha256(s: unknown): s is string {
  return typeof s === "string" && /^[0-9a-f]{64}$/.test(s);
}

const MIB = 1024 * 1024;
const size = (n: number): string => (n >= MIB ? `${(n / MIB).toFixed(1)} MiB` : `${n} bytes`);
const normType = (t: string): string => {
  const x = t.trim().toLowerCase();
  return x === "image/jpg" ? "image/jpeg" : x;
};

/**
 * An attachment of `bytes`, checked: a PNG, JPEG, GIF or WebP by its magic
 * bytes, not empty, within the cap, and of `declared` type when one is given.
 */
export function imageFromBytes(bytes: Uint8Array, options: ImageOptions & { declared?: string } = {}): ImageAttachment {
  const where = options.where ?? "image";
  const max = options.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES;
  if (bytes.length === 0) throw new ImageInputError("is empty", where);
  if (bytes.length > max)
    throw new ImageInputError(`is ${size(bytes.length)}, over the ${size(max)} cap on one image (scale it down or compress it)`, where);
  const type = sniffImageType(bytes);
  if (type === null) throw new ImageInputError("is not a PNG, JPEG, GIF or WebP image (by its first bytes)", where);
  if (options.declared !== undefined && normType(options.declared) !== type)
    throw new ImageInputError(`says it is ${JSON.stringify(options.declared)}, but its bytes are ${type}`, where);
  return { media_type: type, sha256: sha256Hex(bytes), bytes: bytes.length, data: Buffer.from(bytes).toString("base64") };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The bytes of strict base64 (no whitespace, padding where due), or throws naming `where`. */
export function decodeBase64(text: string, where: string, maxBytes = DEFAULT_MAX_IMAGE_BYTES): Uint8Array {
  // Refused before decoding: 4 characters per 3 bytes.
  if (text.length > Math.ceil(maxBytes / 3) * 4 + 4)
    throw new ImageInputError(`is over the ${size(maxBytes)} cap on one image (scale it down or compress it)`, where);
  if (text.length % 4 !== 0 || !BASE64.test(text))
    throw new ImageInputError("is not valid base64 (A-Z, a-z, 0-9, +, /, padded with = to a multiple of 4, no line breaks)", where);
  return new Uint8Array(Buffer.from(text, "base64"));
}

/** An attachment from base64 text with a declared media type. */
export function imageFromBase64(mediaType: string | undefined, data: string, options: ImageOptions = {}): ImageAttachment {
  const where = options.where ?? "image";
  const bytes = decodeBase64(data, where, options.maxBytes);
  return imageFromBytes(bytes, { ...options, where, ...(mediaType !== undefined ? { declared: mediaType } : {}) });
}

/** An attachment from a `data:image/…;base64,…` URL. */
export function imageFromDataUrl(url: string, options: ImageOptions = {}): ImageAttachment {
  const where = options.where ?? "image";
  const m = /^data:([^;,]*)((?:;[^;,]*)*),/i.exec(url.slice(0, 256));
  if (m === null) throw new ImageInputError("is not a data URL (data:image/png;base64,…)", where);
  const params = m[2]!.split(";").filter((p) => p !== "");
  if (!params.some((p) => p.toLowerCase() === "base64"))
    throw new ImageInputError("is a data URL without ;base64 (only base64 data URLs are taken)", where);
  const type = m[1]!;
  return imageFromBase64(type === "" ? undefined : type, url.slice(m[0].length), { ...options, where });
}

/** One library image input as an attachment (see {@link ImageInput}). */
export function toImageAttachment(input: ImageInput, options: ImageOptions = {}): ImageAttachment {
  const where = options.where ?? "image";
  if (typeof input === "string") return imageFromDataUrl(input, options);
  if (input instanceof Uint8Array) return imageFromBytes(input, options);
  if (input instanceof ArrayBuffer) return imageFromBytes(new Uint8Array(input), options);
  if (typeof input === "object" && input !== null) {
    if ("sha256" in input && typeof input.data === "string") {
      const a = imageFromBase64(input.media_type, input.data, options);
      if (a.sha256 !== input.sha256) throw new ImageInputError(`sha256 ${input.sha256} does not match its bytes (${a.sha256})`, where);
      return a;
    }
    const d = (input as { data?: unknown }).data;
    const declared = (input as { mediaType?: unknown }).mediaType;
    if (declared !== undefined && typeof declared !== "string") throw new ImageInputError("mediaType must be a string", where);
    if (typeof d === "string") return imageFromBase64(declared, d, options);
    if (d instanceof Uint8Array || d instanceof ArrayBuffer)
      return imageFromBytes(d instanceof Uint8Array ? d : new Uint8Array(d), {
        ...options,
        ...(declared !== undefined ? { declared } : {}),
      });
  }
  throw new ImageInputError("must be a data URL, bytes (Uint8Array), or { data, mediaType }", where);
}

/** A task's images, checked (at most {@link MAX_TASK_IMAGES}); errors name `images[i]`. */
export function toImageAttachments(inputs: readonly ImageInput[], options: ImageOptions = {}): ImageAttachment[] {
  if (!Array.isArray(inputs)) throw new ImageInputError("must be an array", "images");
  if (inputs.length > MAX_TASK_IMAGES)
    throw new ImageInputError(`holds ${inputs.length} images; a task takes at most ${MAX_TASK_IMAGES}`, "images");
  return inputs.map((x, i) => toImageAttachment(x, { ...options, where: `images[${i}]` }));
}

/** The journal's reference to an image: the attachment without its bytes. */
export function imageRef(a: ImageAttachment): ImageAttachment {
  return { media_type: a.media_type, sha256: a.sha256, bytes: a.bytes };
}

/** The request content part of an image (its bytes as a data URL). Throws when its bytes are not loaded. */
export function imageContentPart(a: ImageAttachment): { type: "image_url"; image_url: { url: string } } {
  if (typeof a.data !== "string")
    throw new ImageInputError(`the bytes of image ${a.sha256} are not loaded (restore the session with its blobs)`, "image");
  return { type: "image_url", image_url: { url: `data:${a.media_type};base64,${a.data}` } };
}

/** Whether a value is an image attachment (with or without its bytes). */
export function isImageAttachment(v: unknown): v is ImageAttachment {
  if (typeof v !== "object" || v === null) return false;
  const a = v as Record<string, unknown>;
  return (
    IMAGE_MEDIA_TYPES.includes(a.media_type as ImageMediaType) &&
    isSha256(a.sha256) &&
    typeof a.bytes === "number" &&
    (a.data === undefined || typeof a.data === "string")
  );
}

/**
 * A tool result's images, taken out of it. A result in the MCP shape (an
 * object whose `content` is a list of blocks) may hold
 * `{"type":"image","mime_type":…,"data":"<base64>"}` blocks; each valid one
 * becomes an attachment, and its block in the result is replaced by the
 * reference `{"type":"image","mime_type":…,"sha256":…,"bytes":…}` (the model
 * gets the image itself as a content part, not its base64 as text). A block
 * that is not a valid image stays as a note (`{"type":"image","mime_type":…,
 * "omitted":true,"reason":…}`). Returns the result unchanged and no images
 * when there is nothing to take.
 */
export function takeResultImages(result: unknown, options: ImageOptions = {}): { result: unknown; images: ImageAttachment[] } {
  if (typeof result !== "object" || result === null || Array.isArray(result)) return { result, images: [] };
  const content = (result as { content?: unknown }).content;
  if (!Array.isArray(content)) return { result, images: [] };
  if (!content.some((b) => typeof b === "object" && b !== null && b.type === "image" && typeof b.data === "string"))
    return { result, images: [] };
  const images: ImageAttachment[] = [];
  const blocks = content.map((b, i) => {
    if (typeof b !== "object" || b === null || b.type !== "image" || typeof b.data !== "string") return b;
    const declared = typeof b.mime_type === "string" ? b.mime_type : undefined;
    try {
      const a = imageFromBase64(declared, b.data, { ...options, where: `content[${i}]` });
      images.push(a);
      return { type: "image", mime_type: a.media_type, sha256: a.sha256, bytes: a.bytes };
    } catch (e) {
      const reason = e instanceof ImageInputError ? e.message : String(e);
      return { type: "image", mime_type: (declared ?? "").slice(0, 128), omitted: true, reason };
    }
  });
  return { result: { ...(result as Record<string, unknown>), content: blocks }, images };
}
