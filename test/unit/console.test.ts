import { describe, expect, it } from 'vitest';
import { listenFailureMessage } from '../../src/console/listen-failure.js';
import { chooseLogFormat, readableMessage } from '../../src/console/log-output.js';
import { startLine } from '../../src/console/start-line.js';

const errno = (code: string) => Object.assign(new Error(`listen ${code}`), { code });

describe('log format', () => {
  it('auto follows stdout: a terminal gets readable lines, anything else JSON; pretty and json force one', () => {
    expect(chooseLogFormat('auto', true)).toBe('pretty');
    expect(chooseLogFormat('auto', false)).toBe('json');
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
  });

  it('an access line reads "METHOD url status time", an error line adds its message, others show their module', () => {
    const access = { msg: 'request completed', req: { method: 'POST', url: '/QuickLogin' }, res: { statusCode: 429 }, responseTime: 3.14159 };
    expect(readableMessage(access)).toBe('POST /QuickLogin 429 3.1 ms');
    expect(readableMessage({ ...access, msg: 'request errored', res: { statusCode: 500 } })).toBe('POST /QuickLogin 500 3.1 ms: request errored');
    expect(readableMessage({ msg: 'login code settled', module: 'quicklogin' })).toBe('[quicklogin] login code settled');
    expect(readableMessage({ msg: 'shutting down' })).toBe('shutting down');
  });
});

describe('listen failures are one line naming what to change', () => {
  const config = { host: '127.0.0.1', port: 8080 };
  it('port in use names the address, the port and TABWIRE_PORT', () => {
    expect(listenFailureMessage(errno('EADDRINUSE'), config)).toBe(
      'tabwire: cannot listen on 127.0.0.1:8080: port 8080 is already in use (another process listens there); stop it, or choose another port with TABWIRE_PORT (config key "port")',
    );
    expect(listenFailureMessage(errno('EADDRINUSE'), { host: '::1', port: 9000 })).toContain('[::1]:9000');
  });

  it('a privileged port and a foreign address say which setting changes them; other errors are not explained away', () => {
    expect(listenFailureMessage(errno('EACCES'), { host: '127.0.0.1', port: 80 })).toMatch(/port 80 .*ports below 1024 need privileges.*TABWIRE_PORT/);
    expect(listenFailureMessage(errno('EADDRNOTAVAIL'), { host: '192.0.2.1', port: 8080 })).toMatch(/192\.0\.2\.1.*TABWIRE_HOST/);
    expect(listenFailureMessage(errno('EMFILE'), config)).toBeUndefined();
    expect(listenFailureMessage(new Error('boom'), config)).toBeUndefined();
  });
});

describe('start line', () => {
  it('names the demo page and the API reference under the public base URL', () => {
    const line = startLine('https://auth.example.org');
    expect(line.fields).toEqual({ demo: 'https://auth.example.org/', docs: 'https://auth.example.org/docs' });
    expect(line.message).toBe('tabwire is listening: open https://auth.example.org/ for the demo, https://auth.example.org/docs for the API reference');
  });

  it('names the OpenID Provider\'s issuer when it is on', () => {
    const line = startLine('https://auth.example.org', 'https://auth.example.org/oidc');
    expect(line.fields.oidcIssuer).toBe('https://auth.example.org/oidc');
    expect(line.message).toBe('tabwire is listening: open https://auth.example.org/ for the demo, https://auth.example.org/docs for the API reference; OpenID Provider issuer https://auth.example.org/oidc');
  });
});
