/**
 * Waiting on work that an `AbortSignal` can interrupt.
 *
 * @module
 */

/**
 * Settle with `p`, or reject with `onAbort()` as soon as `signal` aborts. The
 * work itself is not stopped (pass the signal to it for that); its later
 * outcome is ignored, and never becomes an unhandled rejection.
 */
export function raceSignal<T>(p: Promise<T> | T, signal: AbortSignal, onAbort: () => unknown): Promise<T> {
  const work = Promise.resolve(p);
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(onAbort());
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      work.catch(() => {});
      reject(onAbort());
    };
    signal.addEventListener("abort", abort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener("abort", abort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", abort);
        reject(e);
      },
    );
  });
}
