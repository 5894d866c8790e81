/**
 * `agent --image FILE`: the task's images from files. Each file must be a
 * PNG, JPEG, GIF or WebP by its magic bytes (its name does not count) and
 * at most {@link DEFAULT_MAX_IMAGE_BYTES}; a file over the cap is refused
 * from its size, before it is read. Errors name the flag and the file.
 *
 * @module
 */
import { stat, readFile } from "node:fs/promises";
import { DEFAULT_MAX_IMAGE_BYTES, type ImageAttachment, imageFromBytes, ImageInputError, MAX_TASK_IMAGES } from "../providers/images.ts";

const MIB = 1024 * 1024;

/** The images of `--image` files, in order; throws {@link ImageInputError} naming `--image FILE`. */
export async function loadImageFiles(files: readonly string[], maxBytes = DEFAULT_MAX_IMAGE_BYTES): Promise<ImageAttachment[]> {
  if (files.length > MAX_TASK_IMAGES)
    throw new ImageInputError(`given ${files.length} times; a task takes at most ${MAX_TASK_IMAGES} images`, "--image");
  const out: ImageAttachment[] = [];
  for (const file of files) {
    const where = `--image ${file}`;
    if (file.trim() === "") throw new ImageInputError("needs a file: a PNG, JPEG, GIF or WebP image", "--image");
    let bytes: Uint8Array;
    try {
      const st = await stat(file);
      if (!st.isFile()) throw new ImageInputError("is not a file", where);
      if (st.size > maxBytes)
        throw new ImageInputError(
          `is ${(st.size / MIB).toFixed(1)} MiB, over the ${(maxBytes / MIB).toFixed(1)} MiB cap on one image (scale it down or compress it)`,
          where,
        );
      bytes = new Uint8Array(await readFile(file));
    } catch (e) {
      if (e instanceof ImageInputError) throw e;
      const code = (e as { code?: unknown }).code;
      throw new ImageInputError(`cannot be read (${typeof code === "string" ? code : (e as Error).message})`, where);
    }
    out.push(imageFromBytes(bytes, { where, maxBytes }));
  }
  return out;
}
