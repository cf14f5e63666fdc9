import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Host names the browser maps to loopback, for two-origin tests. */
export const HOST_A = 'page-a.test';
export const HOST_B = 'tabwire-b.test';

/** A throwaway self-signed certificate for both test host names (openssl, from Debian). */
export function selfSignedCertificate(): { certFile: string; keyFile: string; cert: Buffer; key: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-tls-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', `/CN=${HOST_B}`,
    '-addext', `subjectAltName=DNS:${HOST_A},DNS:${HOST_B},IP:127.0.0.1`,
  ], { stdio: 'ignore' });
  return { certFile, keyFile, cert: readFileSync(certFile), key: readFileSync(keyFile) };
}
