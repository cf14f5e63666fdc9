import { describe, expect, it } from 'vitest';
import { RELOAD_WINDOW_MS } from '../../src/hub/reload-resume.js';
import { A, FakeConnection, makeHub, tick } from '../helpers/hub-fixtures.js';

// docs/events.md "Restarts": a page that reloads on its greeting (the newer reference event script, on a new
// CheckServerInstance id) loses what its socket was written just before; the reloaded page gets it again.
const GREETING = { type: 'CheckServerInstance', data: 'instance-2' };
const types = (c: FakeConnection) => c.frames.map((f) => (f.type === GREETING.type ? 'greeting' : `${f.type}:${String(f.data)}`));

/** A hub with a result waiting for tab A (signed while its page was away, e.g. during a restart). */
async function resultWaiting() {
  const made = makeHub({ greeting: GREETING });
  await made.hub.deliver(A, { type: 'SignatureReceived', data: 'r1' });
  return made;
}

describe('a page reloading on its greeting', () => {
  it('gets again, on its next Register, what the socket before it was written (a Register without lastEventId)', async () => {
    const { hub } = await resultWaiting();
    const old = new FakeConnection();
    await hub.attach(A, old);
    expect(types(old)).toEqual(['SignatureReceived:r1', 'greeting']);
    // The page reloads at once: Unregister on beforeunload, then the reloaded page registers.
    await hub.release(A, old);
    const reloaded = new FakeConnection();
    await hub.attach(A, reloaded);
    expect(types(reloaded)).toEqual(['SignatureReceived:r1', 'greeting']);
  });

  it('a live event written after the greeting, before the Unregister, comes again too', async () => {
    const { hub } = makeHub({ greeting: GREETING });
    const old = new FakeConnection();
    await hub.attach(A, old);
    await hub.deliver(A, { type: 'SignatureReceived', data: 'r1' });
    await tick();
    expect(types(old)).toEqual(['greeting', 'SignatureReceived:r1']);
    await hub.release(A, old);
    const reloaded = new FakeConnection();
    await hub.attach(A, reloaded);
    expect(types(reloaded)).toEqual(['SignatureReceived:r1', 'greeting']);
  });

  it('only once: the reloaded page, greeted here already, is not watched (a page that reloads on every result stops)', async () => {
    const { hub } = await resultWaiting();
    const first = new FakeConnection();
    await hub.attach(A, first);
    await hub.release(A, first);
    const second = new FakeConnection();
    await hub.attach(A, second);
    expect(types(second)).toEqual(['SignatureReceived:r1', 'greeting']);
    await hub.release(A, second);
    const third = new FakeConnection();
    await hub.attach(A, third);
    expect(types(third)).toEqual(['greeting']);
  });

  it('a tab greeted here more than outboxMaxAge ago is watched again', async () => {
    const { hub, clock } = makeHub({ greeting: GREETING });
    const early = new FakeConnection();
    await hub.attach(A, early);
    hub.touch(A, early);
    early.open = false;
    hub.detach(A, early);
    clock.advance(60_001);
    hub.sweep();
    await hub.deliver(A, { type: 'SignatureReceived', data: 'r1' });
    const old = new FakeConnection();
    await hub.attach(A, old);
    await hub.release(A, old);
    const reloaded = new FakeConnection();
    await hub.attach(A, reloaded);
    expect(types(reloaded)).toEqual(['SignatureReceived:r1', 'greeting']);
  });

  it('a page that pinged after its greeting stayed: its Unregister later sends nothing again', async () => {
    const { hub } = await resultWaiting();
    const page = new FakeConnection();
    await hub.attach(A, page);
    hub.touch(A, page);
    await hub.release(A, page);
    const next = new FakeConnection();
    await hub.attach(A, next);
    expect(types(next)).toEqual(['greeting']);
  });

  it(`an Unregister later than ${RELOAD_WINDOW_MS} ms after the greeting is a page leaving, not a reload`, async () => {
    const { hub, clock } = await resultWaiting();
    const page = new FakeConnection();
    await hub.attach(A, page);
    clock.advance(RELOAD_WINDOW_MS + 1);
    await hub.release(A, page);
    const next = new FakeConnection();
    await hub.attach(A, next);
    expect(types(next)).toEqual(['greeting']);
  });

  it('a socket that only closed (no Unregister: a network blip, not a reload) gets nothing again', async () => {
    const { hub } = await resultWaiting();
    const page = new FakeConnection();
    await hub.attach(A, page);
    page.open = false;
    hub.detach(A, page);
    const next = new FakeConnection();
    await hub.attach(A, next);
    expect(types(next)).toEqual(['greeting']);
  });

  it('a Register with lastEventId resumes where its client says (tabwire\'s own script)', async () => {
    const { hub } = await resultWaiting();
    const old = new FakeConnection();
    await hub.attach(A, old);
    await hub.release(A, old);
    const reloaded = new FakeConnection();
    await hub.attach(A, reloaded, old.frames[0]!.id);
    expect(types(reloaded)).toEqual(['greeting']);
  });
});

describe('the first poll of a tab new to this node', () => {
  // A poll is answered once (as LongPollConnection): after its first frames it takes no more.
  const poll = () => {
    const c = Object.assign(new FakeConnection('long-poll'), { client: {}, answers: 0 });
    const send = c.send.bind(c);
    c.send = (frames) => {
      const ok = send(frames);
      c.answers++;
      c.open = false;
      return ok;
    };
    return c;
  };

  it('whose stream holds nothing unsent is held as any poll', async () => {
    const { hub } = makeHub({ greeting: GREETING });
    await hub.deliver(A, { type: 'SignatureReceived', data: 'r1' });
    const first = poll();
    await hub.attach(A, first);
    expect([first.answers, first.frames]).toEqual([1, []]);
    hub.detach(A, first);
    const taken = poll();
    await hub.attach(A, taken);
    expect(types(taken)).toEqual(['SignatureReceived:r1']);
    hub.detach(A, taken);
    // Let go here (the stream stays for the session's return), then polled again: nothing waits.
    await hub.release(A);
    const next = poll();
    await hub.attach(A, next);
    expect(next.answers).toBe(0);
    await hub.deliver(A, { type: 'SignatureReceived', data: 'r2' });
    await tick();
    expect(types(next)).toEqual(['SignatureReceived:r2']);
  });

  it('whose stream holds events is answered [] at once; the next poll carries them (a page reloading on that answer loses nothing)', async () => {
    const { hub } = await resultWaiting();
    const first = poll();
    await hub.attach(A, first);
    expect([first.answers, first.frames]).toEqual([1, []]);
    hub.detach(A, first);
    const next = poll();
    await hub.attach(A, next);
    expect(types(next)).toEqual(['SignatureReceived:r1']);
  });
});
