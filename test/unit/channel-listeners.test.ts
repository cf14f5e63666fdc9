import { describe, expect, it, vi } from 'vitest';
import { ChannelListeners } from '../../src/redis/channel-listeners.js';

describe('ChannelListeners', () => {
  it('says which add is a channel’s first and which remove its last', () => {
    const listeners = new ChannelListeners({ error: vi.fn() });
    const a = vi.fn();
    const b = vi.fn();
    expect(listeners.add('c1', a)).toEqual({ first: true });
    expect(listeners.add('c1', b)).toEqual({ first: false });
    expect(listeners.add('c2', a)).toEqual({ first: true });
    expect(listeners.channels()).toEqual(['c1', 'c2']);
    expect(listeners.remove('c1', a)).toBe(false);
    expect(listeners.remove('c1', a)).toBe(false);
    expect(listeners.remove('c1', b)).toBe(true);
    expect(listeners.remove('c3', b)).toBe(false);
    expect(listeners.channels()).toEqual(['c2']);
    expect(listeners.add('c1', b)).toEqual({ first: true });
  });

  it('hands a message to its channel’s listeners only; one that throws is logged and the others still hear it', () => {
    const log = { error: vi.fn() };
    const listeners = new ChannelListeners(log);
    const heard: string[] = [];
    listeners.add('c1', () => {
      throw new Error('broken listener');
    });
    listeners.add('c1', (p) => heard.push(`c1:${p}`));
    listeners.add('c2', (p) => heard.push(`c2:${p}`));
    listeners.tell('c1', 'x');
    listeners.tell('c3', 'y');
    expect(heard).toEqual(['c1:x']);
    expect(log.error).toHaveBeenCalledOnce();
    expect(log.error.mock.calls[0]![0]).toMatchObject({ channel: 'c1' });
  });
});
