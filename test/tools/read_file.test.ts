/**
 * read_file against a real filesystem: happy paths and escape attempts. Every
 * test runs in its own fs.mkdtempSync root, next to an "outside" directory
 * holding content that must never come back.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import { createReadFileTool } from "../../src/tools/builtin/read_file.ts";
import { rootedTestHooks } from "../../src/tools/fs/rooted.ts";
import { ToolRegistry } from "../../src/tools/registry.ts";
import { runCall } from "../../src/runtime/dispatch.ts";
import { serializeEnvelope } from "../../src/runtime/envelope_io.ts";
import { createLogger } from "../../src/core/logger.ts";
import type { Envelope } from "../../src/core/envelope.ts";
import { tmp } from "../support/tmp.ts";

const OUTSIDE = "OUTSIDE-THE-ROOT-must-never-be-read";
let base: string;
let root: string;
let outside: string;

function setup(opts: { maxFileBytes?: number; rootPath?: string } = {}) {
  const registry = new ToolRegistry();
  registry.register(createReadFileTool({ root: opts.rootPath ?? root, maxFileBytes: opts.maxFileBytes }));
  const env = { registry, logger: createLogger({ level: "error", sink: () => {} }), defaultTimeoutMs: 1000 };
  return (args: Record<string, unknown>): Envelope => {
    const out = runCall(env, { id: "r1", tool: "read_file", arguments: args, shape: "agentcore" }, undefined, performance.now());
    if (out instanceof Promise) throw new Error("read_file must be synchronous");
    const line = serializeEnvelope(out);
    expect(line).not.toContain(OUTSIDE);
    return out;
  };
}

function code(env: Envelope): string | null {
  return env.error?.code ?? null;
}

/** Open descriptors of this process that point into the test's temp dir. */
function fdsIntoBase(): string[] {
  const out: string[] = [];
  for (const fd of fs.readdirSync("/proc/self/fd")) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(base)) out.push(target);
    } catch {
      // closed while we looked (the readdir's own descriptor, for one)
    }
  }
  return out;
}

beforeEach(() => {
  base = tmp("agentcore-rf-");
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  fs.mkdirSync(root);
  fs.mkdirSync(path.join(outside, "sub"), { recursive: true });
  fs.writeFileSync(path.join(outside, "secret.txt"), OUTSIDE);
  fs.writeFileSync(path.join(outside, "sub", "f.txt"), OUTSIDE);
  fs.mkdirSync(path.join(root, "a", "b"), { recursive: true });
  fs.writeFileSync(path.join(root, "a", "b", "c.txt"), "héllo wörld 🌍 ✓\n");
  fs.writeFileSync(path.join(root, "top.txt"), "top");
});

afterEach(() => {
  rootedTestHooks.beforeOpen = null;
  rootedTestHooks.beforeRead = null;
  rootedTestHooks.forcePortableVerify = false;
  fs.rmSync(base, { recursive: true, force: true });
});

describe("read_file happy paths", () => {
  test("nested relative path, multibyte UTF-8", () => {
    const env = setup()({ path: "a/b/c.txt" });
    const content = "héllo wörld 🌍 ✓\n";
    expect(env).toMatchObject({ id: "r1", success: true, tool: "read_file", error: null });
    expect(env.result).toEqual({ path: "a/b/c.txt", bytes: Buffer.byteLength(content), content });
    expect(serializeEnvelope({ ...env, duration_ms: 0 })).toBe(
      `{"id":"r1","success":true,"tool":"read_file","result":{"path":"a/b/c.txt","bytes":${Buffer.byteLength(content)},"content":${JSON.stringify(content)}},"error":null,"duration_ms":0}`,
    );
  });

  test("'.' and empty components are ignored; result echoes the path as given", () => {
    const read = setup();
    for (const p of ["./a/b/c.txt", "a//b/./c.txt", "a/b/c.txt"]) {
      const env = read({ path: p });
      expect(env.success).toBe(true);
      expect((env.result as { path: string }).path).toBe(p);
    }
  });

  test("empty file and a BOM are preserved", () => {
    fs.writeFileSync(path.join(root, "empty"), "");
    fs.writeFileSync(path.join(root, "bom"), "\uFEFFx");
    const read = setup();
    expect(read({ path: "empty" }).result).toEqual({ path: "empty", bytes: 0, content: "" });
    expect(read({ path: "bom" }).result).toEqual({ path: "bom", bytes: 4, content: "\uFEFFx" });
  });

  test("root given through a symlink is canonicalised once; reads still verify", () => {
    const link = path.join(base, "root-link");
    fs.symlinkSync(root, link);
    const env = setup({ rootPath: link })({ path: "top.txt" });
    expect(env.success).toBe(true);
    expect((env.result as { content: string }).content).toBe("top");
  });

  test("root is captured at creation: a later chdir changes nothing", () => {
    const prev = process.cwd();
    process.chdir(root);
    try {
      const read = setup({ rootPath: "." });
      process.chdir(outside);
      fs.writeFileSync(path.join(outside, "top.txt"), OUTSIDE);
      expect((read({ path: "top.txt" }).result as { content: string }).content).toBe("top");
    } finally {
      process.chdir(prev);
    }
  });
});

describe("read_file path syntax", () => {
  test.each([
    ["../x", "PATH_TRAVERSAL"],
    ["..", "PATH_TRAVERSAL"],
    ["a/../../x", "PATH_TRAVERSAL"],
    ["a/..", "PATH_TRAVERSAL"],
    ["a/../top.txt", "PATH_TRAVERSAL"],
    ["a/b/../../../outside/secret.txt", "PATH_TRAVERSAL"],
    ["..\\outside\\secret.txt", "PATH_TRAVERSAL"],
    ["a\\..\\..\\x", "PATH_TRAVERSAL"],
    ["/etc/passwd", "PATH_ABSOLUTE"],
    ["/proc/self/environ", "PATH_ABSOLUTE"],
    ["//server/share", "PATH_ABSOLUTE"],
    ["\\\\server\\share\\x", "PATH_ABSOLUTE"],
    ["\\windows", "PATH_ABSOLUTE"],
    ["C:\\Windows\\win.ini", "PATH_ABSOLUTE"],
    ["c:/x", "PATH_ABSOLUTE"],
    ["C:x", "PATH_ABSOLUTE"],
    ["", "PATH_INVALID"],
    ["top.txt\u0000.png", "PATH_INVALID"],
    ["\u0000", "PATH_INVALID"],
    ["bad\uD800name", "PATH_INVALID"],
    ["bad\uDC00", "PATH_INVALID"],
    ["a\\b", "PATH_INVALID"],
    ["x".repeat(5000), "PATH_INVALID"],
  ])("%j → %s", (p, expected) => {
    const env = setup()({ path: p });
    expect(code(env)).toBe(expected);
    expect(env.result).toBeNull();
    // The refused path is never echoed back.
    if (p.length > 3) expect(env.error!.message).not.toContain(p);
  });

  test("'...' and names starting with '..' are ordinary names", () => {
    fs.writeFileSync(path.join(root, "..."), "dots");
    fs.writeFileSync(path.join(root, "..x"), "dotx");
    const read = setup();
    expect((read({ path: "..." }).result as { content: string }).content).toBe("dots");
    expect((read({ path: "..x" }).result as { content: string }).content).toBe("dotx");
  });

  test("a trailing '/' names a directory: NOT_A_FILE even for a file", () => {
    expect(code(setup()({ path: "top.txt/" }))).toBe("NOT_A_FILE");
    expect(code(setup()({ path: "a/b/" }))).toBe("NOT_A_FILE");
  });

  test("a trailing '/.' names a directory too: NOT_A_FILE for a file, never its content", () => {
    for (const p of ["top.txt/.", "a/b/c.txt/.", "./top.txt/./.", "top.txt//."]) {
      const env = setup()({ path: p });
      expect(code(env)).toBe("NOT_A_FILE");
      expect(env.result).toBeNull();
    }
    // a "." elsewhere is still ignored
    expect(code(setup()({ path: "./a/./b/c.txt" }))).toBeNull();
  });

  test("'.' names the root: NOT_A_FILE", () => {
    expect(code(setup()({ path: "." }))).toBe("NOT_A_FILE");
    expect(code(setup()({ path: "./" }))).toBe("NOT_A_FILE");
  });
});

describe("read_file filesystem refusals", () => {
  test("missing file and missing directory → NOT_FOUND", () => {
    const read = setup();
    expect(code(read({ path: "nope.txt" }))).toBe("NOT_FOUND");
    expect(code(read({ path: "no/such/file" }))).toBe("NOT_FOUND");
    expect(code(read({ path: "top.txt/x" }))).toBe("NOT_FOUND");
  });

  test("relative proc/self/environ: NOT_FOUND, and via a symlink to /proc: PATH_SYMLINK", () => {
    expect(code(setup()({ path: "proc/self/environ" }))).toBe("NOT_FOUND");
    fs.symlinkSync("/proc", path.join(root, "proc"));
    const env = setup()({ path: "proc/self/environ" });
    expect(code(env)).toBe("PATH_SYMLINK");
    expect(env.error!.details).toEqual({ component: 0 });
  });

  test("symlink as the file (outside, inside, dangling) → PATH_SYMLINK", () => {
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(root, "link.txt"));
    fs.symlinkSync("top.txt", path.join(root, "inner-link.txt"));
    fs.symlinkSync(path.join(base, "does-not-exist"), path.join(root, "dangling"));
    const read = setup();
    for (const p of ["link.txt", "inner-link.txt", "dangling"]) expect(code(read({ path: p }))).toBe("PATH_SYMLINK");
  });

  test("symlink as a directory component (outside and inside) → PATH_SYMLINK", () => {
    fs.symlinkSync(outside, path.join(root, "out"));
    fs.symlinkSync(path.join(root, "a"), path.join(root, "a-link"));
    const read = setup();
    const env = read({ path: "out/secret.txt" });
    expect(code(env)).toBe("PATH_SYMLINK");
    expect(code(read({ path: "a-link/b/c.txt" }))).toBe("PATH_SYMLINK");
    fs.symlinkSync(outside, path.join(root, "a", "deep"));
    expect(read({ path: "a/deep/sub/f.txt" }).error).toEqual({
      code: "PATH_SYMLINK",
      message: "path has a symlink component",
      details: { component: 1 },
    });
  });

  test("directory → NOT_A_FILE", () => {
    const env = setup()({ path: "a/b" });
    expect(code(env)).toBe("NOT_A_FILE");
    expect(env.error!.details).toEqual({ kind: "directory" });
  });

  test("FIFO → NOT_A_FILE (never blocks: a blocking open would hang this test)", () => {
    execFileSync("mkfifo", [path.join(root, "pipe")]);
    const env = setup()({ path: "pipe" });
    expect(code(env)).toBe("NOT_A_FILE");
    expect(env.error!.details).toEqual({ kind: "fifo" });
  });

  test("unix socket → NOT_A_FILE", async () => {
    const sock = path.join(root, "sock");
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      const env = setup()({ path: "sock" });
      expect(code(env)).toBe("NOT_A_FILE");
      expect(env.error!.details).toEqual({ kind: "socket" });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test("character device → NOT_A_FILE", () => {
    // mknod needs CAP_MKNOD (root, and a filesystem that allows device nodes).
    // Where the OS forbids it we can't make a device inside the root, so we
    // check the only other way one can appear there: a symlink to /dev/null,
    // which must be refused as a symlink before anything is opened.
    let made = false;
    try {
      execFileSync("mknod", [path.join(root, "null"), "c", "1", "3"], { stdio: "ignore" });
      made = true;
    } catch {
      made = false;
    }
    const read = setup();
    if (process.getuid?.() === 0 && process.platform === "linux") console.error(`mknod in temp dir: ${made ? "ok" : "refused by the OS"}`);
    if (made) {
      const env = read({ path: "null" });
      expect(code(env)).toBe("NOT_A_FILE");
      expect(env.error!.details).toEqual({ kind: "character_device" });
    }
    fs.symlinkSync("/dev/null", path.join(root, "devnull"));
    fs.symlinkSync("/dev/zero", path.join(root, "devzero"));
    expect(code(read({ path: "devnull" }))).toBe("PATH_SYMLINK");
    expect(code(read({ path: "devzero" }))).toBe("PATH_SYMLINK");
  });

  test("non-UTF-8 content → FILE_NOT_UTF8", () => {
    const samples: Record<string, number[]> = {
      latin1: [0x63, 0x61, 0x66, 0xe9],
      ff: [0xff, 0xfe, 0x41],
      overlong: [0xc0, 0xaf],
      surrogate: [0xed, 0xa0, 0x80],
      truncated: [0x41, 0xe2, 0x82],
      above_max: [0xf4, 0x90, 0x80, 0x80],
    };
    const read = setup();
    for (const [name, bytes] of Object.entries(samples)) {
      fs.writeFileSync(path.join(root, name), Uint8Array.from(bytes));
      const env = read({ path: name });
      expect(code(env)).toBe("FILE_NOT_UTF8");
    }
  });

  test("configured limit: exactly the limit OK, +1 refused", () => {
    fs.writeFileSync(path.join(root, "ten"), "0123456789");
    fs.writeFileSync(path.join(root, "eleven"), "0123456789A");
    const read = setup({ maxFileBytes: 10 });
    expect(read({ path: "ten" }).result).toEqual({ path: "ten", bytes: 10, content: "0123456789" });
    const env = read({ path: "eleven" });
    expect(env.error).toEqual({ code: "FILE_TOO_LARGE", message: "file is larger than the limit", details: { size: 11, limit: 10 } });
    // A larger max_bytes does not raise the configured limit.
    expect(code(read({ path: "eleven", max_bytes: 1000 }))).toBe("FILE_TOO_LARGE");
  });

  test("request max_bytes: exactly max_bytes OK, +1 refused", () => {
    fs.writeFileSync(path.join(root, "five"), "12345");
    fs.writeFileSync(path.join(root, "six"), "123456");
    const read = setup();
    expect((read({ path: "five", max_bytes: 5 }).result as { bytes: number }).bytes).toBe(5);
    expect(read({ path: "six", max_bytes: 5 }).error?.details).toEqual({ size: 6, limit: 5 });
    expect(read({ path: "six", max_bytes: 6 }).success).toBe(true);
  });

  test("default configured limit is 1 MiB: 1 MiB OK, 1 MiB + 1 refused", () => {
    fs.writeFileSync(path.join(root, "mib"), Buffer.alloc(1024 * 1024, 0x61));
    fs.writeFileSync(path.join(root, "mib1"), Buffer.alloc(1024 * 1024 + 1, 0x61));
    const read = setup();
    expect((read({ path: "mib" }).result as { bytes: number }).bytes).toBe(1024 * 1024);
    expect(code(read({ path: "mib1" }))).toBe("FILE_TOO_LARGE");
  });

  test("a file growing past the limit during the read is refused (bounded read)", () => {
    fs.writeFileSync(path.join(root, "grow"), "1234");
    rootedTestHooks.beforeRead = (abs) => fs.appendFileSync(abs, "5678901234567890");
    const env = setup({ maxFileBytes: 10 })({ path: "grow" });
    expect(env.error?.code).toBe("FILE_TOO_LARGE");
    expect(env.error?.details).toEqual({ limit: 10 });
  });

  test("a file growing but staying within the limit is read whole", () => {
    fs.writeFileSync(path.join(root, "grow"), "1234");
    rootedTestHooks.beforeRead = (abs) => fs.appendFileSync(abs, "5678");
    const env = setup({ maxFileBytes: 10 })({ path: "grow" });
    expect(env.result).toEqual({ path: "grow", bytes: 8, content: "12345678" });
  });

  test("over-long component → IO_ERROR with errno", () => {
    const env = setup()({ path: "x".repeat(300) });
    expect(env.error?.code).toBe("IO_ERROR");
    expect(env.error?.details).toMatchObject({ errno: "ENAMETOOLONG" });
  });

  test.each([[0], [-1], [1.5], ["10"], [null], [true]])("max_bytes %j → INVALID_ARGUMENTS", (mb) => {
    const env = setup()({ path: "top.txt", max_bytes: mb });
    expect(code(env)).toBe("INVALID_ARGUMENTS");
    expect((env.error!.details.errors as { path: string }[])[0].path).toBe("/max_bytes");
  });

  test("bad argument objects → INVALID_ARGUMENTS", () => {
    const read = setup();
    expect(code(read({}))).toBe("INVALID_ARGUMENTS");
    expect(code(read({ path: 7 }))).toBe("INVALID_ARGUMENTS");
    const extra = read({ path: "top.txt", follow_symlinks: true });
    expect(extra.error?.details).toEqual({
      errors: [{ path: "/follow_symlinks", keyword: "additionalProperties", message: "unexpected property" }],
      truncated: false,
    });
  });

  test("no file descriptor leaks across successes and refusals", () => {
    execFileSync("mkfifo", [path.join(root, "pipe")]);
    fs.writeFileSync(path.join(root, "bin"), Uint8Array.from([0xff]));
    fs.writeFileSync(path.join(root, "big"), "x".repeat(100));
    const read = setup({ maxFileBytes: 50 });
    expect(fdsIntoBase()).toEqual([]);
    for (let i = 0; i < 50; i++) {
      for (const p of ["top.txt", "bin", "big", "pipe", "a", "nope", "../x"]) read({ path: p });
    }
    rootedTestHooks.beforeOpen = (abs) => {
      fs.rmSync(abs);
      execFileSync("mkfifo", [abs]);
    };
    expect(code(read({ path: "top.txt" }))).toBe("NOT_A_FILE"); // opened, then refused
    expect(fdsIntoBase()).toEqual([]);
  });
});

describe("read_file races (deterministic via rootedTestHooks)", () => {
  for (const portable of [false, true]) {
    const mode = portable ? "portable dev/ino check" : "/proc/self/fd check";

    test(`directory swapped for a symlink to outside between checks and open → PATH_SYMLINK (${mode})`, () => {
      rootedTestHooks.forcePortableVerify = portable;
      fs.mkdirSync(path.join(root, "sub"));
      fs.writeFileSync(path.join(root, "sub", "f.txt"), "inside");
      let fired = false;
      rootedTestHooks.beforeOpen = () => {
        fired = true;
        fs.renameSync(path.join(root, "sub"), path.join(root, "sub-orig"));
        fs.symlinkSync(path.join(outside, "sub"), path.join(root, "sub"));
      };
      const env = setup()({ path: "sub/f.txt" });
      expect(fired).toBe(true);
      expect(code(env)).toBe("PATH_SYMLINK");
      // Refused by the post-open verification, not by an earlier check.
      expect(env.error!.message).toContain("replaced during the call");
      expect(JSON.stringify(env)).not.toContain(OUTSIDE);
    });

    test(`final file swapped for a symlink → PATH_SYMLINK (${mode})`, () => {
      rootedTestHooks.forcePortableVerify = portable;
      rootedTestHooks.beforeOpen = (abs) => {
        fs.rmSync(abs);
        fs.symlinkSync(path.join(outside, "secret.txt"), abs);
      };
      const env = setup()({ path: "a/b/c.txt" });
      expect(code(env)).toBe("PATH_SYMLINK");
    });
  }

  test("file swapped for a FIFO just before open → NOT_A_FILE without blocking", () => {
    rootedTestHooks.beforeOpen = (abs) => {
      fs.rmSync(abs);
      execFileSync("mkfifo", [abs]);
    };
    // O_NONBLOCK keeps the open from waiting for a writer; without it this test would hang
    const env = setup()({ path: "top.txt" });
    expect(code(env)).toBe("NOT_A_FILE");
    expect(env.error!.details).toEqual({ kind: "fifo" });
  });

  test("file swapped for a character device just before open → NOT_A_FILE (when mknod is allowed)", () => {
    let made = true;
    rootedTestHooks.beforeOpen = (abs) => {
      fs.rmSync(abs);
      try {
        execFileSync("mknod", [abs, "c", "1", "5"], { stdio: "ignore" }); // /dev/zero: would never hit EOF
      } catch {
        made = false;
        fs.writeFileSync(abs, "top");
      }
    };
    const env = setup()({ path: "top.txt" });
    if (made) {
      expect(code(env)).toBe("NOT_A_FILE");
      expect(env.error!.details).toEqual({ kind: "character_device" });
    } else {
      expect(env.success).toBe(true); // OS forbids device nodes here; nothing to test
    }
  });

  test("file swapped for a directory just before open → NOT_A_FILE", () => {
    rootedTestHooks.beforeOpen = (abs) => {
      fs.rmSync(abs);
      fs.mkdirSync(abs);
    };
    expect(code(setup()({ path: "top.txt" }))).toBe("NOT_A_FILE");
  });

  test("file removed just before open → NOT_FOUND", () => {
    rootedTestHooks.beforeOpen = (abs) => fs.rmSync(abs);
    expect(code(setup()({ path: "top.txt" }))).toBe("NOT_FOUND");
  });
});
