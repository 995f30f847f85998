import { GraphQLError } from 'graphql';

/**
 * The one error model. Every failure a caller can act on is a DomainError with a stable code.
 * This table maps each code to its HTTP status and problem title; GraphQL carries the code in
 * `extensions.code`, REST answers RFC 9457 application/problem+json with the status below.
 */
export const errorCodes = {
  UNAUTHENTICATED: { status: 401, title: 'Authentication required' },
  INVALID_CREDENTIAL: { status: 401, title: 'Invalid credential' },
  MULTIPLE_CREDENTIALS: { status: 401, title: 'More than one credential' },
  INVALID_LOGIN: { status: 401, title: 'Invalid email or password' },
  INVALID_REFRESH_TOKEN: { status: 401, title: 'Invalid refresh token' },
  PRINCIPAL_NOT_ALLOWED: { status: 403, title: 'Credential type not accepted by this operation' },
  PERMISSION_DENIED: { status: 403, title: 'Permission denied' },
  APPLICATION_INACTIVE: { status: 403, title: 'Application is suspended or archived' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  VALIDATION_FAILED: { status: 400, title: 'Validation failed' },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed request' },
  QUERY_TOO_COMPLEX: { status: 400, title: 'GraphQL document over a limit (tokens, depth, aliases or cost)' },
  INVALID_TOKEN: { status: 400, title: 'Invalid or expired token' },
  CONFLICT: { status: 409, title: 'Conflict' },
  INVALID_STATE: { status: 409, title: 'Operation not allowed in the current state' },
  EMAIL_TAKEN: { status: 409, title: 'Email already registered' },
  IDEMPOTENCY_KEY_REUSED: { status: 409, title: 'Idempotency key reused with a different request' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  NOT_IMPLEMENTED: { status: 501, title: 'Not implemented yet' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  INTERNAL: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorCodes;

/**
 * One failed input field: `field` is a dotted path relative to the operation's `input` (the REST
 * body), e.g. `name` or `splits.0.percentage`; a query parameter or another argument by its name;
 * `(input)` the input as a whole, `(body)` a REST body as a whole. `code` is zod's issue code
 * (`invalid_type`, `unrecognized_keys`, `invalid_value`, `invalid_format`, `too_big`, ...;
 * `custom` for a rule of ours). Messages never repeat the value given.
 */
export interface FieldError {
  field: string;
  message: string;
  code?: string;
}

export class DomainError extends GraphQLError {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, detail?: string, extra: { fieldErrors?: FieldError[]; retryAfterSeconds?: number } = {}) {
    const message = detail ?? errorCodes[code].title;
    // Every 400 names its fields (the whole input when the rule is about several or the request).
    const fieldErrors =
      extra.fieldErrors?.map((e) => ({ field: e.field, message: e.message, code: e.code ?? 'custom' })) ??
      (errorCodes[code].status === 400 ? [{ field: '(input)', message, code: 'custom' }] : undefined);
    super(message, {
      extensions: {
        code,
        ...(fieldErrors ? { fieldErrors } : {}),
        ...(extra.retryAfterSeconds !== undefined ? { retryAfterSeconds: extra.retryAfterSeconds } : {}),
      },
    });
    this.code = code;
  }
}

export const notFound = (what: string) => new DomainError('NOT_FOUND', `${what} not found`);
export const invalidState = (detail: string) => new DomainError('INVALID_STATE', detail);
/** A validation failure of one input field (400, with the field in `errors`). */
export const fieldError = (field: string, message: string, code = 'custom') =>
  new DomainError('VALIDATION_FAILED', `${field}: ${message}`, { fieldErrors: [{ field, message, code }] });
/** A validation failure of several fields; the detail lists them. */
export const validationFailed = (fieldErrors: FieldError[]) =>
  new DomainError('VALIDATION_FAILED', fieldErrors.map((e) => `${e.field}: ${e.message}`).join('; '), { fieldErrors });

export function statusOf(code: unknown): number {
  return typeof code === 'string' && code in errorCodes ? errorCodes[code as ErrorCode].status : 500;
}

/** A kebab-case slug for the problem `type` URI: `/problems/not-found`. */
export function problemType(code: ErrorCode): string {
  return `/problems/${code.toLowerCase().replace(/_/g, '-')}`;
}

/** Parses input with a zod schema; the first issue answers 400 VALIDATION_FAILED naming its field (nothing is changed). */
export function parseInput<T>(
  schema: {
    safeParse(input: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string; code?: string }[] } };
  },
  input: unknown,
): T {
  const r = schema.safeParse(input ?? {});
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw fieldError(i.path.map(String).join('.') || '(input)', i.message, i.code);
  }
  return r.data;
}

/** SQLSTATE of a database error, wherever the driver adapter put it. */
export function sqlState(e: unknown): string | undefined {
  const seen = new Set<unknown>();
  const visit = (x: unknown): string | undefined => {
    if (!x || typeof x !== 'object' || seen.has(x)) return undefined;
    seen.add(x);
    const o = x as Record<string, unknown>;
    for (const k of ['originalCode', 'code', 'sqlState']) {
      const v = o[k];
      if (typeof v === 'string' && /^[0-9A-Z]{5}$/.test(v) && !/^P\d{4}$/.test(v)) return v;
    }
    return visit(o.cause) ?? visit(o.meta) ?? visit(o.driverAdapterError) ?? visit(o.originalError);
  };
  const found = visit(e);
  if (found) return found;
  const message = e instanceof Error ? e.message : String(e);
  if (/deadlock detected/i.test(message)) return '40P01';
  if (/could not serialize access/i.test(message)) return '40001';
  if (/numeric field overflow/i.test(message)) return '22003';
  return undefined;
}

/**
 * The last resort for an unexpected error reaching a caller: a numeric overflow (22003) is an amount
 * or a sum beyond what the service stores, answered 409 rather than 500. Every source checks its sums
 * before writing (docs/decisions.md, issue 26); this only keeps a missed one from answering 500.
 * An overload (a bounded lock or statement wait, a transaction past its timeout, no connection in
 * time: isOverload) answers 503 SERVICE_UNAVAILABLE with Retry-After (issue 22).
 */
export function fromUnexpected(e: unknown): DomainError | null {
  if (isOverload(e)) return overloaded();
  if (sqlState(e) === '22003')
    return new DomainError(
      'INVALID_STATE',
      'AMOUNT_OUT_OF_RANGE: an amount or a sum would exceed what the service holds (10^78 - 1 base units); nothing was changed.',
    );
  return null;
}

/**
 * How long a caller told 503 waits before trying again (the Retry-After header, in seconds): the
 * overloads below clear within a second or two once the burst passes (docs/decisions.md, issue 22).
 */
export const OVERLOAD_RETRY_AFTER_SECONDS = 1;

/** The 503 of an overloaded service: nothing was changed (the transaction rolled back); retry, with the same Idempotency-Key. */
export const overloaded = () =>
  new DomainError(
    'SERVICE_UNAVAILABLE',
    'The service is overloaded and did not complete the request; nothing was changed. Retry after the Retry-After delay (with the same Idempotency-Key).',
    { retryAfterSeconds: OVERLOAD_RETRY_AFTER_SECONDS },
  );

/**
 * Lock wait bounded by lock_timeout (55P03), a statement cancelled by statement_timeout (57014),
 * too many connections (53300), and the client's own bounds: Prisma's interactive transaction
 * outlived its timeout or waited past maxWait for a connection (P2028, "Transaction already
 * closed" / "Unable to start a transaction in the given time"), a pool timeout (P2024, or pg's
 * "timeout exceeded when trying to connect"). Each left nothing committed: the service was too
 * busy, the request was not wrong.
 */
const OVERLOAD_SQLSTATES = new Set(['55P03', '57014', '53300']);

/** A transaction of ours on the pg pool (poolTransaction) outlived its bound and was rolled back: an overload, as Prisma's P2028. */
export class TransactionTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`the transaction did not end within ${timeoutMs} ms; rolled back`);
    this.name = 'TransactionTimeoutError';
  }
}
const OVERLOAD_PRISMA_CODES = new Set(['P2024', 'P2028']);
const OVERLOAD_MESSAGE =
  /Transaction already closed|Transaction not found|Unable to start a transaction in the given time|timeout exceeded when trying to connect|Timed out fetching a new connection/i;

export function isOverload(e: unknown): boolean {
  if (OVERLOAD_SQLSTATES.has(sqlState(e) ?? '') || e instanceof TransactionTimeoutError) return true;
  const seen = new Set<unknown>();
  const visit = (x: unknown): boolean => {
    if (!x || typeof x !== 'object' || seen.has(x)) return false;
    seen.add(x);
    const o = x as Record<string, unknown>;
    if (typeof o.code === 'string' && OVERLOAD_PRISMA_CODES.has(o.code)) return true;
    if (typeof o.message === 'string' && OVERLOAD_MESSAGE.test(o.message)) return true;
    return visit(o.cause) || visit(o.originalError);
  };
  return visit(e);
}

/** A deadlock (40P01) or serialization failure (40001): the transaction may be run again from the start. */
const RETRYABLE = new Set(['40P01', '40001']);
export const isRetryable = (e: unknown) => RETRYABLE.has(sqlState(e) ?? '');

/**
 * The unique constraint (its index name) that a Prisma P2002 (driver adapter: meta.driverAdapterError
 * .cause.constraint.index) or a pg 23505 (`constraint`) error names; null for any other error, or a
 * violation that names no constraint.
 */
export function violatedUniqueConstraint(e: unknown): string | null {
  if (typeof e !== 'object' || e === null) return null;
  const err = e as { code?: unknown; constraint?: unknown; meta?: { target?: unknown; driverAdapterError?: { cause?: { constraint?: { index?: unknown } } } } };
  if (err.code === '23505') return typeof err.constraint === 'string' ? err.constraint : null;
  // P2010: a raw statement's unique violation (a data-modifying CTE; issue 22).
  if (err.code !== 'P2002' && !(err.code === 'P2010' && sqlState(e) === '23505')) return null;
  const index = err.meta?.driverAdapterError?.cause?.constraint?.index;
  if (typeof index === 'string') return index;
  if (typeof err.meta?.target === 'string') return err.meta.target;
  const named = /unique constraint "([^"]+)"/.exec(e instanceof Error ? e.message : '');
  return named ? named[1]! : null;
}

/**
 * What a clash on each unique constraint means to the caller (issue 22, point 6): a unique violation
 * answers 409 in the words of its own constraint, never of another that the same operation could
 * also have hit (a payment intent's reference and its deposit address's derivation index).
 */
const UNIQUE_CONFLICTS: Record<string, string> = {
  PaymentIntent_organizationId_reference_key: 'The organization already has a payment intent with this reference.',
  DepositAddress_walletId_derivationIndex_key: "The wallet's next derivation index was taken by another allocation meanwhile; retry.",
  DepositAddress_networkId_address_key: 'The deposit address was allocated meanwhile on this network; retry.',
  DepositAddress_paymentIntentId_key: 'The payment intent has a deposit address already (one address per payment intent, ever).',
  PaymentIntent_depositAddressId_key: 'The deposit address belongs to another payment intent already.',
  Account_organizationId_reference_key: 'The organization already has an account with this reference.',
  Asset_code_key: 'An asset with this code exists already.',
  Network_name_key: 'A network with this name exists already.',
  AssetNetwork_assetId_networkId_key: 'The asset is on this network already (one asset-network per asset and network).',
  ControlledAddress_networkId_address_key: 'This address is registered already on this network.',
  AccountHolder_email_key: 'An account holder with this email already exists.',
};

/**
 * The 409 of a unique violation, by the constraint it names (UNIQUE_CONFLICTS); `fallback` for a
 * constraint without words of its own there (the caller's reading of its likeliest clash).
 */
export function uniqueConflict(e: unknown, fallback = 'A record with these values exists already.'): DomainError {
  const constraint = violatedUniqueConstraint(e);
  return new DomainError('CONFLICT', (constraint && UNIQUE_CONFLICTS[constraint]) ?? fallback);
}
