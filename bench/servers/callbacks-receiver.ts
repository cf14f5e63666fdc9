/**
 * Child server: a backend's callback endpoint, HTTPS on loopback with a self-signed certificate.
 * Every POST is read to the end and answered 200 `ok`; GET /count answers how many POSTs arrived.
 * Args: one JSON object {port, certFile, keyFile}.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { serveAsChild } from './protocol.js';

await serveAsChild(async () => {
  const { port, certFile, keyFile } = JSON.parse(process.argv[2] ?? '{}') as { port: number; certFile: string; keyFile: string };
  let received = 0;
  const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
    if (req.method === 'GET' && req.url === '/count') {
      const body = JSON.stringify({ received });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    req.on('data', () => undefined);
    req.on('end', () => {
      received++;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
});
