/**
 * `/Events.js`: installs `window.Events` and `AgentAPI.IO.SetHost`, and connects once the page
 * has been parsed (so meta tags and SetHost calls after the script tag count), unless
 * `<meta name="tabwire-events-autoconnect" content="off">`.
 */
import { metaContent } from './browser-env.js';
import type { EventsApi } from './events-api.js';
import { createEventClient } from './index.js';

type SetHost = (host: string, secure?: boolean) => void;
interface AgentApiNamespace {
  IO?: { SetHost?: SetHost; [name: string]: unknown };
  [name: string]: unknown;
}
// Marks the window, so a page that includes the script twice keeps one client (two would share
// the tab ID and evict each other with close 4409). Symbol.for: both copies see the same symbol.
const INSTALLED = Symbol.for('tabwire.events');

type PageFunction = (data: unknown) => void;
type PageWindow = Window & {
  Events?: unknown;
  AgentAPI?: AgentApiNamespace;
  [INSTALLED]?: true;
  SignatureReceived?: PageFunction;
  SignatureReceivedBE?: PageFunction;
  SignatureRejected?: PageFunction;
};

/**
 * Pages written for the reference script define global functions for the QuickLogin events
 * (docs/events-js.md "Pages written for the reference clients": `SignatureReceived(data)`, `SignatureReceivedBE()`), and must keep working.
 * These three are looked up by fixed names written here, never by a name that came from the wire,
 * and only when the page defined them as functions (called in addition to `Events.on` handlers).
 */
function installLegacyGlobals(win: PageWindow, events: EventsApi): void {
  const call = (fn: PageFunction | undefined, data: unknown) => {
    if (typeof fn === 'function') fn.call(undefined, data);
  };
  events.on('SignatureReceived', (data) => call(win.SignatureReceived, data));
  events.on('SignatureReceivedBE', (data) => call(win.SignatureReceivedBE, data));
  events.on('SignatureRejected', (data) => call(win.SignatureRejected, data));
}

/**
 * Hooks SetHost into `AgentAPI.IO`, keeping the namespace and any SetHost an Agent API client
 * library put there before us (it is called first, so its own requests move too).
 */
function installSetHost(win: PageWindow, events: EventsApi): void {
  const agent = (win.AgentAPI ??= {});
  const io = (agent.IO ??= {});
  const previous = io.SetHost;
  io.SetHost = (host: string, secure?: boolean) => {
    if (typeof previous === 'function') previous.call(io, host, secure);
    events.setHost(host, secure);
  };
}

function whenParsed(doc: Document, run: () => void): void {
  if (doc.readyState === 'loading') doc.addEventListener('DOMContentLoaded', run, { once: true });
  else run();
}

function install(win: PageWindow): void {
  if (win[INSTALLED]) return;
  Object.defineProperty(win, INSTALLED, { value: true });
  const events = createEventClient();
  try {
    // Read-only, so page code cannot swap the client out from under other scripts.
    Object.defineProperty(win, 'Events', { value: events, enumerable: true, configurable: true, writable: false });
  } catch {
    // A page-level `var Events` is a non-configurable global; plain assignment still works.
    win.Events = events;
  }
  installSetHost(win, events);
  installLegacyGlobals(win, events);
  whenParsed(win.document, () => {
    if (metaContent(win.document, 'tabwire-events-autoconnect')?.trim().toLowerCase() !== 'off') events.connect();
  });
}

install(window as PageWindow);
