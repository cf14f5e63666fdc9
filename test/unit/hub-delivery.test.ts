import { describe, expect, it } from 'vitest';
import { MAX_CONNECTIONS_PER_TAB } from '../../src/hub/hub.js';
import { A, B, FakeConnection, makeHub, tick } from '../helpers/hub-fixtures.js';

describe('Hub', () => {
  it('delivers what the broker announces to the attached connection, in order, with ids', async () => {
    const { hub } = makeHub();
    const conn = new FakeConnection();
    await hub.attach(A, conn);
    await hub.deliver(A, { type: 'One', data: 1 });
    await hub.deliver(A, { type: 'Two', data: 2 });
    await tick();
    expect(conn.frames.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'One', data: 1 },
      { type: 'Two', data: 2 },
    ]);
    expect(conn.frames[1]!.id).toBe(conn.frames[0]!.id + 1);
  });

  it('a tab forgotten and registered again numbers its events above every earlier id', async () => {
    const { hub, clock } = makeHub();
    const first = new FakeConnection();
    await hub.attach(A, first);
    for (let i = 0; i < 5; i++) await hub.deliver(A, { type: 'E', data: i });
    await tick();
    hub.detach(A, first);
    clock.advance(60_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(false);
    const second = new FakeConnection();
    await hub.attach(A, second);
    await hub.deliver(A, { type: 'E', data: 'after' });
    await tick();
    expect(second.frames[0]!.id).toBeGreaterThan(first.frames.at(-1)!.id);
  });

  it('buffers while detached and flushes once on the next attach', async () => {
    const { hub } = makeHub();
    const first = new FakeConnection();
    await hub.attach(A, first);
    hub.detach(A, first);
    await hub.deliver(A, { type: 'Missed', data: null });
    await tick();
    const second = new FakeConnection();
    await hub.attach(A, second);
    expect(second.frames.map((f) => f.type)).toEqual(['Missed']);
    const third = new FakeConnection();
    await hub.attach(A, third);
    expect(third.frames).toEqual([]);
    expect(second.closed).toBeUndefined();
  });

  it('fans out to every live connection of a tab in its session (a duplicated browser tab), kicking nobody out', async () => {
    const { hub } = makeHub();
    const first = new FakeConnection();
    const second = new FakeConnection();
    await hub.attach(A, first);
    await hub.attach(A, second);
    await hub.deliver(A, { type: 'Both', data: 1 });
    await tick();
    expect([first.frames.map((f) => f.type), second.frames.map((f) => f.type)]).toEqual([['Both'], ['Both']]);
    expect([first.closed, second.closed]).toEqual([undefined, undefined]);
  });

  it('two pages polling one tab each get an event that arrived while only one was polling (per-client cursor)', async () => {
    const { hub } = makeHub();
    const pageA = {};
    const pageB = {};
    // A poll is answered once: after its first frames it can take no more (as LongPollConnection).
    const poll = (client: object) => {
      const c = Object.assign(new FakeConnection('long-poll'), { client });
      const send = c.send.bind(c);
      c.send = (frames) => {
        const ok = send(frames);
        c.open = false;
        return ok;
      };
      return c;
    };
    const a1 = poll(pageA);
    await hub.attach(A, a1);
    const b1 = poll(pageB);
    await hub.attach(A, b1);
    await hub.deliver(A, { type: 'First', data: 1 });
    await tick();
    expect([a1.frames.length, b1.frames.length]).toEqual([1, 1]);
    // A polls again at once; B is between polls when the next event comes.
    const a2 = poll(pageA);
    await hub.attach(A, a2);
    await hub.deliver(A, { type: 'Second', data: 2 });
    await tick();
    expect(a2.frames.map((f) => f.data)).toEqual([2]);
    const b2 = poll(pageB);
    await hub.attach(A, b2);
    expect(b2.frames.map((f) => f.data)).toEqual([2]);
    // And A's next poll does not get it again.
    const a3 = poll(pageA);
    await hub.attach(A, a3);
    expect(a3.frames).toEqual([]);
  });

  it('beyond MAX_CONNECTIONS_PER_TAB live connections, the oldest is closed as replaced', async () => {
    const { hub } = makeHub();
    const connections = Array.from({ length: MAX_CONNECTIONS_PER_TAB + 1 }, () => new FakeConnection());
    for (const c of connections) await hub.attach(A, c);
    expect(connections.map((c) => c.closed?.code)).toEqual([4409, ...Array<undefined>(MAX_CONNECTIONS_PER_TAB).fill(undefined)]);
  });

  it('greets each WebSocket Register and the first connection of a tab new here, with the instance event', async () => {
    const { hub } = makeHub({ greeting: { type: 'CheckServerInstance', data: 'instance-1' } });
    const ws = new FakeConnection();
    expect(await hub.attach(A, ws)).toBe('created');
    expect(ws.frames.map((f) => [f.type, f.data])).toEqual([['CheckServerInstance', 'instance-1']]);
    const poll = new FakeConnection('long-poll');
    expect(await hub.attach(A, poll)).toBe('attached');
    expect(poll.frames).toEqual([]); // a long-poll of a known tab: no greeting (it would answer every poll)
    const firstPoll = new FakeConnection('long-poll');
    expect(await hub.attach(B, firstPoll)).toBe('created');
    expect(firstPoll.frames.map((f) => f.type)).toEqual(['CheckServerInstance']);
  });

  it('forgets a tab with no connection after the idle time, not before', async () => {
    const { hub, clock, forgotten } = makeHub();
    const conn = new FakeConnection();
    await hub.attach(A, conn);
    hub.detach(A, conn);
    clock.advance(59_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(true);
    clock.advance(1_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(false);
    expect(forgotten).toEqual([A]);
  });

  it('keeps a connected tab however long it is quiet', async () => {
    const { hub, clock } = makeHub();
    await hub.attach(A, new FakeConnection());
    clock.advance(10 * 60_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(true);
  });
});

describe('Hub: results belong to the session that asked', () => {
  it('an event for session A never reaches session B holding the same tab id after A released it', async () => {
    const { hub, released } = makeHub();
    const a = new FakeConnection();
    await hub.attach(A, a);
    await hub.release(A);
    expect(released).toEqual([A]);
    const b = new FakeConnection();
    await hub.attach(B, b);
    await hub.deliver(A, { type: 'SignatureReceived', data: 'secret' });
    await tick();
    expect(b.frames).toEqual([]);
    expect(a.frames).toEqual([]);
    // A comes back (a reloading page registers its tab again) and gets what waited for it.
    const again = new FakeConnection();
    await hub.attach(A, again);
    expect(again.frames.map((f) => f.data)).toEqual(['secret']);
  });

  it('an event for a session whose tab was forgotten waits for that session only, within the idle bound', async () => {
    const { hub, clock } = makeHub();
    const a = new FakeConnection();
    await hub.attach(A, a);
    hub.detach(A, a);
    clock.advance(60_000);
    hub.sweep();
    await hub.deliver(A, { type: 'SignatureReceived', data: 'late' });
    await tick();
    const b = new FakeConnection();
    await hub.attach(B, b);
    expect(b.frames).toEqual([]);
    const back = new FakeConnection();
    await hub.attach(A, back);
    expect(back.frames.map((f) => f.data)).toEqual(['late']);
  });

  it('a closed connection is not attached (the client left during its Register)', async () => {
    const { hub } = makeHub();
    const gone = new FakeConnection();
    gone.open = false;
    expect(await hub.attach(A, gone)).toBe('created');
    expect(await hub.isConnected(A)).toBe(false);
    expect(hub.snapshot().connected).toBe(0);
  });

  it('refuses a session its tab beyond the limit, and frees the slot when a tab is forgotten', async () => {
    const { hub, clock } = makeHub({ maxTabsPerSession: 2 });
    const first = new FakeConnection();
    await hub.attach({ tabId: 't1', session: 's' }, first);
    await hub.attach({ tabId: 't2', session: 's' }, new FakeConnection());
    expect(await hub.attach({ tabId: 't3', session: 's' }, new FakeConnection())).toBe('too_many_tabs');
    expect(await hub.attach({ tabId: 't3', session: 'other' }, new FakeConnection())).toBe('created');
    hub.detach({ tabId: 't1', session: 's' }, first);
    clock.advance(60_000);
    hub.sweep();
    expect(await hub.attach({ tabId: 't3', session: 's' }, new FakeConnection())).toBe('created');
  });
});
