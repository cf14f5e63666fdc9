import { afterEach, describe, expect, it, vi } from 'vitest';
import { PublishedMarks } from '../../src/quicklogin/published-marks.js';
import { MARKS_PER_CALL } from '../../src/store/stores.js';

/** A store whose calls are recorded and answered when the test says so. */
function recordingStore() {
  const calls: { codes: string[]; now: number; answer: (err?: Error) => void }[] = [];
  const codes = {
    markPublished: (list: readonly string[], now: number) =>
      new Promise<void>((resolve, reject) => calls.push({ codes: [...list], now, answer: (err) => (err ? reject(err) : resolve()) })),
  };
  return { calls, codes };
}

const quiet = { warn: vi.fn() };
const clock = { now: () => 1_000 };

afterEach(() => {
  vi.useRealTimers();
  quiet.warn.mockClear();
});

describe('PublishedMarks', () => {
  it('writes the marks of one window in one call, when the window ends', async () => {
    vi.useFakeTimers();
    const { calls, codes } = recordingStore();
    const marks = new PublishedMarks({ codes, clock, log: quiet }, 500);
    marks.add('a');
    marks.add('b');
    await vi.advanceTimersByTimeAsync(499);
    expect(calls).toHaveLength(0);
    marks.add('c');
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((c) => c.codes)).toEqual([['a', 'b', 'c']]);
    expect(calls[0]!.now).toBe(1_000);
    calls[0]!.answer();
    // The next mark opens a new window.
    marks.add('d');
    await vi.advanceTimersByTimeAsync(500);
    expect(calls.map((c) => c.codes)).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('writes a full list at once, without waiting for the window', async () => {
    vi.useFakeTimers();
    const { calls, codes } = recordingStore();
    const marks = new PublishedMarks({ codes, clock, log: quiet }, 500);
    const many = Array.from({ length: MARKS_PER_CALL + 1 }, (_, i) => `c${i}`);
    for (const c of many) marks.add(c);
    expect(calls.map((c) => c.codes)).toEqual([many.slice(0, MARKS_PER_CALL)]);
    await vi.advanceTimersByTimeAsync(500);
    expect(calls.map((c) => c.codes)).toEqual([many.slice(0, MARKS_PER_CALL), [many[MARKS_PER_CALL]]]);
  });

  it('keeps at most 4 calls in flight; the marks behind them go when one ends, not a window later', async () => {
    vi.useFakeTimers();
    const { calls, codes } = recordingStore();
    const marks = new PublishedMarks({ codes, clock, log: quiet }, 500);
    for (let i = 0; i < MARKS_PER_CALL * 5; i++) marks.add(`c${i}`);
    expect(calls).toHaveLength(4);
    calls[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(5);
    expect(calls[4]!.codes[0]).toBe(`c${MARKS_PER_CALL * 4}`);
  });

  it('a refused call is logged and its marks are not retried (the outbox publishes those results again)', async () => {
    vi.useFakeTimers();
    const { calls, codes } = recordingStore();
    const marks = new PublishedMarks({ codes, clock, log: quiet }, 500);
    marks.add('a');
    await vi.advanceTimersByTimeAsync(500);
    calls[0]!.answer(new Error('the database is away'));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls).toHaveLength(1);
    expect(quiet.warn).toHaveBeenCalledOnce();
  });

  it('flush writes what waits and resolves once every call ended', async () => {
    const { calls, codes } = recordingStore();
    const marks = new PublishedMarks({ codes, clock, log: quiet }, 60_000);
    marks.add('a');
    let flushed = false;
    const flushing = marks.flush().then(() => (flushed = true));
    expect(calls.map((c) => c.codes)).toEqual([['a']]);
    await Promise.resolve();
    expect(flushed).toBe(false);
    calls[0]!.answer();
    await flushing;
    expect(flushed).toBe(true);
    await marks.flush();
    expect(calls).toHaveLength(1);
  });

  it('drops marks beyond its bound while the store does not answer, and says so once', async () => {
    const { calls, codes } = recordingStore();
    const marks = new PublishedMarks({ codes, clock, log: quiet }, 60_000);
    // 4 calls in flight hold 4 lists; then 4,096 wait; the rest are dropped.
    const held = MARKS_PER_CALL * 4 + 4_096;
    for (let i = 0; i < held + 10; i++) marks.add(`c${i}`);
    expect(calls).toHaveLength(4);
    expect(quiet.warn).toHaveBeenCalledOnce();
    const written: string[] = [];
    const flushing = marks.flush();
    while (written.length < held) {
      const open = calls.splice(0);
      if (open.length === 0) await new Promise((resolve) => setImmediate(resolve));
      for (const c of open) {
        written.push(...c.codes);
        c.answer();
      }
    }
    await flushing;
    expect(written).toEqual(Array.from({ length: held }, (_, i) => `c${i}`));
  });
});
