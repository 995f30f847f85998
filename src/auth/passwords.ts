import { hash, verify } from '@node-rs/argon2';

// Argon2id with OWASP's second recommended setting (19 MiB, t=2, p=1).
const options = { algorithm: 2 /* Algorithm.Argon2id (a const enum) */, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export const hashPassword = (password: string) => hash(password, options);

/** A hash of a random password: verified against when the email is unknown, so timing tells nothing. */
let dummy: Promise<string> | undefined;

export async function verifyPassword(passwordHash: string | null, password: string): Promise<boolean> {
  if (passwordHash === null) {
    dummy ??= hashPassword('not-a-password-' + Math.random());
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  return verify(passwordHash, password).catch(() => false);
}
