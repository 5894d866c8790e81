/** Types of scripts/build-lib.mjs (for the tests that import it). */
export declare function libOutputs(dist: string, src: string): string[];
export declare function cleanLib(dist: string, src: string): string[];
