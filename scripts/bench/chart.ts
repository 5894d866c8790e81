/**
 * One benchmark measure as the report reads it, and its chart as SVG.
 *
 * Each benchmark script that takes `--json FILE` writes an array of these.
 * The chart is a horizontal bar per contender (its median, with a thin
 * min–max line), the reference's bar in a second colour, and, where the
 * target is a ratio of the reference, a dashed line at the target.
 *
 * The SVG is written by hand: a bar chart is some sixty lines of markup,
 * and the charting libraries on npm either need a DOM (a browser or jsdom)
 * to render or pull in a grammar-of-graphics runtime many times the size of
 * this project's own code. Plain SVG renders on GitHub, in the browser
 * console's static server and in any viewer.
 *
 * @module
 */

export interface Contender {
  name: string;
  median: number;
  min: number;
  max: number;
}

export interface Measure {
  /** Stable id, e.g. "startup.version". */
  id: string;
  title: string;
  unit: string;
  better: "lower" | "higher";
  /** Name of the contender that is the reference. */
  reference: string;
  /** agentcore's figure first. */
  contenders: Contender[];
  /** First contender ÷ reference (medians). */
  ratio: number;
  target?: { op: "<=" | ">="; value: number; text: string };
  notes?: string;
}

/** The problems with `value` as a list of measures, or [] when it is one. */
export function measureProblems(value: unknown, where: string): string[] {
  if (!Array.isArray(value)) return [`${where}: expected a JSON array of measures`];
  const out: string[] = [];
  value.forEach((m, i) => {
    const at = `${where}[${i}]`;
    if (typeof m !== "object" || m === null) return void out.push(`${at}: expected an object`);
    const o = m as Record<string, unknown>;
    for (const k of ["id", "title", "unit", "reference"])
      if (typeof o[k] !== "string" || o[k] === "") out.push(`${at}.${k}: expected a non-empty string`);
    if (o.better !== "lower" && o.better !== "higher") out.push(`${at}.better: expected "lower" or "higher"`);
    if (typeof o.ratio !== "number" || !Number.isFinite(o.ratio)) out.push(`${at}.ratio: expected a finite number`);
    if (!Array.isArray(o.contenders) || o.contenders.length === 0) out.push(`${at}.contenders: expected a non-empty array`);
    else
      o.contenders.forEach((c, j) => {
        const cc = c as Record<string, unknown>;
        if (typeof cc?.name !== "string") out.push(`${at}.contenders[${j}].name: expected a string`);
        for (const k of ["median", "min", "max"])
          if (typeof cc?.[k] !== "number" || !Number.isFinite(cc[k] as number))
            out.push(`${at}.contenders[${j}].${k}: expected a finite number`);
      });
    if (Array.isArray(o.contenders) && typeof o.reference === "string" && !o.contenders.some((c) => (c as Contender)?.name === o.reference))
      out.push(`${at}.reference: "${o.reference}" is not one of the contenders`);
    if (o.target !== undefined) {
      const t = o.target as Record<string, unknown>;
      if ((t?.op !== "<=" && t?.op !== ">=") || typeof t.value !== "number" || typeof t.text !== "string")
        out.push(`${at}.target: expected { op: "<=" | ">=", value: number, text: string }`);
    }
  });
  return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens (test/docs/links.test.ts checks links with it). */
export function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** Whether the measure meets its target (undefined: it has none). */
export function targetMet(m: Measure): boolean | undefined {
  if (!m.target) return undefined;
  return m.target.op === "<=" ? m.ratio <= m.target.value : m.ratio >= m.target.value;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A short figure: 3 significant digits, thousands separated. */
export function fmt(n: number): string {
  if (n === 0) return "0";
  const a = Math.abs(n);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  return n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** The measure's ratio: 3 significant digits, 4 when that would round it onto the other side of its target. */
export function fmtRatio(m: Measure): string {
  const short = Number(m.ratio.toPrecision(3));
  const flips = m.target !== undefined && (short === m.target.value || short > m.target.value !== m.ratio > m.target.value);
  return flips ? m.ratio.toPrecision(4) : String(short);
}

/** The measure as a horizontal bar chart. */
export function chartSvg(m: Measure): string {
  // About 7 px a character at 13 px: the label column fits the longest name.
  const labelW = Math.min(380, Math.max(120, Math.max(...m.contenders.map((c) => c.name.length)) * 7 + 16));
  const plotW = 380;
  const valueW = 100;
  const W = labelW + plotW + valueW + 20;
  const barH = 22;
  const gap = 10;
  const top = m.target ? 64 : 46;
  const n = m.contenders.length;
  const H = top + n * (barH + gap) + 30;
  const ref = m.contenders.find((c) => c.name === m.reference)!;
  const targetAt = m.target ? m.target.value * ref.median : undefined;
  const max = Math.max(...m.contenders.map((c) => c.max), targetAt ?? 0) * 1.05 || 1;
  const x = (v: number) => labelW + (v / max) * plotW;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="13">`,
    `<title>${esc(m.title)}</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="15" font-weight="600" fill="#111">${esc(m.title)}</text>`,
    `<text x="10" y="38" fill="#555">${esc(`${m.unit}, ${m.better} is better · ratio ${fmtRatio(m)}× of ${m.reference}`)}</text>`,
    ...(m.target ? [`<text x="10" y="56" fill="#555">${esc(`target: ${m.target.text}`)}</text>`] : []),
  );
  m.contenders.forEach((c, i) => {
    const y = top + i * (barH + gap);
    const isRef = c.name === m.reference;
    const fill = i === 0 ? "#2563eb" : isRef ? "#9ca3af" : "#d1d5db";
    parts.push(
      `<text x="${labelW - 8}" y="${y + barH / 2 + 4}" text-anchor="end" fill="#111">${esc(c.name)}</text>`,
      `<rect x="${labelW}" y="${y}" width="${Math.max(1, x(c.median) - labelW).toFixed(1)}" height="${barH}" fill="${fill}"/>`,
      `<line x1="${x(c.min).toFixed(1)}" x2="${x(c.max).toFixed(1)}" y1="${y + barH / 2}" y2="${y + barH / 2}" stroke="#111" stroke-width="1.5"/>`,
      `<text x="${W - valueW}" y="${y + barH / 2 + 4}" fill="#111">${esc(fmt(c.median))}</text>`,
    );
  });
  if (targetAt !== undefined) {
    const tx = x(targetAt).toFixed(1);
    parts.push(
      `<line x1="${tx}" x2="${tx}" y1="${top - 4}" y2="${top + n * (barH + gap) - gap + 4}" stroke="#dc2626" stroke-width="1.5" stroke-dasharray="4 3"/>`,
      `<text x="${tx}" y="${H - 10}" text-anchor="middle" fill="#dc2626">${esc(`target: ${m.target!.text}`)}</text>`,
    );
  }
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
