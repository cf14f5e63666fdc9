import { describe, expect, it } from 'vitest';
import { closeCodes } from '../../src/protocol/close-codes.js';
import { A, FakeConnection, fallback, makeHub, tick } from '../helpers/hub-fixtures.js';

/** A WebSocket as the hub sees it: it can be asked to confirm, and the test answers (pong) or not. */
class ConfirmingConnection extends FakeConnection {
  readonly asked: ((reached: boolean) => void)[] = [];
  confirm(done: (reached: boolean) => void): void {
    this.asked.push(done);
  }
  /** The pong: everything asked so far reached the client. */
  pong(): void {
    for (const done of this.asked.splice(0)) done(true);
  }
  /** The socket ended (SIGKILLed browser): nothing asked can be confirmed any more. */
  die(): void {
    this.open = false;
    for (const done of this.asked.splice(0)) done(false);
  }
}

const contents = (fellBack: { content: string }[]) => fellBack.map((f) => f.content);

describe('Hub: an XMPP message counts as delivered once its tab confirms it', () => {
  it('a confirmed message is delivered and never stored, whatever happens to the connection afterwards', async () => {
    const { hub, clock, fellBack } = makeHub();
    const socket = new ConfirmingConnection();
    await hub.attach(A, socket);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    expect(socket.frames.map((f) => f.data)).toEqual([1]);
    expect(socket.asked).toHaveLength(1);
    expect(hub.state(A)?.awaitingConfirmation).toBe(1);
    socket.pong();
    await tick();
    expect(hub.state(A)?.awaitingConfirmation).toBe(0);
    socket.die();
    hub.detach(A, socket);
    clock.advance(60_000);
    hub.checkConfirmations();
    await hub.stop();
    await tick();
    expect(fellBack).toEqual([]);
  });

  it('a message written into a socket that then dies unconfirmed is stored once and never written again', async () => {
    const { hub, fellBack } = makeHub();
    const socket = new ConfirmingConnection();
    await hub.attach(A, socket);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await hub.deliver(A, { type: 'Plain', data: 2 });
    await tick();
    expect(socket.frames.map((f) => f.data)).toEqual([1, 2]);
    const firstId = socket.frames[0]!.id;
    socket.die();
    hub.detach(A, socket);
    await tick();
    expect(contents(fellBack)).toEqual(['<m n="1"/>']);
    // The same session comes back, even resuming from before the message: it is PopMessages' now, not the tab's.
    const back = new ConfirmingConnection();
    await hub.attach(A, back, firstId - 1);
    expect(back.frames.map((f) => f.type)).not.toContain('Msg');
    await hub.stop();
    await tick();
    expect(contents(fellBack)).toEqual(['<m n="1"/>']);
  });

  it('a frozen client (socket open, no pong) is declared dead at the deadline: closed 4408, the message stored; a late pong changes nothing', async () => {
    const { hub, clock, fellBack } = makeHub();
    const socket = new ConfirmingConnection();
    await hub.attach(A, socket);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    clock.advance(9_999);
    hub.checkConfirmations();
    await tick();
    expect(fellBack).toEqual([]);
    expect(socket.closed).toBeUndefined();
    clock.advance(1);
    hub.checkConfirmations();
    await tick();
    expect(contents(fellBack)).toEqual(['<m n="1"/>']);
    expect(socket.closed).toEqual({ code: closeCodes.pingTimeout, reason: 'confirm_timeout' });
    // Its closing handshake may never end (a frozen peer): the tab no longer counts as connected, so the
    // next message is stored rather than written into the same socket.
    await tick();
    expect(await hub.isConnected(A)).toBe(false);
    socket.pong();
    socket.die();
    await hub.stop();
    await tick();
    expect(contents(fellBack)).toEqual(['<m n="1"/>']);
  });

  it('a long-poll answer is confirmed by the next poll', async () => {
    const { hub, clock, fellBack } = makeHub();
    const poll = new FakeConnection('long-poll');
    await hub.attach(A, poll);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    expect(poll.frames.map((f) => f.data)).toEqual([1]);
    poll.open = false; // answered
    hub.detach(A, poll);
    expect(hub.state(A)?.awaitingConfirmation).toBe(1);
    await hub.attach(A, new FakeConnection('long-poll'));
    expect(hub.state(A)?.awaitingConfirmation).toBe(0);
    clock.advance(10_000);
    hub.checkConfirmations();
    await hub.stop();
    await tick();
    expect(fellBack).toEqual([]);
  });

  it('a long-poll answer followed by no poll within the deadline is stored; the late poll does not get it again', async () => {
    const { hub, clock, fellBack } = makeHub();
    const poll = new FakeConnection('long-poll');
    await hub.attach(A, poll);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    poll.open = false;
    hub.detach(A, poll);
    clock.advance(10_000);
    hub.checkConfirmations();
    await tick();
    expect(contents(fellBack)).toEqual(['<m n="1"/>']);
    const late = new FakeConnection('long-poll');
    await hub.attach(A, late, poll.frames[0]!.id - 1);
    expect(late.frames.map((f) => f.type)).not.toContain('Msg');
    await hub.stop();
    await tick();
    expect(contents(fellBack)).toEqual(['<m n="1"/>']);
  });

  it('a client that reconnects saying it saw the message (lastEventId) confirms it', async () => {
    const { hub, clock, fellBack } = makeHub();
    const socket = new ConfirmingConnection();
    await hub.attach(A, socket);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    const again = new ConfirmingConnection();
    await hub.attach(A, again, socket.frames[0]!.id);
    socket.die();
    hub.detach(A, socket);
    clock.advance(10_000);
    hub.checkConfirmations();
    await tick();
    expect(fellBack).toEqual([]);
  });

  it('events without a fallback ask for no confirmation (the hot path of logins stays as it was)', async () => {
    const { hub } = makeHub();
    const socket = new ConfirmingConnection();
    await hub.attach(A, socket);
    await hub.deliver(A, { type: 'SignatureReceived', data: {} });
    await tick();
    expect(socket.frames).toHaveLength(1);
    expect(socket.asked).toEqual([]);
  });

  it('at shutdown what still awaits a confirmation is stored', async () => {
    const { hub, fellBack } = makeHub();
    const socket = new ConfirmingConnection();
    await hub.attach(A, socket);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    await hub.stop();
    socket.die();
    await tick();
    expect(contents(fellBack)).toEqual(['<m n="1"/>']);
  });
});
