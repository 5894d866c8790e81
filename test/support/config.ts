/**
 * Config files for tests: `configFile(text)` writes `agentcore.jsonc` in a
 * fresh folder (removed at exit, see tmp.ts) and gives its path;
 * `configError(path)` is the whole message loadConfig throws for it (a
 * ConfigError, or the test fails).
 */
import { expect } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError, loadConfig } from "../../src/host/settings.ts";
import { tmp } from "./tmp.ts";

export function configFile(content: string | Uint8Array, prefix = "agentcore-config-"): string {
  const f = path.join(tmp(prefix), "agentcore.jsonc");
  fs.writeFileSync(f, content);
  return f;
}

export function configError(f: string): string {
  try {
    loadConfig(f);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("loadConfig accepted the file");
}
