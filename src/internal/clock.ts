/** Monotonic milliseconds (never goes backwards, unaffected by wall-clock changes). */
export const now = (): number => performance.now();
