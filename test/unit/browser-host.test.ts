import { describe, expect, it } from 'vitest';
import { defaultHost, endpoints, parseHost } from '../../src/browser/host.js';

describe('event server host', () => {
  it.each(['events.example.org', 'events.example.org:8443', 'localhost:8080', '127.0.0.1', '[::1]:8080', '  padded.example  '])(
    'accepts %j',
    (value) => expect(parseHost(value)).toBe(value.trim()),
  );

  it.each(['', 'https://events.example', 'events.example/path', 'user@events.example', 'a b', 'host:port', '-bad.example', undefined, 42])(
    'refuses %j',
    (value) => expect(parseHost(value)).toBeUndefined(),
  );

  const page = { host: 'shop.example', protocol: 'https:' };

  it('defaults to the page host, secure when the page is https', () => {
    expect(defaultHost(page, [undefined, undefined])).toEqual({ host: 'shop.example', secure: true });
    expect(defaultHost({ host: 'localhost:8080', protocol: 'http:' }, [])).toEqual({ host: 'localhost:8080', secure: false });
  });

  it('takes the first valid meta tag (tabwire-events before NEURON), skipping invalid ones', () => {
    expect(defaultHost(page, ['events.example:444', 'neuron.example'])).toEqual({ host: 'events.example:444', secure: true });
    expect(defaultHost(page, [undefined, 'neuron.example'])).toEqual({ host: 'neuron.example', secure: true });
    expect(defaultHost(page, ['javascript:alert(1)', 'neuron.example'])).toEqual({ host: 'neuron.example', secure: true });
  });

  it('builds the WebSocket and long-poll URLs', () => {
    expect(endpoints({ host: 'events.example:444', secure: true })).toEqual({
      websocket: 'wss://events.example:444/ClientEventsWS',
      longPoll: 'https://events.example:444/ClientEvents',
    });
    expect(endpoints({ host: 'localhost:8080', secure: false })).toEqual({
      websocket: 'ws://localhost:8080/ClientEventsWS',
      longPoll: 'http://localhost:8080/ClientEvents',
    });
  });
});
