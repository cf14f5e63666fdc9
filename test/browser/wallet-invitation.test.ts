import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useWalletBrowser } from '../helpers/wallet-browser.js';

// The web wallet on a service without open registration (docs/wallet.md "Account"): the person knows the
// operator's API key as the invitation key the wallet's form asks for, so that is what the wallet says.
const rig = useWalletBrowser({ openRegistration: false });

describe('the wallet on a service that creates accounts by invitation only', () => {
  it('says an invitation key is needed (not "X-Api-Key"), opens its field, and creates the account with one', async () => {
    const wallet = await rig.openWallet();
    await wallet.fill('#user-name', 'ada');
    await wallet.fill('#password', 'correct horse battery');
    expect(await wallet.evaluate(() => (document.getElementById('invitation') as HTMLDetailsElement).open)).toBe(false);

    await wallet.click('#create-account');
    await wallet.waitForFunction(() => document.getElementById('alert')!.textContent !== '');
    const missing = await wallet.textContent('#alert');
    expect(missing).toContain('invitation key');
    expect(missing).not.toContain('X-Api-Key');
    expect(await wallet.evaluate(() => (document.getElementById('invitation') as HTMLDetailsElement).open)).toBe(true);

    await wallet.fill('#api-key', 'tw_not-a-key-the-operator-made');
    await wallet.click('#create-account');
    await wallet.waitForFunction((before) => document.getElementById('alert')!.textContent !== before && document.getElementById('alert')!.textContent !== '', missing);
    expect(await wallet.textContent('#alert')).toContain('does not know this invitation key');

    const made = await runCli(['apikey', 'create', '--note', 'invitation'], { env: { TABWIRE_SQLITE_FILE: join(rig.service.dir, 'tabwire.sqlite') } });
    expect(made.status).toBe(0);
    const key = made.stdout.split('\t')[1]!.split('\n')[0]!;
    await wallet.fill('#api-key', key);
    await wallet.click('#create-account');
    await wallet.waitForSelector('#account-info:not([hidden])');
    expect(await wallet.textContent('#account-name')).toBe('ada');
    expect(rig.consoleErrors.filter((e) => !e.includes('the server responded with a status of'))).toEqual([]);
  });

  it('marks the identity form\'s optional fields as optional and only those', async () => {
    const wallet = await rig.openWallet();
    const labels = await wallet.evaluate(() =>
      ['prop-first', 'prop-last', 'prop-email', 'prop-country', 'attachment'].map((id) => {
        const input = document.getElementById(id) as HTMLInputElement;
        return { id, required: input.required, optional: /optional/.test(input.labels![0]!.textContent!) };
      }),
    );
    for (const field of labels) expect(field.optional, field.id).toBe(!field.required);
  });
});
