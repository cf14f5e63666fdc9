import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dispatcher, parseEventFrame, type ReceivedEvent } from '../../src/browser/dispatcher.js';

function makeDispatcher() {
  const log = { warn: vi.fn(), error: vi.fn() };
  return { dispatcher: new Dispatcher(log), log };
}

const frame = (value: unknown) => JSON.stringify(value);

describe('Dispatcher: only what the page subscribed to', () => {
  it('calls handlers of the frame type with (data, event), and nothing for other types', () => {
    const { dispatcher } = makeDispatcher();
    const seen: [unknown, ReceivedEvent][] = [];
    dispatcher.on('SignatureReceived', (data, event) => seen.push([data, event]));
    dispatcher.receiveText(frame({ type: 'SignatureReceived', data: { Id: 'x' }, id: 1 }));
    dispatcher.receiveText(frame({ type: 'SignatureReceivedBE', data: '', id: 2 }));
    expect(seen).toEqual([[{ Id: 'x' }, { type: 'SignatureReceived', data: { Id: 'x' }, id: 1 }]]);
    expect(dispatcher.stats).toEqual({ received: 2, dispatched: 1, duplicates: 0, malformed: 0 });
  });

  it('unsubscribes with off and with the function on returns', () => {
    const { dispatcher } = makeDispatcher();
    const a = vi.fn();
    const b = vi.fn();
    dispatcher.on('E', a);
    const offB = dispatcher.on('E', b);
    dispatcher.off('E', a);
    offB();
    dispatcher.off('Unknown', a); // unknown pairs are ignored
    dispatcher.receiveText(frame({ type: 'E', data: 1 }));
    expect(a).not.toHaveBeenCalled();
    expect(b).not.toHaveBeenCalled();
    expect(dispatcher.stats.dispatched).toBe(0);
  });

  it('refuses a non-string type or a non-function handler', () => {
    const { dispatcher } = makeDispatcher();
    expect(() => dispatcher.on('', () => {})).toThrow(TypeError);
    expect(() => dispatcher.on(42 as unknown as string, () => {})).toThrow(TypeError);
    expect(() => dispatcher.on('E', 'alert(1)' as unknown as () => void)).toThrow(TypeError);
  });

  it('ignores NOP even when a page subscribed to it', () => {
    const { dispatcher } = makeDispatcher();
    const nop = vi.fn();
    dispatcher.on('NOP', nop);
    dispatcher.receiveBatch(frame([{ type: 'NOP' }]));
    expect(nop).not.toHaveBeenCalled();
    expect(dispatcher.stats).toEqual({ received: 1, dispatched: 0, duplicates: 0, malformed: 0 });
  });

  it('keeps calling the other handlers when one throws, and reports the error', () => {
    const { dispatcher, log } = makeDispatcher();
    const after = vi.fn();
    dispatcher.on('E', () => {
      throw new Error('page bug');
    });
    dispatcher.on('E', after);
    dispatcher.receiveText(frame({ type: 'E', data: 'x', id: 1 }));
    expect(after).toHaveBeenCalledWith('x', { type: 'E', data: 'x', id: 1 });
    expect(log.error).toHaveBeenCalledOnce();
    expect(dispatcher.lastEventId).toBe(1);
  });

  it('dispatches to the handlers present when the frame arrived, even if one unsubscribes another', () => {
    const { dispatcher } = makeDispatcher();
    const second = vi.fn();
    dispatcher.on('E', () => dispatcher.off('E', second));
    dispatcher.on('E', second);
    dispatcher.receiveText(frame({ type: 'E' }));
    dispatcher.receiveText(frame({ type: 'E' }));
    expect(second).toHaveBeenCalledOnce();
  });
});

describe('Dispatcher: de-duplication by id', () => {
  it('drops frames whose id is not newer than the last one seen, and remembers the newest', () => {
    const { dispatcher } = makeDispatcher();
    const ids: (number | undefined)[] = [];
    dispatcher.on('E', (_data, event) => ids.push(event.id));
    for (const id of [1, 2, 2, 1, 3]) dispatcher.receiveText(frame({ type: 'E', id }));
    dispatcher.receiveText(frame({ type: 'E' })); // no id (an older server): always dispatched
    expect(ids).toEqual([1, 2, 3, undefined]);
    expect(dispatcher.lastEventId).toBe(3);
    expect(dispatcher.stats).toEqual({ received: 6, dispatched: 4, duplicates: 2, malformed: 0 });
  });

  it('applies the same rule inside a long-poll batch', () => {
    const { dispatcher } = makeDispatcher();
    const ids: (number | undefined)[] = [];
    dispatcher.on('E', (_data, event) => ids.push(event.id));
    expect(dispatcher.receiveBatch(frame([{ type: 'E', id: 4 }, { type: 'E', id: 5 }, { type: 'E', id: 5 }]))).toBe(true);
    expect(ids).toEqual([4, 5]);
  });

  it('forgets the last id on reset, so a service that numbers anew is heard', () => {
    const { dispatcher } = makeDispatcher();
    const handler = vi.fn();
    dispatcher.on('E', handler);
    dispatcher.receiveText(frame({ type: 'E', id: 9 }));
    dispatcher.resetEventIds();
    expect(dispatcher.lastEventId).toBeUndefined();
    dispatcher.receiveText(frame({ type: 'E', id: 1 }));
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('regression: after a reconnect, a first id at or below the last one means the tab is numbered anew', () => {
    const { dispatcher } = makeDispatcher();
    const ids: (number | undefined)[] = [];
    dispatcher.on('E', (_data, event) => ids.push(event.id));
    dispatcher.beginConnection();
    for (const id of [56, 57]) dispatcher.receiveText(frame({ type: 'E', id }));
    // Another node with a clock behind, or a server that numbers from 1, registered the tab anew.
    dispatcher.beginConnection();
    for (const id of [1, 2, 2]) dispatcher.receiveText(frame({ type: 'E', id }));
    expect(ids).toEqual([56, 57, 1, 2]);
    expect(dispatcher.stats.duplicates).toBe(1);
    // Within one connection the rule stays strict.
    dispatcher.receiveText(frame({ type: 'E', id: 1 }));
    expect(dispatcher.stats.duplicates).toBe(2);
  });
});

describe('Dispatcher: malformed frames', () => {
  const bad: unknown[] = [
    'not json',
    '',
    'null',
    '42',
    '"SignatureReceived"',
    '[]',
    frame([{ type: 'E' }]),
    frame({ data: 1 }),
    frame({ type: 5 }),
    frame({ type: '' }),
    frame({ type: null }),
    frame({ type: 'E', id: '7' }),
    frame({ type: 'E', id: -1 }),
    frame({ type: 'E', id: 1.5 }),
    frame({ type: 'E', id: null }),
    frame({ type: 'E', id: 2 ** 60 }),
    new ArrayBuffer(4), // a binary WebSocket frame
  ];

  it.each(bad.map((b) => [typeof b === 'string' ? b : 'ArrayBuffer', b]))('drops and counts %s', (_label, value) => {
    const { dispatcher } = makeDispatcher();
    const handler = vi.fn();
    dispatcher.on('E', handler);
    dispatcher.receiveText(value);
    expect(handler).not.toHaveBeenCalled();
    expect(dispatcher.stats).toEqual({ received: 1, dispatched: 0, duplicates: 0, malformed: 1 });
    expect(dispatcher.lastEventId).toBeUndefined();
  });

  it('counts a long-poll body that is not an array once, and says so', () => {
    const { dispatcher } = makeDispatcher();
    expect(dispatcher.receiveBatch('<html>proxy error</html>')).toBe(false);
    expect(dispatcher.receiveBatch('{"type":"E"}')).toBe(false);
    expect(dispatcher.stats.malformed).toBe(2);
  });

  it('counts bad items inside a good batch and delivers the good ones', () => {
    const { dispatcher } = makeDispatcher();
    const handler = vi.fn();
    dispatcher.on('E', handler);
    expect(dispatcher.receiveBatch(frame([{ type: 'E', id: 1 }, 'x', { nope: 1 }, { type: 'E', id: 2 }]))).toBe(true);
    expect(handler).toHaveBeenCalledTimes(2);
    expect(dispatcher.stats).toEqual({ received: 4, dispatched: 2, duplicates: 0, malformed: 2 });
  });

  it('takes type and id only from the frame itself, never from a polluted prototype', () => {
    const proto = Object.prototype as Record<string, unknown>;
    try {
      proto.type = 'E';
      proto.id = 1;
      expect(parseEventFrame({})).toBeUndefined();
      expect(parseEventFrame({ type: 'F' })).toEqual({ type: 'F', data: undefined, id: undefined });
    } finally {
      delete proto.type;
      delete proto.id;
    }
  });
});

describe('Dispatcher: a frame type is a name, never code', () => {
  const g = globalThis as Record<string, unknown>;
  afterEach(() => {
    delete g.alert;
    delete g.SignatureReceived;
  });

  const hostile = [
    'alert(1)',
    'alert',
    'SignatureReceived', // a legacy page's global function: not called unless subscribed
    'constructor',
    '__proto__',
    'toString',
    'hasOwnProperty',
    'valueOf',
    'eval',
    'Function',
    'setTimeout',
    'window',
    'globalThis',
    'Reload',
    'location.href="https://evil.example"',
    '});alert(1);({',
  ];

  it('calls nothing, pollutes no prototype and creates no global for any of them', () => {
    const alert = vi.fn();
    const legacy = vi.fn();
    g.alert = alert;
    g.SignatureReceived = legacy;
    const globalsBefore = Object.getOwnPropertyNames(globalThis).sort();
    const protoBefore = Object.getOwnPropertyNames(Object.prototype).sort();
    const { dispatcher, log } = makeDispatcher();

    for (const type of hostile) {
      dispatcher.receiveText(frame({ type, data: { polluted: true } }));
      dispatcher.receiveText(`{"type":${JSON.stringify(type)},"data":"alert(2)","__proto__":{"polluted":true}}`);
    }

    expect(alert).not.toHaveBeenCalled();
    expect(legacy).not.toHaveBeenCalled();
    expect(log.error).not.toHaveBeenCalled();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoBefore);
    expect(Object.getOwnPropertyNames(globalThis).sort()).toEqual(globalsBefore);
    expect(dispatcher.stats).toEqual({ received: hostile.length * 2, dispatched: 0, duplicates: 0, malformed: 0 });
  });

  it('dispatches such names only to a handler registered under exactly that name', () => {
    const { dispatcher } = makeDispatcher();
    const onConstructor = vi.fn();
    const onProto = vi.fn();
    dispatcher.on('constructor', onConstructor);
    dispatcher.on('__proto__', onProto);
    dispatcher.receiveText(frame({ type: 'constructor', data: 1 }));
    dispatcher.receiveText(frame({ type: 'toString', data: 2 }));
    dispatcher.receiveText('{"type":"__proto__","data":3}');
    expect(onConstructor).toHaveBeenCalledExactlyOnceWith(1, { type: 'constructor', data: 1, id: undefined });
    expect(onProto).toHaveBeenCalledExactlyOnceWith(3, { type: '__proto__', data: 3, id: undefined });
  });

  it('hands handlers a frozen event', () => {
    const { dispatcher } = makeDispatcher();
    let event: ReceivedEvent | undefined;
    dispatcher.on('E', (_d, e) => (event = e));
    dispatcher.receiveText(frame({ type: 'E', id: 1 }));
    expect(Object.isFrozen(event)).toBe(true);
  });
});
