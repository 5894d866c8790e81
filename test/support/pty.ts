/**
 * What a terminal would show for the bytes a program wrote to it (as
 * `script(1)` records them): each carriage return goes back to the start of
 * the line and later text overwrites it, as a redrawn spinner does. Colour
 * sequences (`ESC [ … m`) are dropped; other bytes are kept as they are.
 * Lines come back with their trailing blanks trimmed.
 */
export function screenLines(typescript: string): string[] {
  // deno-lint-ignore no-control-regex
  const text = typescript.replace(/\u001b\[[0-9;]*m/g, "").replace(/\r\n/g, "\n");
  const lines: string[] = [];
  for (const raw of text.split("\n")) {
    let line: string[] = [];
    let col = 0;
    for (const ch of raw) {
      if (ch === "\r") {
        col = 0;
        continue;
      }
      line[col] = ch;
      col++;
    }
    line = Array.from(line, (c) => c ?? " ");
    lines.push(line.join("").trimEnd());
  }
  while (lines.length > 0 && lines.at(-1) === "") lines.pop();
  return lines;
}
