/**
 * Every relative link in README.md and docs/*.md points at a file that exists,
 * and a `#fragment` into a Markdown file at a heading it has (GitHub's anchors).
 */
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO } from "../support/binary.ts";
import { docPages } from "../support/doc-blocks.ts";
import { anchor } from "../../scripts/bench/chart.ts";

const pages = docPages(REPO);

/** The page's text without fenced code blocks and inline code (links there are not links). */
function prose(md: string): string {
  return md.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

function anchors(file: string): Set<string> {
  const md = fs.readFileSync(file, "utf8").replace(/^```[\s\S]*?^```/gm, "");
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of md.matchAll(/^#{1,6} (.+)$/gm)) {
    const a = anchor(m[1]!);
    const n = seen.get(a) ?? 0;
    out.add(n === 0 ? a : `${a}-${n}`);
    seen.set(a, n + 1);
  }
  return out;
}

test("docs/README.md lists every page in docs/, one line each", () => {
  const index = fs.readFileSync(path.join(REPO, "docs/README.md"), "utf8");
  for (const p of pages.filter((p) => p.startsWith("docs/") && p !== "docs/README.md")) {
    expect({ page: p, listed: index.includes(`- [${path.basename(p)}](${path.basename(p)})`) }).toEqual({ page: p, listed: true });
  }
});

test("every relative link in README.md and docs/*.md resolves, anchors included", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    const file = path.join(REPO, page);
    for (const m of prose(fs.readFileSync(file, "utf8")).matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
      checked++;
      const [target, fragment] = link.split("#") as [string, string | undefined];
      const dest = target === "" ? file : path.resolve(path.dirname(file), target);
      if (!fs.existsSync(dest)) {
        broken.push(`${page}: ${link} (no such file)`);
        continue;
      }
      if (fragment !== undefined && dest.endsWith(".md") && !anchors(dest).has(fragment)) broken.push(`${page}: ${link} (no such heading)`);
    }
  }
  expect(checked).toBeGreaterThan(50);
  expect(broken).toEqual([]);
});
