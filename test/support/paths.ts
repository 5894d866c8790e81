/** Paths to test data inside the repository (the suite reads nothing outside it). */
import { resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
/** Third-party data copied into the repository, each folder with its README and license. */
export const FIXTURES_DIR = resolve(REPO_ROOT, "test/fixtures");
export const JSON_TEST_SUITE_DIR = resolve(FIXTURES_DIR, "JSONTestSuite/test_parsing");
