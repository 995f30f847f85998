import type { NetworkKind } from '../generated/prisma/enums';

/**
 * The address in the form the network stores it: trimmed; hexadecimal addresses (SANDBOX, EVM) in
 * lower case, since their case carries no meaning (an EIP-55 checksum is only a typing aid).
 */
export function normalizeAddress(kind: NetworkKind, address: string): string {
  const a = address.trim();
  return kind === 'SANDBOX' || kind === 'EVM' ? a.toLowerCase() : a;
}
