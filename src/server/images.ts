/**
 * `images` of `POST /v1/runs`: each `{"data_url": "data:image/png;base64,…"}`
 * or `{"media_type": "image/png", "data": "<base64>"}`. Checked like the
 * library's (PNG, JPEG, GIF or WebP by the magic bytes, the declared type
 * must match them, at most 10 MiB each, at most 16); a bad one is a 400
 * `INVALID_REQUEST` whose `details.location` is the JSON Pointer of the bad
 * member (`/images/1/data`). The whole body still counts against the
 * daemon's body cap (`--max-body-bytes`, default 1 MiB).
 *
 * @module
 */
import { type ImageAttachment, imageFromBase64, imageFromDataUrl, ImageInputError, MAX_TASK_IMAGES } from "../providers/images.ts";
import { Fields } from "./body.ts";
import { HttpError } from "./errors.ts";

/** The images of a run request body (`undefined` when it has none); throws a 400 naming the member. */
export function parseRunImages(raw: unknown): ImageAttachment[] | undefined {
  if (raw === undefined) return undefined;
  const bad = (location: string, message: string): never => {
    throw new HttpError(400, "INVALID_REQUEST", `${location}: ${message}`, { location });
  };
  if (!Array.isArray(raw)) bad("/images", 'must be an array of {"data_url"} or {"media_type", "data"} objects');
  const list = raw as unknown[];
  if (list.length > MAX_TASK_IMAGES) bad("/images", `holds ${list.length} images; a task takes at most ${MAX_TASK_IMAGES}`);
  return list.map((item, i) => {
    const base = `/images/${i}`;
    if (typeof item !== "object" || item === null || Array.isArray(item))
      bad(base, 'must be an object: {"data_url": "data:image/png;base64,…"} or {"media_type": "image/png", "data": "<base64>"}');
    const f = new Fields(item as Record<string, unknown>, base);
    f.only(["data_url", "media_type", "data"]);
    const o = item as Record<string, unknown>;
    try {
      if (o.data_url !== undefined) {
        if (o.data !== undefined || o.media_type !== undefined)
          f.fail("data_url", "goes alone: send either data_url, or media_type and data");
        const url = f.string("data_url", { required: true })!;
        return imageFromDataUrl(url, { where: `${base}/data_url` });
      }
      const type = f.string("media_type", { required: true, max: 128 })!;
      const data = f.string("data", { required: true })!;
      // Where the bytes are of another type than media_type says, the pointer names media_type.
      return imageFromBase64(type, data, { where: `${base}/data` });
    } catch (e) {
      if (!(e instanceof ImageInputError)) throw e;
      const where = /says it is/.test(e.message) ? `${base}/media_type` : e.where;
      return bad(where, e.message.slice(e.where.length + 2));
    }
  });
}
