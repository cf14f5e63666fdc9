import { describe, expect, it } from 'vitest';
import { ConnectionCursors } from '../../src/hub/connection-cursors.js';
import type { TabConnection } from '../../src/hub/connection.js';

// A tab's connections with their cursors (src/hub/connection-cursors.ts): a Map's behaviour, with the first
// connection kept in fields. The hub deletes connections while it iterates them (prune, a failed write).

const connection = (name: string): TabConnection =>
  ({ name, transport: 'websocket', open: true, send: () => true, close: () => undefined }) as unknown as TabConnection;
const nameOf = (c: TabConnection): string => (c as unknown as { name: string }).name;
/** Every connection as forEach visits it: name and cursor, oldest first. */
const visited = (cursors: ConnectionCursors): [string, number | undefined][] => {
  const out: [string, number | undefined][] = [];
  cursors.forEach((cursor, c) => out.push([nameOf(c), cursor]));
  return out;
};
const names = (cursors: ConnectionCursors): string[] => visited(cursors).map(([name]) => name);

describe('ConnectionCursors', () => {
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(connection) as [TabConnection, TabConnection, TabConnection, TabConnection];

  it('keeps connections oldest first, each with its cursor, as a Map does', () => {
    const cursors = new ConnectionCursors();
    expect(cursors.size).toBe(0);
    expect(cursors.oldest()).toBeUndefined();
    cursors.set(a, undefined).set(b, 5).set(c, 7);
    cursors.set(a, 3);
    expect(cursors.size).toBe(3);
    expect(visited(cursors)).toEqual([
      ['a', 3],
      ['b', 5],
      ['c', 7],
    ]);
    expect(cursors.some((each) => each === c)).toBe(true);
    expect(cursors.some((each) => each === d)).toBe(false);
    expect(cursors.has(b)).toBe(true);
    expect(cursors.has(d)).toBe(false);
    expect(cursors.oldest()).toBe(a);
  });

  it('after the first leaves, the next oldest is the oldest and a newcomer comes last', () => {
    const cursors = new ConnectionCursors();
    cursors.set(a, 1).set(b, 2).set(c, 3);
    expect(cursors.delete(a)).toBe(true);
    expect(cursors.delete(a)).toBe(false);
    expect(cursors.oldest()).toBe(b);
    cursors.set(d, 4);
    expect(names(cursors)).toEqual(['b', 'c', 'd']);
    expect(cursors.size).toBe(3);
    expect(cursors.delete(b) && cursors.delete(c) && cursors.delete(d)).toBe(true);
    expect(cursors.size).toBe(0);
    cursors.set(c, undefined);
    expect(names(cursors)).toEqual(['c']);
    expect(cursors.oldest()).toBe(c);
  });

  it('visits every connection left when connections are deleted while it visits them', () => {
    const cursors = new ConnectionCursors();
    cursors.set(a, 1).set(b, 2).set(c, 3).set(d, 4);
    const seen: string[] = [];
    cursors.forEach((_, each) => {
      seen.push(nameOf(each));
      // The first deletes itself and the third: b and d are still visited, c is not.
      if (each === a) {
        cursors.delete(a);
        cursors.delete(c);
      }
    });
    expect(seen).toEqual(['a', 'b', 'd']);
    expect(names(cursors)).toEqual(['b', 'd']);
  });

  it('clear empties it', () => {
    const cursors = new ConnectionCursors();
    cursors.set(a, 1).set(b, 2);
    cursors.clear();
    expect(cursors.size).toBe(0);
    expect(visited(cursors)).toEqual([]);
    expect(cursors.has(a)).toBe(false);
  });
});
