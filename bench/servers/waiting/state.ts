/**
 * What the parts of one waiting-people load process (bench/servers/waiting-clients.ts) share: its
 * setup, its HTTP pool and its tabs. One object, because the process runs one load, and its commands,
 * timers and sockets all act on the same tabs.
 */
import type { Pool } from './http-pool.js';
import type WebSocket from 'ws';

/** One waiting page: its WebSocket, its session, its QR request and its timers. */
export interface Tab {
  id: string;
  /** Its index in `tabs`; a page that replaces it under churn takes the same. */
  slot: number;
  ws: WebSocket;
  /** The whole POST /QuickLogin request, built once (its body and cookie never change). */
  post: Buffer;
  cookie: string;
  running: boolean;
  leaving: boolean;
  /** performance.now() when the refresh in flight started; 0 when none is. */
  since: number;
  refresh: NodeJS.Timeout | undefined;
  ping: NodeJS.Timeout | undefined;
  /** With churn: when this person leaves. */
  leave: NodeJS.Timeout | undefined;
}

/** `image`: the demo page (POST, then the PNG); `text`: a reference page with data-mode="text" (the POST alone). */
export type WaitingMode = 'image' | 'text';

/** The `setup` command's arguments. */
export interface Setup {
  port: number;
  mode: WaitingMode;
  periodMs: number;
  pingMs: number;
  poolSize: number;
  prefix: string;
  /**
   * The loopback address this process's sockets come from (default 127.0.0.1). Connections from one
   * address to one server port are bounded by the local port range (32768-60999 here, ~28,000), so
   * each load process above that many tabs in all gets an address of its own (bench/lib/waiting/rig.ts).
   */
  localAddress?: string;
}

interface LoadState {
  setup: Setup | undefined;
  /** The pages' Origin (and Referer): the service itself, as for its demo page. */
  origin: string;
  pool: Pool | undefined;
  /** The open tabs; a tab's `slot` is its index here. */
  readonly tabs: Tab[];
  /** Set when the process exits: closes are expected from then on, and no new page takes a slot. */
  stopping: boolean;
  /** Sockets the server closed since the tabs were opened (cumulative). */
  unexpectedCloses: number;
}

/** This process's load: set by `setup`, then changed by the commands, the timers and the sockets. */
export const state: LoadState = {
  setup: undefined,
  origin: '',
  pool: undefined,
  tabs: [],
  stopping: false,
  unexpectedCloses: 0,
};

/** The setup; throws for a command that came before `setup`. */
export const assertSetup = (): Setup => {
  if (!state.setup) throw new Error('setup first');
  return state.setup;
};
