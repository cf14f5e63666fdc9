import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { closeCodes } from '../errors.js';
import type { TabConnection } from '../hub/connection.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import { parseClientFrame, type EventFrame } from '../protocol/frames.js';

export interface WebSocketChannelOptions {
  registry: TabRegistry;
  hub: Hub;
  log: Logger;
}

/** A WebSocket as the hub sees it: frames out as JSON text, one message per event. */
class WebSocketConnection implements TabConnection {
  constructor(private readonly socket: WebSocket) {}

  send(frames: readonly EventFrame[]): boolean {
    if (this.socket.readyState !== this.socket.OPEN) return false;
    for (const frame of frames) this.socket.send(JSON.stringify(frame));
    return true;
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
  }
}

/**
 * Serves one accepted `/ClientEventsWS` socket (SPEC.md "Client event messages"): Register binds
 * the tab to the session, Ping keeps it alive, Unregister forgets it. Anything else closes the
 * socket with a documented code (errors.ts `closeCodes`).
 */
export function serveWebSocket(socket: WebSocket, sessionHash: string, o: WebSocketChannelOptions, alive: () => void): void {
  const connection = new WebSocketConnection(socket);
  let tabId: string | undefined;

  // Frames are handled one at a time so a Register finishes before the next frame is looked at.
  let queue = Promise.resolve();
  socket.on('message', (data, isBinary) => {
    queue = queue.then(() => onFrame(isBinary ? undefined : data.toString())).catch((err: unknown) => {
      o.log.error({ err }, 'websocket frame handling failed');
      socket.close(1011, 'internal_error');
    });
  });

  async function onFrame(text: string | undefined): Promise<void> {
    alive();
    const frame = text === undefined ? undefined : parseClientFrame(text);
    if (!frame) return socket.close(closeCodes.frameInvalid, 'frame_invalid');
    switch (frame.cmd) {
      case 'Register': {
        if (tabId !== undefined && tabId !== frame.tabId) return socket.close(closeCodes.frameInvalid, 'tab_already_registered');
        const outcome = await o.registry.register(frame.tabId, sessionHash, connection, frame.lastEventId);
        if (outcome === 'conflict') return socket.close(closeCodes.tabSessionMismatch, 'tab_session_mismatch');
        tabId = frame.tabId;
        return;
      }
      case 'Ping':
        if (tabId !== undefined) o.hub.touch(tabId);
        return;
      case 'Unregister':
        if (tabId !== undefined) await o.registry.unregister(tabId);
        tabId = undefined;
        return;
    }
  }

  socket.on('close', () => {
    if (tabId !== undefined) o.hub.detach(tabId, connection);
  });
}
