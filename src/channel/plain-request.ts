import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';

/** Hop-by-hop fields that only make sense for the upgrade being declined (RFC 9110 §7.6.1, §7.8; RFC 7540 §3.2.1). */
const UPGRADE_FIELDS = new Set(['upgrade', 'http2-settings']);

/**
 * Declines an `Upgrade` and serves the request as plain HTTP/1.1 on the same connection (RFC 9110 §7.8: a
 * server may ignore Upgrade). Reached only on Node.js without the server's `shouldUpgradeCallback` (20;
 * `upgradesOnly` in websocket-upgrade.ts keeps such requests from the `upgrade` event elsewhere). There Node
 * hands every request with an Upgrade header to the `upgrade` event once anyone listens to it, with the socket
 * already detached from its parser; so the request head is written back, without Upgrade and HTTP2-Settings
 * and without those tokens in Connection, ahead of the bytes that followed it, and the socket is given to the
 * server again as a new connection (Node documents emitting `connection` with any Duplex for this). The
 * request is then parsed, limited and routed like any other.
 */
export function serveAsPlainRequest(server: Server, request: IncomingMessage, socket: Duplex, head: Buffer): void {
  const lines = [`${request.method ?? 'GET'} ${request.url ?? '/'} HTTP/${request.httpVersion}`];
  const raw = request.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (UPGRADE_FIELDS.has(lower)) continue;
    if (lower === 'connection') {
      const kept = value
        .split(',')
        .map((token) => token.trim())
        .filter((token) => token !== '' && !UPGRADE_FIELDS.has(token.toLowerCase()));
      if (kept.length > 0) lines.push(`${name}: ${kept.join(', ')}`);
      continue;
    }
    lines.push(`${name}: ${value}`);
  }
  // Node decodes the request line and fields as latin1, so latin1 gives back the bytes that were received.
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]));
  // An https.Server runs its HTTP connection listener on `secureConnection`; `connection` there would start TLS again.
  server.emit(socket instanceof TLSSocket ? 'secureConnection' : 'connection', socket);
}
