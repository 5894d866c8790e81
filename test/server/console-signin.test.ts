/**
 * Console sign-in and `Sec-Fetch-Site`: a browser that says the sign-in
 * comes from another site (`cross-site`, `same-site`, `none`) is refused
 * with the very answer every other state-changing console request gets
 * (403 `FORBIDDEN`, `details.header: "sec-fetch-site"`), and its code is not
 * spent; `same-origin` and no header at all sign in as before. Before the
 * fix, sign-in checked the Origin only. Real daemon, real HTTP on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ConsoleAuth } from "../../src/server/console/auth.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let d: TestDaemon;
let auth: ConsoleAuth;
beforeAll(async () => {
  d = await startTestDaemon();
  auth = d.running.daemon.console!;
});
afterAll(async () => {
  await d.stop();
});

const origin = () => `http://127.0.0.1:${d.port}`;

/** `POST /console/session` as the page sends it, plus `extra` headers. */
function signIn(code: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${d.url}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: origin(), ...extra },
    body: JSON.stringify({ code }),
  });
}

/** A signed-in browser's cookie and CSRF token. */
async function session(): Promise<{ cookie: string; csrf: string }> {
  const s = auth.exchange(auth.issueCode())!;
  return { cookie: `agentcore_console_${d.port}=${s.id}`, csrf: s.csrf };
}

describe("console sign-in checks Sec-Fetch-Site like every state-changing request", () => {
  test("cross-site, same-site and none are refused with the same status and body as logout and POST /v1/runs", async () => {
    const { cookie, csrf } = await session();
    const cross = { "sec-fetch-site": "cross-site" };
    const logout = await fetch(`${d.url}/console/logout`, {
      method: "POST",
      headers: { cookie, origin: origin(), "x-csrf-token": csrf, ...cross },
    });
    const run = await fetch(`${d.url}/v1/runs`, {
      method: "POST",
      headers: { cookie, origin: origin(), "x-csrf-token": csrf, "content-type": "application/json", ...cross },
      body: JSON.stringify({ task: "hi" }),
    });
    const reference = { status: logout.status, body: await logout.text() };
    expect(reference.status).toBe(403);
    expect(JSON.parse(reference.body).error).toMatchObject({ code: "FORBIDDEN", details: { header: "sec-fetch-site" } });
    expect({ status: run.status, body: await run.text() }).toEqual(reference);

    for (const site of ["cross-site", "same-site", "none"]) {
      const code = auth.issueCode();
      const r = await signIn(code, { "sec-fetch-site": site });
      expect({ site, status: r.status, body: await r.text() }).toEqual({ site, ...reference });
      expect(r.headers.get("set-cookie")).toBeNull();
      // the refusal spent nothing: the same code still signs in from the page itself
      const again = await signIn(code, { "sec-fetch-site": "same-origin" });
      expect({ site, status: again.status }).toEqual({ site, status: 200 });
      await again.text();
    }
  });

  test("same-origin and no Sec-Fetch-Site sign in as before (a cookie, signed_in: true)", async () => {
    for (const extra of [{ "sec-fetch-site": "same-origin" }, {}] as Record<string, string>[]) {
      const r = await signIn(auth.issueCode(), extra);
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({ signed_in: true });
      expect(r.headers.get("set-cookie")).toStartWith(`agentcore_console_${d.port}=`);
    }
  });
});
