/**
 * The browser console (docs/console.md), end to end in a real browser:
 * Debian's chromium driven by playwright-core against the compiled binary's
 * `serve`. Sign in through the printed link, start a scripted run that needs
 * an approval, watch its text and tool call appear, approve, see it complete,
 * fork its session and see the new branch; history and tools pages. Then the
 * refusals: a forged cross-site POST (from a page on another site, and by
 * hand without Origin or CSRF token), a foreign Origin, a wrong Host, a
 * reused code; the token appears neither in a page nor in the server's
 * output. Screenshots of every page go to test-artifacts/console/ (git-ignored);
 * their paths are printed.
 *
 * Skipped (with a note) when /usr/bin/chromium is missing; `.ci/run` installs it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { binaryPath, REPO } from "../support/binary.ts";
import { tmp } from "../support/tmp.ts";
import { ConsoleAuth } from "../../src/server/console/auth.ts";
import { collectStderr, rawRequest } from "../support/daemon.ts";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
// In CI (.ci/run installs chromium) a missing browser is a failure, not a quiet skip.
if (!haveChromium && process.env.CI === "true")
  throw new Error(`console.test: ${CHROMIUM} is missing under CI=true: .ci/run should have installed it (apt-get install chromium)`);
if (!haveChromium) console.warn(`console.test: ${CHROMIUM} is missing (apt-get install chromium): the browser tests are skipped`);
const ARTIFACTS = join(REPO, "test-artifacts", "console");
const WAIT = 20_000;

interface Daemon {
  proc: ReturnType<typeof Bun.spawn>;
  url: string;
  port: number;
  token: string;
  link: string;
  dir: string;
  stderr: () => string;
}

/** The MCP reference server (its get-tiny-image tool answers with a PNG). */
const EVERYTHING = join(REPO, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

async function startServe(options: { history?: boolean; mcp?: boolean } = {}): Promise<Daemon> {
  const dir = tmp("agentcore-console-");
  const config = join(dir, "agentcore.jsonc");
  writeFileSync(
    config,
    JSON.stringify({
      ...(options.history === false ? {} : { history: join(dir, "history.jsonl") }),
      ...(options.mcp === true
        ? { mcpServers: { ev: { command: process.execPath, args: [EVERYTHING, "stdio"], timeout_ms: 20_000 } } }
        : {}),
      policy: { default: "allow", rules: [{ id: "ask-echo", action: "require_approval", tools: ["echo"], reason: "echo needs a person" }] },
    }),
  );
  const proc = Bun.spawn(
    [binaryPath(), "serve", "--port", "0", "--state-dir", join(dir, "state"), "--root", dir, "--config", config, "--access-log"],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", HOME: dir },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const err = collectStderr(proc);
  const text = await err.ready(/token file .+\n/);
  const url = /serve: listening on (\S+)\n/.exec(text)![1]!;
  const link = /serve: console (\S+) /.exec(text)![1]!;
  const token = readFileSync(/token file (.+)\n/.exec(text)![1]!, "utf8").trim();
  return { proc, url, port: Number(new URL(url).port), token, link, dir, stderr: err.text };
}

/** The console's Content-Security-Policy, as docs/console.md gives it. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** A small RGB PNG (a diagonal gradient), made here: the image of a task. */
function gradientPng(width: number, height: number): Buffer {
  const table = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = table[(c ^ b) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const at = y * (width * 3 + 1);
    for (let x = 0; x < width; x++) {
      rows[at + 1 + x * 3] = Math.round((255 * x) / width);
      rows[at + 2 + x * 3] = Math.round((255 * y) / height);
      rows[at + 3 + x * 3] = 160;
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** The script of the run: text, then an echo call (which waits for an approval), then the answer. */
const SCRIPT = [
  '{"content": "Checking the greeting first.", "chunk_size": 5, "tool_calls": [{"id": "call_echo", "name": "echo", "arguments": "{\\"message\\":\\"hello console\\"}"}], "arguments_chunk_size": 5, "usage": {"input_tokens": 21, "output_tokens": 7}}',
  '{"content": "The echo said: hello console.", "chunk_size": 4, "usage": {"input_tokens": 40, "output_tokens": 9}}',
].join("\n");

describe.skipIf(!haveChromium)("the console in a real browser", () => {
  let d: Daemon;
  let ctx: BrowserContext;
  let page: Page;
  const shots: string[] = [];
  const shot = async (name: string) => {
    const file = join(ARTIFACTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    shots.push(file);
  };
  const bearer = () => ({ authorization: `Bearer ${d.token}` });
  /** The page's text, checked never to hold the token. */
  const pageText = async () => {
    const html = await page.content();
    expect(html).not.toContain(d.token);
    return html;
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    d = await startServe({ mcp: true });
    ctx = await chromium.launchPersistentContext(tmp("agentcore-chromium-"), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1100, height: 900 },
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-quic",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(WAIT);
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    if (d?.proc.exitCode === null) {
      d.proc.kill("SIGTERM");
      await d.proc.exited;
    }
    for (const s of shots) console.log(`console screenshot: ${s}`);
  });

  test("sign in through the printed link; the code is then spent and leaves the address bar", async () => {
    expect(new URL(d.link).hash).toMatch(/^#code=[0-9a-f]{32}$/);
    const before = await page.goto(`${d.url}/`);
    expect(before!.headers()["content-security-policy"]).toContain("default-src 'self'");
    expect(before!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(before!.headers()["x-content-type-options"]).toBe("nosniff");
    expect(before!.headers()["referrer-policy"]).toBe("no-referrer");
    const html = await page.content();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect(html).not.toMatch(/\sstyle=/); // no inline style
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await shot("00-signed-out");

    await page.goto(d.link);
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    expect(page.url()).toBe(`${d.url}/#/runs`);
    const cookies = await ctx.cookies(d.url);
    const c = cookies.find((x) => x.name === `agentcore_console_${d.port}`)!;
    expect(c).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" });
    expect(c.value).not.toBe(d.token);
    // the code is good once
    const again = await fetch(`${d.url}/console/session`, {
      method: "POST",
      headers: { origin: d.url, "content-type": "application/json" },
      body: JSON.stringify({ code: new URL(d.link).hash.slice("#code=".length) }),
    });
    expect(again.status).toBe(401);
    expect((await again.json()).error.message).toContain("used already or expired");
  }, 60_000);

  test("start a scripted run, watch its text and tool call, approve it, see it complete", async () => {
    await page.goto(`${d.url}/#/start`);
    await page.getByLabel("Task").fill("Greet through echo");
    await page.getByLabel("Model turns (JSONL, one turn a line)").fill(SCRIPT);
    await page.getByLabel("Session id").fill("demo");
    await shot("01-start-run");
    await page.getByRole("button", { name: "Start" }).click();
    await page.waitForURL(/#\/runs\/run_/);
    const runId = decodeURIComponent(page.url().split("#/runs/")[1]!);
    // the text streamed so far, and the tool call with its arguments, waiting for a person
    await page.locator("#run-output", { hasText: "Checking the greeting first." }).waitFor();
    const call = page.locator('li.tool[data-call="call_echo"]');
    await call.getByText('{"message":"hello console"}').waitFor();
    await call.getByText("waiting for approval").waitFor();
    // the arguments came as streamed deltas (tool_call_arguments_delta), 5 characters at a time
    expect(Number(await call.getAttribute("data-deltas"))).toBe(Math.ceil('{"message":"hello console"}'.length / 5));
    expect(await page.locator("#run-output").getAttribute("aria-live")).toBe("polite");
    await page.locator("#run-approvals").getByText("echo needs a person").waitFor();
    await pageText();
    await shot("02-run-waiting");

    await page.getByRole("link", { name: "Approvals" }).click();
    const card = page.getByRole("article", { name: "Approval for echo" });
    await card.waitFor();
    await card.getByText("hello console").waitFor(); // the redacted preview keeps a plain string
    await card.getByLabel("Reason (optional)").fill("fine by me");
    await shot("03-approvals");
    await card.getByRole("button", { name: "Approve" }).click();
    await page.getByText("Nothing waits.").waitFor();

    await page.goto(`${d.url}/#/runs/${encodeURIComponent(runId)}`);
    await page.locator("#run-output", { hasText: "The echo said: hello console." }).waitFor();
    await call.getByText("completed").waitFor();
    await call.locator(".tool-result", { hasText: "hello console" }).waitFor();
    // its duration as the daemon's history recorded it (not the page's estimate)
    await call.locator(".dur", { hasText: /^[0-9.]+ ms$/ }).waitFor();
    const result = page.locator("#run-result");
    await result.getByText("text_response").waitFor();
    await result.getByText("completed").waitFor();
    expect(await result.textContent()).toContain("Input tokens61"); // 21 + 40
    await pageText();
    await shot("04-run-completed");

    await page.goto(`${d.url}/#/runs`);
    await page.getByRole("link", { name: runId }).waitFor();
    await shot("05-runs");
  }, 60_000);

  test("streamed arguments that go bad: the validator's verdict and its byte offset appear on the call", async () => {
    const res = await fetch(`${d.url}/v1/runs`, {
      method: "POST",
      headers: { ...bearer(), "content-type": "application/json" },
      body: JSON.stringify({
        task: "a broken call",
        detached: true,
        script: [
          { content: null, tool_calls: [{ id: "call_bad", name: "sleep", arguments: '{"ms": nope}' }], arguments_chunk_size: 3 },
          { content: "Sorry, my arguments were broken." },
        ],
      }),
    });
    expect(res.status).toBe(201);
    const runId = res.headers.get("x-run-id")!;
    await res.body?.cancel();
    await page.goto(`${d.url}/#/runs/${encodeURIComponent(runId)}`);
    const call = page.locator('li.tool[data-call="call_bad"]');
    await call.locator(".verdict", { hasText: "can no longer become valid JSON" }).waitFor();
    expect(await call.locator(".verdict").textContent()).toContain("(byte 8)"); // the o of nope (n could still begin null)
    await page.locator("#run-output", { hasText: "Sorry, my arguments were broken." }).waitFor();
    await shot("05b-run-bad-arguments");
  }, 60_000);

  test("a task's image is shown in the run view: a bounded <img> with a data: URL, named in its alt text; the CSP is the documented one", async () => {
    const png = gradientPng(160, 96);
    const sha = createHash("sha256").update(png).digest("hex");
    const violations: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const res = await fetch(`${d.url}/v1/runs`, {
      method: "POST",
      headers: { ...bearer(), "content-type": "application/json" },
      body: JSON.stringify({
        task: "What is in this picture?",
        detached: true,
        images: [{ data_url: `data:image/png;base64,${png.toString("base64")}` }],
        script: [{ content: "A gradient, from dark to light." }],
      }),
    });
    expect(res.status).toBe(201);
    const runId = res.headers.get("x-run-id")!;
    await res.body?.cancel();
    await page.goto(`${d.url}/#/runs/${encodeURIComponent(runId)}`);
    const nav = await page.reload(); // the page's own answer (a change of the fragment alone loads nothing)
    // the documented policy, exactly: img-src 'self' data: is the one source images may come from
    expect(nav!.headers()["content-security-policy"]).toBe(CSP);
    expect(readFileSync(join(REPO, "docs/console.md"), "utf8").replace(/\s+/g, " ")).toContain(`Content-Security-Policy: ${CSP}`);
    for (const asset of ["/console/app.js", "/console/console.css"])
      expect((await fetch(`${d.url}${asset}`)).headers.get("content-security-policy")).toBe(CSP);
    await page.locator("#run-output", { hasText: "A gradient, from dark to light." }).waitFor();
    const img = page.locator("#task-images img");
    await img.waitFor();
    const alt = `image 1 of the task, PNG, ${(png.length / 1000).toFixed(1)} kB, sha256 ${sha.slice(0, 12)}…`;
    expect(await img.getAttribute("alt")).toBe(alt);
    await page.getByRole("img", { name: alt }).waitFor();
    expect(await img.getAttribute("src")).toBe(`data:image/png;base64,${png.toString("base64")}`);
    expect(await img.getAttribute("data-sha256")).toBe(sha);
    // decoded (the CSP let the data: URL through), and drawn within the bounds the stylesheet sets
    const box = await img.evaluate((el: HTMLImageElement) => ({
      natural: el.naturalWidth,
      complete: el.complete,
      width: el.getBoundingClientRect().width,
      height: el.getBoundingClientRect().height,
    }));
    expect(box).toMatchObject({ natural: 160, complete: true });
    expect(box.width).toBeLessThanOrEqual(320);
    expect(box.height).toBeLessThanOrEqual(240);
    expect(violations).toEqual([]);
    await shot("05c-run-task-image");
  }, 60_000);

  test("a tool result's image (an MCP server's) is shown under that call's result", async () => {
    const res = await fetch(`${d.url}/v1/runs`, {
      method: "POST",
      headers: { ...bearer(), "content-type": "application/json" },
      body: JSON.stringify({
        task: "Show me the tiny image",
        detached: true,
        script: [
          { content: null, tool_calls: [{ id: "call_img", name: "ev__get-tiny-image", arguments: "{}" }] },
          { content: "That was the tiny image." },
        ],
      }),
    });
    expect(res.status).toBe(201);
    const runId = res.headers.get("x-run-id")!;
    await res.body?.cancel();
    await page.goto(`${d.url}/#/runs/${encodeURIComponent(runId)}`);
    await page.locator("#run-output", { hasText: "That was the tiny image." }).waitFor();
    const img = page.locator('li.tool[data-call="call_img"] .tool-images img');
    await img.waitFor();
    expect(await img.getAttribute("alt")).toMatch(/^image 1 of the ev__get-tiny-image result, PNG, [0-9.]+ (B|kB), sha256 [0-9a-f]{12}…$/);
    expect(await img.getAttribute("src")).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
    expect(await img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth > 0)).toBe(true);
    await shot("05e-run-tool-image");
  }, 60_000);

  test("start a run from the form with a tools choice and a policy preset: a tool left out is unknown to the run", async () => {
    await page.goto(`${d.url}/#/start`);
    const tools = page.getByLabel("Tools the run may use");
    // the daemon's tools, from GET /v1/tools
    await tools.locator('option[value="read_file"]').waitFor({ state: "attached" });
    expect(await tools.locator("option").allTextContents()).toEqual(expect.arrayContaining(["echo (read_only)", "read_file (read_only)"]));
    await page.getByLabel("Task").fill("Echo, though you may not");
    await page
      .getByLabel("Model turns (JSONL, one turn a line)")
      .fill(
        [
          '{"content": null, "tool_calls": [{"id": "call_left_out", "name": "echo", "arguments": "{\\"message\\":\\"hi\\"}"}]}',
          '{"content": "Echo is not mine to use."}',
        ].join("\n"),
      );
    await tools.selectOption(["read_file"]);
    await page.getByLabel("Policy preset").selectOption("ask");
    await shot("01b-start-run-tools-policy");
    await page.getByRole("button", { name: "Start" }).click();
    await page.waitForURL(/#\/runs\/run_/);
    const runId = decodeURIComponent(page.url().split("#/runs/")[1]!);
    await page.locator("#run-scope", { hasText: "Tools: read_file; policy: ask." }).waitFor();
    const call = page.locator('li.tool[data-call="call_left_out"]');
    await call.locator(".tool-result", { hasText: /unknown tool \\?"echo\\?"; available tools: read_file/ }).waitFor();
    await page.locator("#run-output", { hasText: "Echo is not mine to use." }).waitFor();
    // the daemon's view of the run, and nobody was asked (echo needs a person under the daemon's policy, but the run has no echo)
    const view = await (await fetch(`${d.url}/v1/runs/${runId}`, { headers: bearer() })).json();
    expect(view).toMatchObject({ tools: ["read_file"], policy: "ask", pending_approvals: 0 });
    await shot("05d-run-tools-policy");
  }, 60_000);

  test("fork the run's session and see the new branch in the tree", async () => {
    await page.goto(`${d.url}/#/sessions`);
    await page.getByRole("link", { name: "demo" }).click();
    const tree = page.getByRole("tree", { name: "Branches" });
    await tree.getByText("main").waitFor();
    const fork = page.getByRole("form", { name: "Fork" });
    await fork.getByLabel("New branch name (optional)").fill("try-again");
    await fork.getByRole("button", { name: "Fork" }).click();
    await tree.locator('[data-branch="try-again"]').waitFor();
    // under main, where it was forked from
    await tree.locator('[data-branch="main"] [data-branch="try-again"]').waitFor();
    await shot("06-session-forked");
    await page.goto(`${d.url}/#/sessions`);
    await page.getByRole("cell", { name: /try-again/ }).waitFor();
    await shot("07-sessions");
  }, 60_000);

  test("history: the approved echo call, filterable; tools: the schemas", async () => {
    await page.goto(`${d.url}/#/history`);
    await page.getByRole("cell", { name: /require_approval \(approved\)/ }).waitFor();
    await page.getByLabel("Status").selectOption("failed");
    await page.getByText("0 of 2 calls").waitFor(); // the echo call, and the MCP image call
    await page.getByLabel("Status").selectOption("");
    await page.getByLabel("Tool").fill("echo");
    await page.getByText("1 of 2 calls").waitFor();
    await shot("08-history");
    await page.goto(`${d.url}/#/tools`);
    const echo = page.getByRole("article", { name: "Tool echo" });
    await echo.getByText("Schema of echo").click();
    await echo.locator("pre").waitFor();
    await shot("09-tools");
    await pageText();
  }, 60_000);

  test("readable at 400 px wide, and usable from the keyboard", async () => {
    await page.setViewportSize({ width: 400, height: 800 });
    await page.goto(`${d.url}/#/runs`);
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shot("10-runs-400px");
    // a new view takes the focus (a screen reader reads its heading); Tab goes on into it, Enter follows a link
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Start a run");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Start a run" }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    // Shift+Tab from the top of the view goes back to the header: the navigation, then the skip link first of all
    await page.keyboard.press("Shift+Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Sign out");
    for (let i = 0; i < 6; i++) await page.keyboard.press("Shift+Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Runs");
    await page.keyboard.press("Shift+Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.setViewportSize({ width: 1100, height: 900 });
  }, 60_000);

  test("a forged POST from a page on another site is refused, and creates nothing", async () => {
    const before = (await (await fetch(`${d.url}/v1/runs`, { headers: bearer() })).json()).runs.length;
    // the attacker's page: another site (localhost is not 127.0.0.1's site), with a form and a fetch aimed at the daemon
    const target = `${d.url}/v1/runs`;
    const evil = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(
          `<!doctype html><body><form id="f" method="POST" action="${target}" enctype="text/plain"><input name='{"task":"forged","script":[{"content":"x"}],"x":"' value='"}'></form>
<script>
fetch(${JSON.stringify(target)}, {method: "POST", mode: "no-cors", credentials: "include", headers: {"content-type": "text/plain"}, body: JSON.stringify({task: "forged", script: [{content: "x"}]})})
  .finally(() => document.getElementById("f").submit());
</script></body>`,
          { headers: { "content-type": "text/html" } },
        ),
    });
    try {
      const evilPage = await ctx.newPage();
      await evilPage.goto(`http://localhost:${evil.port}/`);
      await evilPage.waitForURL(target);
      const text = (await evilPage.textContent("body")) ?? "";
      expect(text).toContain("FORBIDDEN");
      await evilPage.close();
    } finally {
      evil.stop(true);
    }
    const after = (await (await fetch(`${d.url}/v1/runs`, { headers: bearer() })).json()).runs.length;
    expect(after).toBe(before);
  }, 60_000);

  test("with the session cookie: no Origin, a foreign Origin, a missing or wrong CSRF token and a wrong Host are all refused", async () => {
    const c = (await ctx.cookies(d.url)).find((x) => x.name === `agentcore_console_${d.port}`)!;
    const cookie = `${c.name}=${c.value}`;
    const csrf = await page.evaluate(() => document.querySelector('meta[name="csrf-token"]')!.getAttribute("content")!);
    expect(csrf).toMatch(/^[0-9a-f]{64}$/);
    const body = JSON.stringify({ task: "forged", script: [{ content: "x" }] });
    const post = (headers: Record<string, string>) =>
      fetch(`${d.url}/v1/runs`, {
        method: "POST",
        headers: { cookie, "content-type": "application/json", accept: "application/json", ...headers },
        body,
      });
    const refused = async (headers: Record<string, string>, status: number, needle: string) => {
      const r = await post(headers);
      expect(r.status).toBe(status);
      expect((await r.json()).error.message).toContain(needle);
    };
    await refused({}, 403, "Origin");
    await refused({ "x-csrf-token": csrf }, 403, "Origin");
    await refused({ origin: "http://evil.example" }, 403, "allowlist");
    await refused({ origin: "http://evil.example", "x-csrf-token": csrf }, 403, "allowlist");
    await refused({ origin: `http://localhost:${d.port + 1}`, "x-csrf-token": csrf }, 403, "allowlist");
    await refused({ origin: d.url }, 403, "CSRF token");
    await refused({ origin: d.url, "x-csrf-token": "0".repeat(64) }, 403, "CSRF token");
    await refused({ origin: d.url, "x-csrf-token": csrf, "sec-fetch-site": "cross-site" }, 403, "same-origin");
    // a GET with a foreign Origin: refused too (the same guard as for the bearer token)
    const g = await fetch(`${d.url}/v1/runs`, { headers: { cookie, origin: "http://evil.example" } });
    expect(g.status).toBe(403);
    // a wrong Host (DNS rebinding), with the cookie and the token
    for (const extra of [`Cookie: ${cookie}\r\n`, `Authorization: Bearer ${d.token}\r\n`]) {
      const r = await rawRequest(d.port, `GET /v1/runs HTTP/1.1\r\nHost: evil.example:${d.port}\r\n${extra}Connection: close\r\n\r\n`);
      expect(r.status).toBe(403);
    }
    const signIn = await rawRequest(
      d.port,
      `GET / HTTP/1.1\r\nHost: attacker.test:${d.port}\r\nCookie: ${cookie}\r\nConnection: close\r\n\r\n`,
    );
    expect(signIn.status).toBe(403);
    // the right Origin and token get through (the same request the page makes)
    const ok = await post({ origin: d.url, "x-csrf-token": csrf });
    expect(ok.status).toBe(201);
    await ok.text();
    // a sign-in without the page's Origin, or with a bad code, gets nothing
    const noOrigin = await fetch(`${d.url}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code: "0".repeat(32) }),
    });
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.headers.get("set-cookie")).toBeNull();
    // the bearer API is as before: no cookie, no token is 401; the token alone is 200
    expect((await fetch(`${d.url}/v1/runs`)).status).toBe(401);
    expect((await fetch(`${d.url}/v1/runs`, { headers: bearer() })).status).toBe(200);
    // a fresh link needs the token, not the cookie
    expect(
      (await fetch(`${d.url}/console/codes`, { method: "POST", headers: { cookie, origin: d.url, "x-csrf-token": csrf } })).status,
    ).toBe(401);
    const fresh = await fetch(`${d.url}/console/codes`, { method: "POST", headers: bearer() });
    expect(fresh.status).toBe(201);
    expect((await fresh.json()).url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${d.port}/#code=[0-9a-f]{32}$`));
  }, 60_000);

  test("the token is in no page and nowhere in the server's output; signing out ends the session", async () => {
    await pageText();
    expect(d.stderr()).not.toContain(d.token);
    // the sign-in code is in the printed link and nowhere else: the access log has paths only, and the fragment never reaches the server
    const code = new URL(d.link).hash.slice("#code=".length);
    expect(d.stderr().split(code).length - 1).toBe(1);
    expect(d.stderr()).toContain("agentcore info access method=POST path=/console/session status=200");
    const c = (await ctx.cookies(d.url)).find((x) => x.name === `agentcore_console_${d.port}`)!;
    await page.goto(`${d.url}/#/runs`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    const r = await fetch(`${d.url}/v1/runs`, { headers: { cookie: `${c.name}=${c.value}` } });
    expect(r.status).toBe(401);
  }, 60_000);
});

describe("console sign-in codes and sessions", () => {
  test("a code is good once and only until it expires; a session ends at its expiry", () => {
    let now = 1_000_000;
    const auth = new ConsoleAuth({ codeTtlMs: 1000, sessionTtlMs: 5000, now: () => now });
    const code = auth.issueCode();
    expect(code).toMatch(/^[0-9a-f]{32}$/);
    const s = auth.exchange(code)!;
    expect(s.id).toMatch(/^[0-9a-f]{64}$/);
    expect(auth.exchange(code)).toBeNull();
    const late = auth.issueCode();
    now += 1000;
    expect(auth.exchange(late)).toBeNull();
    expect(auth.session(s.id)).not.toBeNull();
    expect(auth.csrfMatches(s, s.csrf)).toBe(true);
    expect(auth.csrfMatches(s, s.id)).toBe(false);
    expect(auth.csrfMatches(s, null)).toBe(false);
    now += 4000;
    expect(auth.session(s.id)).toBeNull();
    expect(auth.exchange("not a code")).toBeNull();
    expect(auth.session("../../etc")).toBeNull();
  });

  test("the embedded assets match their sources (node scripts/build-console.mjs --check)", () => {
    const r = Bun.spawnSync(["node", join(REPO, "scripts/build-console.mjs"), "--check"]);
    expect(r.stderr.toString()).toBe("");
    expect(r.exitCode).toBe(0);
  });
});

describe("the console's routes and GET /v1/history on a real daemon (no browser)", () => {
  const daemons: Daemon[] = [];
  afterAll(async () => {
    for (const d of daemons) {
      d.proc.kill("SIGTERM");
      await d.proc.exited;
    }
  });
  const json = { "content-type": "application/json" };

  test("sign-in: a missing, malformed or unknown code is refused with what is wrong, and sets no cookie", async () => {
    const d = await startServe();
    daemons.push(d);
    const post = (body: string, headers: Record<string, string> = { origin: d.url, ...json }) =>
      fetch(`${d.url}/console/session`, { method: "POST", headers, body });
    const cases: [string, number, string][] = [
      ["{}", 400, "/code"],
      ['{"code": 5}', 400, "/code"],
      ['{"code": "zz", "extra": 1}', 400, "extra"],
      ["not json", 400, "JSON"],
      [`{"code": "${"a".repeat(32)}"}`, 401, "unknown, used already or expired"],
      [`{"code": "${"a".repeat(300)}"}`, 400, "/code"],
    ];
    for (const [body, status, needle] of cases) {
      const r = await post(body);
      expect(r.status).toBe(status);
      expect(r.headers.get("set-cookie")).toBeNull();
      expect(JSON.stringify(await r.json())).toContain(needle);
    }
    // a foreign Origin: refused by the guard before anything is read
    const foreign = await post(JSON.stringify({ code: "a".repeat(32) }), { origin: "http://evil.example", ...json });
    expect(foreign.status).toBe(403);
    // the printed code still works after all that
    const code = new URL(d.link).hash.slice("#code=".length);
    const ok = await post(JSON.stringify({ code }));
    expect(ok.status).toBe(200);
    const cookie = ok.headers.get("set-cookie")!;
    expect(cookie).toMatch(new RegExp(`^agentcore_console_${d.port}=[0-9a-f]{64}; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200$`));
    const session = cookie.split(";")[0]!;
    // signing out needs the CSRF token too
    const out = await fetch(`${d.url}/console/logout`, { method: "POST", headers: { cookie: session, origin: d.url } });
    expect(out.status).toBe(403);
    expect((await fetch(`${d.url}/v1/runs`, { headers: { cookie: session } })).status).toBe(200);
    // the page it loads carries the session's CSRF token; without the cookie, none
    const page = await (await fetch(`${d.url}/`, { headers: { cookie: session } })).text();
    expect(page).toMatch(/<meta name="csrf-token" content="[0-9a-f]{64}">/);
    expect(await (await fetch(`${d.url}/`)).text()).toContain('<meta name="csrf-token" content="">');
  }, 60_000);

  test("GET /v1/history: filters, and a bad query parameter is a 400 naming it; a daemon without a log says so", async () => {
    const d = daemons[0]!;
    const bearer = { authorization: `Bearer ${d.token}` };
    writeFileSync(join(d.dir, "a.txt"), "hi");
    for (const path of ["a.txt", "missing.txt"]) {
      const r = await fetch(`${d.url}/v1/calls`, {
        method: "POST",
        headers: { ...bearer, ...json },
        body: JSON.stringify({ tool: "read_file", arguments: { path } }),
      });
      expect(r.status).toBe(200);
      await r.text();
    }
    const all = await (await fetch(`${d.url}/v1/history`, { headers: bearer })).json();
    expect(all.enabled).toBe(true);
    expect(all.records.map((r: { tool: string; success: boolean }) => [r.tool, r.success])).toEqual([
      ["read_file", true],
      ["read_file", false],
    ]);
    const failed = await (await fetch(`${d.url}/v1/history?failed=true&tool=read_file`, { headers: bearer })).json();
    expect(failed.records.map((r: { success: boolean }) => r.success)).toEqual([false]);
    const last = await (await fetch(`${d.url}/v1/history?limit=1`, { headers: bearer })).json();
    expect(last.records).toEqual([all.records[1]]);
    expect((await (await fetch(`${d.url}/v1/history?tool=echo`, { headers: bearer })).json()).records).toEqual([]);
    expect((await (await fetch(`${d.url}/v1/history?since=2999-01-01T00:00:00Z`, { headers: bearer })).json()).records).toEqual([]);
    for (const [q, name] of [
      ["failed=maybe", "failed"],
      ["since=yesterday", "since"],
      ["limit=0", "limit"],
      ["limit=10001", "limit"],
      ["limit=ten", "limit"],
    ]) {
      const r = await fetch(`${d.url}/v1/history?${q}`, { headers: bearer });
      expect(r.status).toBe(400);
      const env = await r.json();
      expect(env.error.code).toBe("INVALID_REQUEST");
      expect(env.error.details.query).toBe(name);
    }
    expect((await fetch(`${d.url}/v1/history`)).status).toBe(401);
    const bare = await startServe({ history: false });
    daemons.push(bare);
    const none = await fetch(`${bare.url}/v1/history`, { headers: { authorization: `Bearer ${bare.token}` } });
    expect(await none.json()).toEqual({ enabled: false, records: [] });
  }, 60_000);
});
