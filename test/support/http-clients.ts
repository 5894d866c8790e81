/**
 * Real HTTP clients for the daemon tests: a command (node, python3, curl…)
 * run as a child process, its standard output returned.
 */

/**
 * Run `argv` and return its standard output. A non-zero exit or anything on
 * standard error fails, unless `allowFailure` (then standard error is
 * appended to the output, for the test to see what went wrong).
 */
export async function runClient(argv: string[], options: { allowFailure?: boolean } = {}): Promise<string> {
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (options.allowFailure === true) return err === "" ? out : `${out}${err}`;
  if (code !== 0 || err !== "") throw new Error(`${argv[0]} exited ${code}: ${err.slice(0, 2000)}`);
  return out;
}

/** Whether `argv` runs and exits 0 (e.g. `python3 -c "import requests"`). */
export async function commandWorks(argv: string[]): Promise<boolean> {
  try {
    const proc = Bun.spawn(argv, { stdout: "ignore", stderr: "ignore", stdin: "ignore" });
    return (await proc.exited) === 0;
  } catch {
    return false;
  }
}
