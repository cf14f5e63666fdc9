import { webcrypto } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import * as esbuild from 'esbuild';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { EventsApi } from '../../src/browser/events-api.js';

// The IIFE entry, bundled in memory the way scripts/build-browser.mjs bundles it, then run in a
// fresh JavaScript realm with a fake window: checks the install, not the transports.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let script: vm.Script;

beforeAll(async () => {
  const out = await esbuild.build({
    entryPoints: [path.join(root, 'src/browser/global.ts')],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2019',
    minify: true,
    write: false,
    tsconfig: path.join(root, 'src/browser/tsconfig.json'),
    logLevel: 'silent',
  });
  script = new vm.Script(out.outputFiles[0]!.text, { filename: 'Events.js' });
});

interface Sent {
  url: string;
  protocols: string;
  sent: unknown[];
  readyState: number;
  onopen: ((e: unknown) => void) | null;
  onmessage: ((e: { data: unknown }) => void) | null;
}

interface PageOptions {
  name?: string;
  metas?: Record<string, string>;
  readyState?: 'loading' | 'interactive' | 'complete';
  webSocket?: boolean;
  extra?: Record<string, unknown>;
}

function page(o: PageOptions = {}) {
  const sockets: Sent[] = [];
  const polls: { url: string; init: { headers: Record<string, string> } }[] = [];
  const listeners: [string, (e: unknown) => void][] = [];
  const docListeners: [string, () => void][] = [];
  const metas = { ...o.metas };
  class WebSocket {
    readyState = 0;
    sent: unknown[] = [];
    onopen: ((e: unknown) => void) | null = null;
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onclose = null;
    onerror = null;
    constructor(
      readonly url: string,
      readonly protocols: string,
    ) {
      sockets.push(this);
    }
    send(data: string) {
      this.sent.push(JSON.parse(data));
    }
    close() {
      this.readyState = 3;
    }
  }
  const win: Record<string, unknown> = {
    name: o.name ?? '',
    location: { host: 'shop.example', protocol: 'https:', href: 'https://shop.example/login' },
    document: {
      readyState: o.readyState ?? 'complete',
      getElementsByTagName: (tag: string) => (tag === 'meta' ? Object.entries(metas).map(([name, content]) => ({ name, content })) : []),
      addEventListener: (type: string, fn: () => void) => docListeners.push([type, fn]),
    },
    addEventListener: (type: string, fn: (e: unknown) => void) => listeners.push([type, fn]),
    removeEventListener: () => {},
    ...(o.webSocket === false ? {} : { WebSocket }),
    fetch: (url: string, init: { headers: Record<string, string> }) => {
      polls.push({ url, init });
      return new Promise(() => {});
    },
    setTimeout,
    clearTimeout,
    crypto: webcrypto,
    console: { warn: vi.fn(), error: vi.fn() },
    ...o.extra,
  };
  win.window = win;
  const context = vm.createContext(win);
  const load = () => script.runInContext(context);
  const fire = (type: string, event: unknown = {}) => listeners.filter(([t]) => t === type).forEach(([, fn]) => fn(event));
  const parsed = () => docListeners.filter(([t]) => t === 'DOMContentLoaded').forEach(([, fn]) => fn());
  const open = (s: Sent) => {
    s.readyState = 1;
    s.onopen?.({});
  };
  return { win, load, sockets, polls, fire, parsed, open, metas, events: () => win.Events as EventsApi };
}

const GUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('/Events.js installed in a page', () => {
  it('installs window.Events with a GUID tab ID kept in window.name, and connects to the page host', async () => {
    const p = page();
    p.load();
    const events = p.events();
    expect(events.tabId).toMatch(GUID_V4);
    expect(p.win.name).toBe(events.tabId);
    expect(p.sockets).toHaveLength(1);
    expect(p.sockets[0]!.url).toBe('wss://shop.example/ClientEventsWS');
    expect(p.sockets[0]!.protocols).toBe('ls');
    p.open(p.sockets[0]!);
    await events.ready;
    expect(p.sockets[0]!.sent).toEqual([{ cmd: 'Register', tabId: events.tabId, location: 'https://shop.example/login' }]);
    const got = vi.fn();
    events.on('SignatureReceivedBE', got);
    p.sockets[0]!.onmessage?.({ data: '{"type":"SignatureReceivedBE","data":"","id":1}' });
    expect(got).toHaveBeenCalledWith('', expect.objectContaining({ type: 'SignatureReceivedBE', id: 1 }));
    expect(events.lastEventId).toBe(1);
    expect(events.stats).toMatchObject({ received: 1, dispatched: 1, transport: 'websocket' });
  });

  it('keeps the tab ID of a reload (window.name) and works with unbound functions', () => {
    const p = page({ name: '0f8fad5b-d9cb-469f-a165-70867728950e' });
    p.load();
    const { on, off } = p.events();
    const handler = vi.fn();
    on('E', handler);
    off('E', handler);
    expect(p.events().tabId).toBe('0f8fad5b-d9cb-469f-a165-70867728950e');
  });

  it('cannot be replaced or changed by page code, and a second include keeps the first client', () => {
    const p = page();
    p.load();
    const first = p.events();
    expect(Object.getOwnPropertyDescriptor(p.win, 'Events')?.writable).toBe(false);
    expect(Object.isFrozen(first)).toBe(true);
    p.load();
    expect(p.events()).toBe(first);
    expect(p.sockets).toHaveLength(1);
  });

  it('reads the event host from <meta name="tabwire-events">, else <meta name="NEURON">', () => {
    const a = page({ metas: { 'tabwire-events': 'events.example:8443', NEURON: 'neuron.example' } });
    a.load();
    expect(a.sockets[0]!.url).toBe('wss://events.example:8443/ClientEventsWS');
    const b = page({ metas: { neuron: 'neuron.example' } });
    b.load();
    expect(b.sockets[0]!.url).toBe('wss://neuron.example/ClientEventsWS');
  });

  it('waits for the page to be parsed, so a meta tag after the script counts', () => {
    const p = page({ readyState: 'loading' });
    p.load();
    expect(p.sockets).toHaveLength(0);
    p.metas['tabwire-events'] = 'late.example';
    p.parsed();
    expect(p.sockets[0]!.url).toBe('wss://late.example/ClientEventsWS');
  });

  it('does not connect with <meta name="tabwire-events-autoconnect" content="off"> until Events.connect()', () => {
    const p = page({ metas: { 'tabwire-events-autoconnect': 'off' } });
    p.load();
    expect(p.sockets).toHaveLength(0);
    p.events().connect();
    expect(p.sockets).toHaveLength(1);
  });

  it('AgentAPI.IO.SetHost moves the channel, keeping the namespace and calling an earlier SetHost first', () => {
    const earlier = vi.fn();
    const p = page({ extra: { AgentAPI: { Version: '1', IO: { SetHost: earlier, Other: 1 } } } });
    p.load();
    const agent = p.win.AgentAPI as { Version: string; IO: { SetHost: (h: string, s?: boolean) => void; Other: number } };
    agent.IO.SetHost('api.example:444', false);
    expect(earlier).toHaveBeenCalledWith('api.example:444', false);
    expect(agent.Version).toBe('1');
    expect(agent.IO.Other).toBe(1);
    expect(p.sockets.map((s) => s.url)).toEqual(['wss://shop.example/ClientEventsWS', 'ws://api.example:444/ClientEventsWS']);
  });

  it('creates AgentAPI.IO.SetHost when there is no AgentAPI yet', () => {
    const p = page({ readyState: 'loading' });
    p.load();
    (p.win.AgentAPI as { IO: { SetHost: (h: string, s?: boolean) => void } }).IO.SetHost('api.example', true);
    p.parsed();
    expect(p.sockets.map((s) => s.url)).toEqual(['wss://api.example/ClientEventsWS']);
  });

  it('sends Unregister on pagehide and reconnects when restored from the back/forward cache', () => {
    const p = page();
    p.load();
    p.open(p.sockets[0]!);
    p.fire('pagehide', { persisted: true });
    expect(p.sockets[0]!.sent.at(-1)).toEqual({ cmd: 'Unregister' });
    expect(p.events().stats.transport).toBe('none');
    p.fire('pageshow', { persisted: true });
    expect(p.sockets).toHaveLength(2);
  });

  it('long-polls with credentials where there is no WebSocket', () => {
    const p = page({ webSocket: false });
    p.load();
    expect(p.polls).toHaveLength(1);
    expect(p.polls[0]!.url).toBe('https://shop.example/ClientEvents');
    expect(p.polls[0]!.init).toMatchObject({ method: 'POST', credentials: 'include', body: 'https://shop.example/login' });
    expect(p.polls[0]!.init.headers['X-TabID']).toBe(p.events().tabId);
    expect(p.events().stats.transport).toBe('longpoll');
  });
});
