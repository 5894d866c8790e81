/**
 * A slow, obviously-correct reference for the strict JSON rules, used by the
 * differential tests. It leans on independent pieces:
 *  - TextDecoder({ fatal: true }) for UTF-8 validity,
 *  - @humanwhocodes/momoa (mode "json") for the RFC 8259 grammar,
 *  - an AST walk for everything momoa does not check: duplicate names (after
 *    unescaping), depth, lone surrogates from \u escapes, raw control
 *    characters in strings, `__proto__`, numbers that overflow a double.
 */
import { parse } from "@humanwhocodes/momoa";

export interface ReferenceOptions {
  maxBytes?: number;
  maxDepth?: number;
  allowProtoKey?: boolean;
}

export type ReferenceVerdict = { ok: true } | { ok: false; code: string; why: string };

interface AstNode {
  type: string;
  value?: unknown;
  members?: { name: AstNode; value: AstNode }[];
  elements?: { value: AstNode }[];
  loc: { start: { offset: number }; end: { offset: number } };
}

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (n >= 0xdc00 && n <= 0xdfff) {
        i++;
        continue;
      }
      return true;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

function hasRawControl(raw: string): boolean {
  for (let i = 0; i < raw.length; i++) if (raw.charCodeAt(i) < 0x20) return true;
  return false;
}

const fail = (code: string, why: string): ReferenceVerdict => ({ ok: false, code, why });

/** Decide whether `bytes` is acceptable strict JSON under the given limits. */
export function referenceStrict(bytes: Uint8Array, opts: ReferenceOptions = {}): ReferenceVerdict {
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  const maxDepth = opts.maxDepth ?? 64;
  if (bytes.length > maxBytes) return fail("JSON_SIZE", "too large");
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return fail("JSON_ENCODING", "bom");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return fail("JSON_ENCODING", "invalid utf-8");
  }
  let root: AstNode;
  try {
    root = (parse(text, { mode: "json" }) as unknown as { body: AstNode }).body;
  } catch (e) {
    return fail("JSON_PARSE", String((e as Error).message));
  }
  // iterative walk: [node, depth of the containers around it]
  const todo: [AstNode, number][] = [[root, 0]];
  let verdict: ReferenceVerdict = { ok: true };
  const note = (v: ReferenceVerdict) => {
    if (verdict.ok) verdict = v;
  };
  while (todo.length > 0) {
    const [node, depth] = todo.pop()!;
    const raw = text.slice(node.loc.start.offset, node.loc.end.offset);
    switch (node.type) {
      case "String":
        if (hasRawControl(raw)) note(fail("JSON_PARSE", "control character"));
        if (hasLoneSurrogate(node.value as string)) note(fail("JSON_ENCODING", "lone surrogate"));
        break;
      case "Number":
        if (!Number.isFinite(Number(raw))) note(fail("JSON_NUMBER_RANGE", "overflow"));
        break;
      case "Array":
        if (depth + 1 > maxDepth) note(fail("JSON_DEPTH", "too deep"));
        for (const el of node.elements!) todo.push([el.value, depth + 1]);
        break;
      case "Object": {
        if (depth + 1 > maxDepth) note(fail("JSON_DEPTH", "too deep"));
        const seen = new Set<string>();
        for (const m of node.members!) {
          const name = m.name.value as string;
          todo.push([m.name, depth + 1]);
          if (name === "__proto__" && !opts.allowProtoKey) note(fail("JSON_FORBIDDEN_KEY", "__proto__"));
          if (seen.has(name)) note(fail("JSON_DUPLICATE_KEY", `duplicate ${JSON.stringify(name)}`));
          seen.add(name);
          todo.push([m.value, depth + 1]);
        }
        break;
      }
      default:
        break;
    }
  }
  return verdict;
}
