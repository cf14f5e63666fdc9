/**
 * Child server: a bare `ws` WebSocketServer on a node:http server, the baseline for tabwire's
 * per-tab memory. It accepts subprotocol `ls` like tabwire, and counts sockets that sent their
 * first frame (the clients' Register) without keeping anything about them. Control routes:
 *   POST /__bench/gc     full GC (needs --expose-gc), then process.memoryUsage()
 *   GET  /__bench/stats  {connected, registered, memory}
 *   POST /__bench/heap-snapshot  settled heap written as a V8 heap snapshot into <snapshot dir>; answers {file}
 *                        (bench/tab-heap.ts --bare)
 * Args: <port> [snapshot dir].
 */
import { createServer } from 'node:http';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { WebSocketServer } from 'ws';
import { settleHeap } from '../lib/measure/channel-heap.js';
import { serveAsChild } from './protocol.js';

await serveAsChild(async () => {
  const port = Number(process.argv[2] ?? '0');
  const snapshotDir = process.argv[3];
  let connected = 0;
  let registered = 0;
  const json = (res: import('node:http').ServerResponse, value: unknown): void => {
    const body = JSON.stringify(value);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const settled = (res: import('node:http').ServerResponse, answer: (memory: NodeJS.MemoryUsage) => unknown): void => {
    settleHeap().then(
      (memory) => json(res, answer(memory)),
      (err: unknown) => {
        res.writeHead(500);
        res.end(String(err));
      },
    );
  };
  const server = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/__bench/gc') {
      req.resume();
      settled(res, (memory) => memory);
    } else if (req.method === 'POST' && req.url === '/__bench/heap-snapshot' && snapshotDir !== undefined) {
      req.resume();
      settled(res, () => ({ file: writeHeapSnapshot(join(snapshotDir, `heap-${Date.now()}.heapsnapshot`)) }));
    } else if (req.method === 'GET' && req.url === '/__bench/stats') {
      json(res, { connected, registered, memory: process.memoryUsage() });
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  // Same ws settings as tabwire's WebSocket upgrade (src/channel/websocket-upgrade.ts, src/app.ts).
  const wss = new WebSocketServer({
    server,
    maxPayload: 16 * 1024,
    handleProtocols: (protocols: Set<string>) => (protocols.has('ls') ? 'ls' : false),
  });
  wss.on('connection', (socket) => {
    connected++;
    let sentFrame = false;
    socket.once('message', () => {
      sentFrame = true;
      registered++;
    });
    socket.on('close', () => {
      connected--;
      if (sentFrame) registered--;
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address() as { port: number };
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.close(() => resolve());
      }),
  };
});
