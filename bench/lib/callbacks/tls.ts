import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * A throwaway self-signed certificate for 127.0.0.1 (openssl, P-256), written into `dir`: the
 * callback receiver serves it and tabwire trusts it through `callbackCaFile`.
 */
export function selfSignedLoopbackCertificate(dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, 'receiver-cert.pem');
  const keyFile = join(dir, 'receiver-key.pem');
  execFileSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}
