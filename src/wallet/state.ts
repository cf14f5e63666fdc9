/**
 * What the wallet page keeps between actions: its key, profile and session. One object, handed to the
 * modules that read or change it, so none of them keeps a copy that a sign-out or "forget" would miss.
 */
import type { WalletKey } from './keys.js';
import type { IdentityView } from './request.js';

/** What is stored under `profile` (db.ts): the identity applied for, once there is one. */
export interface Profile {
  identity?: IdentityView;
}

/** The agent account signed in, stored under `session` (db.ts). */
export interface Session {
  userName: string;
  jwt: string;
  /** Unix seconds. */
  expires: number;
}

/** The page's state; `key` and `session` are undefined until made or signed in. */
export interface WalletState {
  key: WalletKey | undefined;
  profile: Profile;
  session: Session | undefined;
}

const now = (): number => Math.floor(Date.now() / 1000);

/** The session while it has more than 5 seconds left, else undefined. */
export const signedIn = (state: WalletState): Session | undefined => (state.session && state.session.expires > now() + 5 ? state.session : undefined);
