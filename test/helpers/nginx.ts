import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { acceptsConnections } from './ports.js';
import { spawnWatched, terminate } from './child.js';

/**
 * The nginx executable (Debian's `nginx` package, which scripts/test installs). Debian puts it in
 * /usr/sbin, which is not on every user's PATH. A missing nginx is a failure with the way to fix it,
 * never a skipped test.
 */
export function nginxBinary(): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  for (const dir of dirs) {
    const candidate = join(dir, 'nginx');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  throw new Error('nginx is not installed: the deployment test runs a real nginx (Debian: apt-get install nginx; scripts/test installs it)');
}

export interface NginxServer {
  /** The private prefix: nginx.conf, the site file, pid, logs, temp directories. */
  dir: string;
  /** The error log (startup problems, upstream errors), for a failing test's message. */
  errorLog(): string;
  accessLog(): string;
  /** SIGTERM to the master (fast shutdown), wait for it to exit (SIGKILL after 5 s); removes `dir`. */
  stop(): Promise<void>;
}

/**
 * Starts a private nginx as a foreground child (`daemon off`) with a master and one worker: its own
 * nginx.conf in a temporary prefix that holds pid, logs and temp paths and includes `site` (the text of
 * an http-context file such as deploy/nginx/tabwire.conf). Resolves once every port in `ports` accepts
 * connections; fails with the error log if nginx exits first.
 */
export async function startNginx(site: string, ports: number[]): Promise<NginxServer> {
  const binary = nginxBinary();
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-nginx-'));
  for (const temp of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp));
  writeFileSync(join(dir, 'site.conf'), site);
  writeFileSync(join(dir, 'nginx.conf'), mainConfig(dir));
  const errorLog = join(dir, 'error.log');
  const accessLog = join(dir, 'access.log');
  const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');

  // -p: the prefix relative paths resolve against; -e: where errors go before the config is read.
  // A foreground master, stopped by pid: SIGTERM is nginx's fast shutdown (open WebSockets do not hold it up).
  const { child, output } = spawnWatched(binary, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', errorLog]);

  const server: NginxServer = {
    dir,
    errorLog: () => read(errorLog),
    accessLog: () => read(accessLog),
    async stop() {
      await terminate(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const reason = `nginx exited (${child.exitCode ?? child.signalCode}): ${output()}${read(errorLog)}`;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(reason);
    }
    if ((await Promise.all(ports.map(acceptsConnections))).every(Boolean)) return server;
    if (Date.now() > deadline) {
      const reason = `nginx did not open ports ${ports.join(', ')}: ${output()}${read(errorLog)}`;
      await server.stop();
      throw new Error(reason);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The private main configuration around the site file: nothing of /etc/nginx is read. */
function mainConfig(dir: string): string {
  // As root the master would switch its workers to "nobody", who cannot write the temp directories
  // (mkdtemp makes them 0700); the test's own user is fine here. Unprivileged, nginx switches no user.
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `${user}daemon off;
master_process on;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} info;
events { worker_connections 256; }
http {
    access_log ${join(dir, 'access.log')};
    client_body_temp_path ${join(dir, 'client_body')};
    proxy_temp_path ${join(dir, 'proxy')};
    fastcgi_temp_path ${join(dir, 'fastcgi')};
    uwsgi_temp_path ${join(dir, 'uwsgi')};
    scgi_temp_path ${join(dir, 'scgi')};
    include ${join(dir, 'site.conf')};
}
`;
}

