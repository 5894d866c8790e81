/** Paths to data shared by the whole workspace (outside the repository). */
import { resolve } from "node:path";

/** The `shared/` folder next to the repository root. */
export const SHARED_DIR = resolve(import.meta.dir, "../../../shared");
export const JSON_TEST_SUITE_DIR = resolve(SHARED_DIR, "conformance/JSONTestSuite/test_parsing");
export const REPO_ROOT = resolve(import.meta.dir, "../..");
