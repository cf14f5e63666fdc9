/**
 * Child server for bench/xmpp-throughput.ts: a bare XEP-0114 component (@xmpp/component, no
 * tabwire code) on the private Prosody that only counts the <message> stanzas it receives and
 * writes one byte per message to every connected TCP socket, so the parent can count deliveries
 * the way it counts WebSocket frames from tabwire.
 * Args: <port> <componentService> <componentDomain> <componentSecret>.
 */
import { createServer, type Socket } from 'node:net';
import { component } from '@xmpp/component';
import type xml from '@xmpp/xml';
import { serveAsChild } from './protocol.js';

await serveAsChild(async () => {
  const [portArg, service, domain, password] = process.argv.slice(2);
  const port = Number(portArg);
  if (!Number.isInteger(port) || port <= 0 || !service || !domain || !password) {
    throw new Error('usage: xmpp-bare-component.ts <port> <service> <domain> <secret>');
  }
  const sockets = new Set<Socket>();
  const tick = Buffer.from([1]);
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });

  const entity = component({ service, domain, password });
  entity.reconnect.stop();
  entity.on('error', () => {
    /* a lost stream shows as missing counts in the parent */
  });
  entity.on('stanza', (stanza: xml.Element) => {
    if (stanza.name !== 'message' || stanza.attrs.type === 'error') return;
    for (const socket of sockets) socket.write(tick);
  });
  await entity.start();
  return {
    port,
    async close() {
      try {
        await entity.stop();
      } catch {
        /* already gone */
      }
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
});
