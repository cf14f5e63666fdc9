/** The OpenID Provider library's module (oidc-provider), as `loadOidcLibrary` answers it. */
export type OidcLibrary = typeof import('oidc-provider');

let loading: Promise<OidcLibrary> | undefined;

/**
 * Imports oidc-provider once, when the OpenID Provider is started (a node with `oidc` off never loads it).
 * On Node.js 20 the library prints "Unsupported runtime" on stderr as it is imported; the service supports
 * 20 while it is end-of-life (docs/node-versions.md) and its console stays the service's own, so exactly
 * that line is dropped. Any other warning of the library goes through.
 */
export function loadOidcLibrary(): Promise<OidcLibrary> {
  loading ??= (async () => {
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING: Unsupported runtime')) return;
      warn(...args);
    };
    try {
      return await import('oidc-provider');
    } finally {
      console.warn = warn;
    }
  })();
  return loading;
}
