// The minimal surface of xmpp.js 0.13 that src/xmpp uses; the packages ship no types.
// Only src/xmpp imports these modules, and nothing from them appears in its exported types.

declare module '@xmpp/xml' {
  import type { EventEmitter } from 'node:events';

  namespace xml {
    /** ltx's Element: `name` may carry a prefix; `getNS()` resolves xmlns through the parents. */
    class Element {
      constructor(name: string, attrs?: Record<string, string>);
      name: string;
      attrs: Record<string, string | undefined>;
      children: Array<Element | string>;
      parent: Element | null | undefined;
      getName(): string;
      getNS(): string | undefined;
      is(name: string, xmlns?: string): boolean;
      getChild(name: string, xmlns?: string): Element | undefined;
      getChildText(name: string, xmlns?: string): string | null;
      getChildElements(): Element[];
      /** Concatenated direct text children. */
      text(): string;
      append(...nodes: Array<Element | string>): this;
      toString(): string;
    }

    /** The streaming parser: the first element is `start`, its children each `element`, its close `end`. */
    class Parser extends EventEmitter {
      write(data: string): void;
      end(data?: string): void;
    }
  }

  function xml(name: string, attrs?: Record<string, string | undefined> | null, ...children: Array<xml.Element | string>): xml.Element;
  export = xml;
}

declare module '@xmpp/component' {
  import type { EventEmitter } from 'node:events';
  import type xml from '@xmpp/xml';

  interface Component extends EventEmitter {
    status: string;
    /** Connects, opens the stream and performs the XEP-0114 handshake; resolves once online. */
    start(): Promise<unknown>;
    stop(): Promise<unknown>;
    send(element: xml.Element): Promise<void>;
    reconnect: { stop(): void };
    /** Milliseconds each step (stream open, handshake answer, close) waits for the server; default 2000. */
    timeout: number;
  }

  export function component(options: { service: string; domain: string; password: string }): Component;
}
