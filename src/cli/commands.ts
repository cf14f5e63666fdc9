import type { Config } from '../config/schema.js';
import { UsageError, type Flag, type ParsedArgs } from './args.js';
import { commandHelp, globalHelp } from './help.js';
import { action, onlyWith, operands } from './operands.js';
import { ID_TOKEN_ALGS, type IdTokenAlg } from '../oidc/clients.js';

/**
 * The CLI's command table: each command's flags, usage and explanation, and what it runs. Help and
 * parsing both read from here (help.ts, args.ts), and the tests walk this table, so a command or flag
 * added here is explained in `tabwire <command> --help` or a test fails (docs/cli.md).
 */

/** What a command may touch besides its arguments (the process's, or a test's). */
export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
}

export interface Command {
  name: string;
  /** One line for `tabwire --help`. */
  summary: string;
  /** Usage lines, each starting with the command's name. */
  usage: readonly string[];
  /** Paragraphs explaining what it does, its actions and its output. */
  description: string;
  /** Every flag but --help, which every command takes. */
  flags: readonly Flag[];
  /** Returns what goes to stdout. */
  run(args: ParsedArgs, io: CliIo): Promise<string>;
}

// Implementations are imported when a command runs, so `--help` and usage errors load no store driver.
const loadConfig = async (): Promise<Config> => (await import('../config/load.js')).loadConfig();
const operator = () => import('./operator-commands.js');

const CONFIG_NOTE =
  'It works on the service\'s store directly (SQLite file or PostgreSQL), configured like the service: TABWIRE_* variables and TABWIRE_CONFIG_FILE (docs/configuration.md).';

const IDENTITY_ACTIONS = ['create', 'approve', 'reject', 'obsolete', 'compromised', 'list'] as const;
const APIKEY_ACTIONS = ['create', 'revoke', 'list'] as const;
const ACCOUNT_ACTIONS = ['list', 'disable', 'enable', 'delete'] as const;
const OIDC_GROUPS = ['client', 'keys'] as const;
const OIDC_CLIENT_ACTIONS = ['add', 'list', 'remove'] as const;
const OIDC_ADD_FLAGS = ['redirect-uri', 'post-logout-redirect-uri', 'name', 'public', 'token-auth', 'pairwise', 'id-token-alg'];
/** `--token-auth basic|post`: the short words for client_secret_basic and client_secret_post. */
const TOKEN_AUTH_FLAG = ['basic', 'post'] as const;

export const COMMANDS: readonly Command[] = [
  {
    name: 'serve',
    summary: 'run the service in the foreground',
    usage: ['serve'],
    description:
      'Starts the service in this process (as `node dist/main.js` does, but without the Node.js flags `npm start` passes: for a terminal, not production; docs/deployment.md "Node.js flags") and logs to stdout. It is configured by TABWIRE_* variables and TABWIRE_CONFIG_FILE only (docs/configuration.md), and stops cleanly on Ctrl-C or SIGTERM. A configuration error exits with status 2 naming the setting.',
    flags: [],
    async run(args) {
      operands('serve', args, [], 0);
      await import('../main.js');
      return '';
    },
  },
  {
    name: 'identity',
    summary: 'create identities and move them between states (operator)',
    usage: [
      'identity create --prop NAME=VALUE [--prop NAME=VALUE ...] --key-out FILE [--valid-days N] [--approve]',
      'identity approve|reject|obsolete|compromised <id>',
      'identity list',
    ],
    description: [
      'create makes an identity with a fresh Ed25519 key pair: the service keeps the public key, the private key goes to the key file (mode 0600, never overwritten) that `tabwire sign --key` reads. It prints the new identity id. A new identity is Created and cannot sign until approved.',
      'approve, reject, obsolete and compromised move an identity: Created -> Approved or Rejected; Approved -> Obsoleted or Compromised. Only Approved identities within their validity may sign.',
      'list prints a header and one line per identity (id, state, properties as JSON), or "none".',
      CONFIG_NOTE,
    ].join('\n\n'),
    flags: [
      { kind: 'string', name: 'prop', value: 'NAME=VALUE', multiple: true, help: 'create: a property of the identity (FIRST=Ada); repeat for each. Names are letters, digits, _ . -' },
      { kind: 'string', name: 'key-out', value: 'FILE', help: 'create (required): where to write the private key file. An existing file is never overwritten.' },
      { kind: 'integer', name: 'valid-days', value: 'N', min: 1, max: 36_500, help: 'create: days the identity may sign, from now (default 365).' },
      { kind: 'boolean', name: 'approve', help: 'create: approve the identity at once (Created -> Approved), for development set-ups.' },
    ],
    async run(args) {
      const act = action('identity', args, IDENTITY_ACTIONS);
      onlyWith('identity', args, act, 'create', ['prop', 'key-out', 'valid-days', 'approve']);
      const [id] = operands('identity', args, act === 'create' || act === 'list' ? [] : ['id']);
      if (act === 'create') {
        if (args.strings['key-out'] === undefined) throw new UsageError('identity create needs --key-out FILE for the private key', 'identity');
        if ((args.lists.prop ?? []).length === 0) throw new UsageError('identity create needs at least one --prop NAME=VALUE', 'identity');
        for (const prop of args.lists.prop ?? []) {
          if (prop.indexOf('=') <= 0) throw new UsageError(`--prop must be NAME=VALUE (got "${prop}")`, 'identity');
        }
      }
      const { identityCommand } = await import('./identity-command.js');
      return identityCommand(await loadConfig(), {
        action: act,
        ...(id === undefined ? {} : { id }),
        props: args.lists.prop ?? [],
        ...(args.strings['key-out'] === undefined ? {} : { keyOut: args.strings['key-out'] }),
        validDays: args.integers['valid-days'] ?? 365,
        approve: args.booleans.approve ?? false,
      });
    },
  },
  {
    name: 'sign',
    summary: 'approve or reject a login request as an identity (the reference signer)',
    usage: ['sign <signUrl> --key FILE [--yes] [--reject]'],
    description: [
      '<signUrl> is the URL in the QR code (or printed by `tabwire login`): https://host/QuickLogin/Sign/<code>. sign fetches the request, checks that its challenge says exactly what is shown (docs/signing.md), shows who asks and for what, and asks before it signs.',
      'Answering y approves. Any other answer signs and sends a rejection, so the waiting page is told at once instead of waiting for the code to expire. With --reject the question is whether to reject; any answer but y then sends nothing.',
      'Without --yes an answer is needed: when standard input is closed or ends (a script, </dev/null) sign exits with status 1 and signs nothing. It prints the outcome, approved or rejected, as its last line.',
      'It talks to the service only over HTTP; it needs no configuration.',
    ].join('\n\n'),
    flags: [
      { kind: 'string', name: 'key', value: 'FILE', help: 'The identity\'s key file, as written by `tabwire identity create --key-out` (required).' },
      { kind: 'boolean', name: 'yes', help: 'Do not ask: sign the decision at once (approve, or reject with --reject). For scripts and tests.' },
      { kind: 'boolean', name: 'reject', help: 'Sign a rejection instead of an approval; the page receives SignatureRejected.' },
    ],
    async run(args, io) {
      const [signUrl] = operands('sign', args, ['signUrl'], 0);
      if (args.strings.key === undefined) throw new UsageError('sign needs --key FILE (the identity\'s key file)', 'sign');
      const { signCommand } = await import('./sign-command.js');
      return signCommand(
        { signUrl: signUrl!, keyFile: args.strings.key, yes: args.booleans.yes ?? false, reject: args.booleans.reject ?? false },
        { input: io.stdin, output: io.stdout },
      );
    },
  },
  {
    name: 'login',
    summary: 'log in from a terminal: show a QR code, wait, verify and print the identity',
    usage: ['login --service URL [--purpose TEXT] [--filter NAMES] [--attachment-filter NAMES] [--origin ORIGIN|none] [--json] [--timeout SECONDS] [--check-every SECONDS]'],
    description: [
      'A relying party without a browser: it opens the event channel as a tab of its own session (WebSocket /ClientEventsWS), asks for a QR code for that tab in text mode, and prints the code and its signUrl on stderr. The person scans it with a signing app, or runs `tabwire sign <signUrl> --key FILE` elsewhere. A code that expires is replaced by a new one, printed again.',
      'When the signed result arrives, login fetches the service\'s result keys (/.well-known/tabwire/result-keys) and verifies the result\'s ServerSignature and its purpose before it prints the identity on stdout: its id, state, provider and the shared properties, or the whole result as JSON with --json.',
      'Exit status: 0 logged in; 1 failed (refused, unreachable, or a result that does not verify); 2 usage error; 3 the person rejected the request; 4 no answer within --timeout.',
    ].join('\n\n'),
    flags: [
      { kind: 'string', name: 'service', value: 'URL', help: 'The service\'s base URL, such as https://auth.example.org (required).' },
      { kind: 'string', name: 'purpose', value: 'TEXT', default: 'Log in from a terminal', help: 'What the person is asked to approve; shown by the signing app and signed (default "Log in from a terminal").' },
      { kind: 'string', name: 'filter', value: 'NAMES', help: 'Only these identity properties are shared, comma-separated (FIRST,COUNTRY); default all.' },
      { kind: 'string', name: 'attachment-filter', value: 'NAMES', help: 'Only attachments with these file names are shared, comma-separated; default all.' },
      { kind: 'string', name: 'origin', value: 'ORIGIN', help: 'The Origin sent with the channel and the QR request, shown to the signer as the requester. Default: the origin of --service, which the service always allows; another must be among its allowedOrigins. "none" sends no Origin (the signer sees "a client without an origin").' },
      { kind: 'boolean', name: 'json', help: 'Print the verified result as JSON (the SignatureReceived data of docs/signing.md) instead of a summary.' },
      { kind: 'integer', name: 'timeout', value: 'SECONDS', min: 1, max: 86_400, default: 300, help: 'Give up after this many seconds without an answer (default 300), exit status 4.' },
      { kind: 'integer', name: 'check-every', value: 'SECONDS', min: 1, max: 3600, default: 5, help: 'How often the shown code is checked; an expired code is replaced by a new one (default 5).' },
    ],
    async run(args, io) {
      operands('login', args, [], 0);
      if (args.strings.service === undefined) throw new UsageError('login needs --service URL (the service\'s base URL)', 'login');
      const { loginCommand } = await import('./login-command.js');
      return loginCommand(
        {
          service: args.strings.service,
          purpose: args.strings.purpose!,
          propertyFilter: args.strings.filter,
          attachmentFilter: args.strings['attachment-filter'],
          origin: args.strings.origin,
          json: args.booleans.json ?? false,
          timeoutSeconds: args.integers.timeout!,
          checkEverySeconds: args.integers['check-every']!,
        },
        { stderr: io.stderr, env: io.env },
      );
    },
  },
  {
    name: 'apikey',
    summary: 'create, revoke and list Agent API keys (operator)',
    usage: ['apikey create [--note TEXT]', 'apikey revoke <id>', 'apikey list'],
    description: [
      'create makes a key for the Agent API\'s account creation (sent as the X-Api-Key header, docs/agent-api.md) and prints its id and the key. The key is shown only then; the store keeps a hash.',
      'revoke stops a key at once. list prints a header and one line per key (id, active or revoked, note), or "none".',
      CONFIG_NOTE,
    ].join('\n\n'),
    flags: [{ kind: 'string', name: 'note', value: 'TEXT', help: 'create: a note kept with the key, to recognise it in the list later.' }],
    async run(args) {
      const act = action('apikey', args, APIKEY_ACTIONS);
      onlyWith('apikey', args, act, 'create', ['note']);
      const [id] = operands('apikey', args, act === 'revoke' ? ['id'] : []);
      return (await operator()).apiKeyCommand(await loadConfig(), act, id, args.strings.note);
    },
  },
  {
    name: 'account',
    summary: 'list, disable, enable and delete Agent API accounts (operator)',
    usage: ['account list', 'account disable|enable|delete <user>'],
    description: [
      'list prints a header and one line per account (user name, state, e-mail), or "none". disable refuses the account\'s tokens until enable; delete removes the account, and its tokens stop working at once.',
      CONFIG_NOTE,
    ].join('\n\n'),
    flags: [],
    async run(args) {
      const act = action('account', args, ACCOUNT_ACTIONS);
      const [user] = operands('account', args, act === 'list' ? [] : ['user']);
      return (await operator()).accountCommand(await loadConfig(), act, user);
    },
  },
  {
    name: 'token',
    summary: 'issue an Agent API token for an account (development)',
    usage: ['token --user USER [--seconds N]'],
    description: [
      'Prints an EdDSA JWT for the account, signed with the newest token key, as the Agent API\'s login would issue it (docs/agent-api.md), and when it expires. For development and tests: it skips the password.',
      CONFIG_NOTE,
    ].join('\n\n'),
    flags: [
      { kind: 'string', name: 'user', value: 'USER', help: 'The account\'s user name (required).' },
      { kind: 'integer', name: 'seconds', value: 'N', min: 1, max: 3600, default: 3600, help: 'Lifetime of the token in seconds, 1 to 3600 (default 3600).' },
    ],
    async run(args) {
      operands('token', args, [], 0);
      if (args.strings.user === undefined) throw new UsageError('token needs --user USER', 'token');
      return (await operator()).tokenCommand(await loadConfig(), args.strings.user, args.integers.seconds!);
    },
  },
  {
    name: 'keys',
    summary: 'rotate the Agent API token signing key or the login code key (operator)',
    usage: ['keys rotate', 'keys rotate-codes'],
    description: [
      'rotate adds a new token signing key and prints its key id. New tokens are signed with it; tokens signed with older keys keep verifying until they expire. Running services pick the new key up within a minute, or at once on a token that names it (docs/agent-api.md).',
      'rotate-codes adds a new login code key and prints its key id. Nodes derive the codes of new QR requests with it from their next reload (within a minute); codes made with older keys stay valid until they expire (docs/signing.md "Derived codes").',
      CONFIG_NOTE,
    ].join('\n\n'),
    flags: [],
    async run(args) {
      const act = action('keys', args, ['rotate', 'rotate-codes']);
      operands('keys', args, []);
      return (await operator()).keysCommand(await loadConfig(), act);
    },
  },
  {
    name: 'oidc',
    summary: 'register, list and remove OpenID Connect relying parties; rotate the ID token keys (operator)',
    usage: [
      'oidc client add --redirect-uri URI [--redirect-uri URI ...] [--post-logout-redirect-uri URI ...] [--name NAME] [--public] [--token-auth basic|post] [--pairwise] [--id-token-alg EdDSA|ES256]',
      'oidc client list',
      'oidc client remove <client_id>',
      'oidc keys rotate',
    ],
    description: [
      'client add registers a relying party and prints its registration as one JSON object on stdout (client_id, client_secret, redirect_uris, token_endpoint_auth_method, subject_type, id_token_signed_response_alg, ...), the values to paste into the relying party\'s settings: `jq -r .client_secret` reads one. The secret is shown only then. By default the client is confidential and authenticates with client_secret_basic; --public makes a client without a secret that must use PKCE.',
      'A redirect URI is an absolute https URL, or http to 127.0.0.1, [::1] or localhost, without a fragment or user info, at most 10 per client; it is matched exactly as written. A refused URI is named with the reason (exit status 2) and nothing is stored.',
      'client list prints a header and one line per client (client id, name, public or confidential, its redirect URIs), never a secret, or "none". client remove deletes a client: it can no longer log anyone in.',
      'keys rotate adds a new ID token signing key for each algorithm (EdDSA, ES256) and prints the new key ids. Every node publishes them in its JWKS within a minute; they sign ID tokens from two minutes after the rotation, so relying parties know a key before any token carries it. The replaced keys stay published until the ID tokens they signed have expired (docs/oidc.md "Keys").',
      CONFIG_NOTE,
    ].join('\n\n'),
    flags: [
      { kind: 'string', name: 'redirect-uri', value: 'URI', multiple: true, help: 'add (at least one): where the provider may send the person back with the code; exact string.' },
      { kind: 'string', name: 'post-logout-redirect-uri', value: 'URI', multiple: true, help: 'add: where the provider may send the person after logging out (RP-initiated logout); same rules.' },
      { kind: 'string', name: 'name', value: 'NAME', help: 'add: the name shown to the person logging in (up to 100 characters, one line). Default: the redirect URI\'s host.' },
      { kind: 'boolean', name: 'public', help: 'add: a public client (a single-page or native app): no secret, token auth none, PKCE required.' },
      { kind: 'string', name: 'token-auth', value: 'METHOD', choices: TOKEN_AUTH_FLAG, help: 'add: how a confidential client authenticates at the token endpoint: basic (client_secret_basic, the default) or post (client_secret_post).' },
      { kind: 'boolean', name: 'pairwise', help: 'add: a pairwise subject: each relying party sees its own sub for a person (its redirect URIs then share one host).' },
      { kind: 'string', name: 'id-token-alg', value: 'ALG', choices: ID_TOKEN_ALGS, help: 'add: the ID token\'s signature algorithm: EdDSA (default) or ES256, for relying parties without EdDSA.' },
    ],
    async run(args) {
      const group = action('oidc', args, OIDC_GROUPS);
      if (group === 'keys') {
        const act = action('oidc', args, ['rotate'], 1);
        onlyWith('oidc', args, `keys ${act}`, 'client add', OIDC_ADD_FLAGS);
        operands('oidc', args, [], 2);
        return (await import('./oidc-keys-command.js')).oidcKeysRotate(await loadConfig());
      }
      const act = action('oidc', args, OIDC_CLIENT_ACTIONS, 1);
      onlyWith('oidc', args, `client ${act}`, 'client add', OIDC_ADD_FLAGS);
      const [clientId] = operands('oidc', args, act === 'remove' ? ['client_id'] : [], 2);
      const command = await import('./oidc-client-command.js');
      if (act === 'list') return command.oidcClientList(await loadConfig());
      if (act === 'remove') return command.oidcClientRemove(await loadConfig(), clientId!);
      if ((args.lists['redirect-uri'] ?? []).length === 0) throw new UsageError('oidc client add needs at least one --redirect-uri URI', 'oidc');
      const tokenAuth = args.strings['token-auth'];
      if (args.booleans.public && tokenAuth !== undefined) {
        throw new UsageError('--public and --token-auth exclude each other: a public client has no secret to authenticate with', 'oidc');
      }
      return command.oidcClientAdd(await loadConfig(), {
        redirectUris: args.lists['redirect-uri'] ?? [],
        postLogoutRedirectUris: args.lists['post-logout-redirect-uri'] ?? [],
        name: args.strings.name ?? null,
        tokenAuth: args.booleans.public ? 'none' : tokenAuth === 'post' ? 'client_secret_post' : 'client_secret_basic',
        pairwise: args.booleans.pairwise ?? false,
        idTokenAlg: (args.strings['id-token-alg'] ?? 'EdDSA') as IdTokenAlg,
      });
    },
  },
  {
    name: 'help',
    summary: 'explain the commands, or one command and its flags',
    usage: ['help [<command>]'],
    description:
      'Without a command, lists every command. With one, prints that command\'s help: the same text as `tabwire <command> --help`.',
    flags: [],
    async run(args) {
      const [name] = args.positionals;
      if (args.positionals.length > 1) throw new UsageError(`help: unexpected argument "${args.positionals[1]}"`, 'help');
      if (name === undefined) return globalHelp(COMMANDS);
      const command = commandNamed(name);
      if (!command) throw new UsageError(`unknown command "${name}"; the commands are ${COMMANDS.map((c) => c.name).join(', ')}`);
      return commandHelp(command);
    },
  },
];

/** The command of this name, if there is one. */
export const commandNamed = (name: string): Command | undefined => COMMANDS.find((c) => c.name === name);
