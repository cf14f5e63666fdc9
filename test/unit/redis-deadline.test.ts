import { describe, expect, it } from 'vitest';
import { boundedCommands } from '../../src/redis/deadline.js';

/** A stand-in for a Redis client: one command that never answers, one that fails, one that answers, a plain member. */
const client = {
  name: 'commands',
  hangs: () => new Promise<string>(() => undefined),
  fails: async (): Promise<string> => {
    throw new Error('MOVED 6644 127.0.0.1:7002');
  },
  answers: async (value: string): Promise<string> => value,
  sync: (value: number): number => value + 1,
};

describe('boundedCommands (redis/deadline.ts)', () => {
  it('bounds a command that never answers, passes answers and other members through', async () => {
    const bounded = boundedCommands(client, 20);
    await expect(bounded.hangs()).rejects.toThrow(/^Command timed out/);
    await expect(bounded.answers('ok')).resolves.toBe('ok');
    expect(bounded.sync(1)).toBe(2);
    expect(bounded.name).toBe('commands');
  });

  it('shows each rejection to onRejected before the caller gets it (a Redis Cluster client then reads its slot map again)', async () => {
    const seen: string[] = [];
    const bounded = boundedCommands(client, 20, (err) => seen.push((err as Error).message));
    await expect(bounded.fails()).rejects.toThrow(/^MOVED 6644/);
    await expect(bounded.hangs()).rejects.toThrow(/^Command timed out/);
    await expect(bounded.answers('ok')).resolves.toBe('ok');
    expect(seen).toEqual(['MOVED 6644 127.0.0.1:7002', expect.stringMatching(/^Command timed out/)]);
  });
});
