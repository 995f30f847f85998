import { amountToString, type Amount } from '../money';

/**
 * The event catalog of the spec, exactly: 36 event types, each with its aggregate id field and the
 * key fields it lists. Bodies are the event data itself (no envelope, no type, no timestamp),
 * PascalCase; amounts are base-unit decimal strings and times ISO 8601 (UTC).
 *
 * Domain code builds an event with `webhookEvent(type, fields)` (typed per event) and emits it with
 * `emitEvent` (src/webhooks/outbox.ts) in the transaction of the change it describes.
 */
type Id = string;
export interface EventFields {
  'transaction.created': { TransactionId: Id; ApplicationId: Id; ParticipantAccountIds: Id[] };
  'transaction.funded': { TransactionId: Id };
  'transaction.reserved': { TransactionId: Id; Amount: Amount };
  'transaction.cancelled': { TransactionId: Id; Reason: string };
  'transaction.frozen': { TransactionId: Id; Reason: string; ActorMemberId: Id };
  'transaction.unfrozen': { TransactionId: Id; ActorMemberId: Id };
  'transaction.settled': { TransactionId: Id; SettlementId: Id; IsTotal: boolean };
  'transaction.refunded': { TransactionId: Id; RefundId: Id; IsTotal: boolean };
  'payment_intent.created': { PaymentIntentId: Id; TransactionId: Id; Amount: Amount; ExpiresAt: Date };
  'payment_intent.cancelled': { PaymentIntentId: Id };
  'payment_intent.expired': { PaymentIntentId: Id };
  'payment_intent.late_deposit_received': { PaymentIntentId: Id; TransactionId: Id; DepositId: Id; Amount: Amount; ExpiredAt: Date; ReceivedAt: Date };
  'deposit.address_generated': { PaymentIntentId: Id; Address: string; AssetNetworkId: Id };
  'deposit.detected': { DepositId: Id; PaymentIntentId: Id; Amount: Amount };
  'deposit.confirming': { DepositId: Id; ConfirmationCount: number };
  'deposit.confirmed': { DepositId: Id; PaymentIntentId: Id; TransactionId: Id; Amount: Amount };
  'deposit.rejected': { DepositId: Id; Reason: string };
  'deposit.reorg_frozen': { DepositId: Id; PaymentIntentId: Id; Amount: Amount };
  'deposit.under_review': { DepositId: Id; Reason: string };
  'settlement.executed': {
    SettlementId: Id;
    TransactionId: Id;
    AssetNetworkId: Id;
    GrossAmount: Amount;
    DistributableAmount: Amount;
    PlatformFeeAmount: Amount;
    ExecutedAt: Date;
  };
  'settlement.failed': { SettlementId: Id; TransactionId: Id; Reason: string; FailedAt: Date };
  /** FeePercentageApplied: a decimal string ("1.25" for 1.25%), never a float. */
  'settlement.fee_applied': { SettlementId: Id; PricingPolicyId: Id; FeeAmount: Amount; FeePercentageApplied: string };
  'settlement.split_portion_retained': { SettlementId: Id; AllocationId: Id; ParticipantId: Id; AccountId: Id; Amount: Amount; Reason: string };
  'settlement.split_portion_released': { SettlementId: Id; AllocationId: Id; AccountId: Id; Amount: Amount };
  'refund.executed': { RefundId: Id; TransactionId: Id; Amount: Amount; ExecutedAt: Date };
  'refund.rejected': { RefundId: Id; TransactionId: Id; Reason: string };
  'withdrawal.requested': { WithdrawalId: Id; AccountId: Id; Amount: Amount; WithdrawalDestinationId: Id };
  /** ActorMemberId: the operator who approved; null when the withdrawal policy approved it automatically (docs/withdrawals.md). */
  'withdrawal.approved': { WithdrawalId: Id; ActorMemberId: Id | null };
  'withdrawal.rejected': { WithdrawalId: Id; Reason: string };
  'withdrawal.cancelled': { WithdrawalId: Id };
  'withdrawal.broadcast': { WithdrawalId: Id; TechnicalReference: string };
  'withdrawal.broadcast_failed': { WithdrawalId: Id; Reason: string };
  'withdrawal.confirmed': { WithdrawalId: Id; TechnicalReference: string };
  'withdrawal.failed': { WithdrawalId: Id; Reason: string };
  'withdrawal.requires_reconciliation': { WithdrawalId: Id };
  'withdrawal_destination.registered': { WithdrawalDestinationId: Id; OrganizationId: Id; Address: string };
}
export type EventType = keyof EventFields;

/** Each event's aggregate id field, in the order of the spec's catalog table. */
export const aggregateIdField = {
  'transaction.created': 'TransactionId',
  'transaction.funded': 'TransactionId',
  'transaction.reserved': 'TransactionId',
  'transaction.cancelled': 'TransactionId',
  'transaction.frozen': 'TransactionId',
  'transaction.unfrozen': 'TransactionId',
  'transaction.settled': 'TransactionId',
  'transaction.refunded': 'TransactionId',
  'payment_intent.created': 'PaymentIntentId',
  'payment_intent.cancelled': 'PaymentIntentId',
  'payment_intent.expired': 'PaymentIntentId',
  'payment_intent.late_deposit_received': 'PaymentIntentId',
  'deposit.address_generated': 'PaymentIntentId',
  'deposit.detected': 'DepositId',
  'deposit.confirming': 'DepositId',
  'deposit.confirmed': 'DepositId',
  'deposit.rejected': 'DepositId',
  'deposit.reorg_frozen': 'DepositId',
  'deposit.under_review': 'DepositId',
  'settlement.executed': 'SettlementId',
  'settlement.failed': 'SettlementId',
  'settlement.fee_applied': 'SettlementId',
  'settlement.split_portion_retained': 'SettlementId',
  'settlement.split_portion_released': 'SettlementId',
  'refund.executed': 'RefundId',
  'refund.rejected': 'RefundId',
  'withdrawal.requested': 'WithdrawalId',
  'withdrawal.approved': 'WithdrawalId',
  'withdrawal.rejected': 'WithdrawalId',
  'withdrawal.cancelled': 'WithdrawalId',
  'withdrawal.broadcast': 'WithdrawalId',
  'withdrawal.broadcast_failed': 'WithdrawalId',
  'withdrawal.confirmed': 'WithdrawalId',
  'withdrawal.failed': 'WithdrawalId',
  'withdrawal.requires_reconciliation': 'WithdrawalId',
  'withdrawal_destination.registered': 'WithdrawalDestinationId',
} as const satisfies { [T in EventType]: keyof EventFields[T] & string };

export const eventTypes = Object.keys(aggregateIdField) as EventType[];

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(aggregateIdField, value);
}

/** A built event, ready for the outbox: its type, aggregate id and the exact body to deliver. */
export interface WebhookEventData {
  type: EventType;
  aggregateId: string;
  body: string;
}

function wire(value: unknown): unknown {
  if (typeof value === 'bigint') return amountToString(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(wire);
  return value;
}

/** Builds an event: the aggregate id first, then the key fields as given (the catalog's order). */
export function webhookEvent<T extends EventType>(type: T, fields: EventFields[T]): WebhookEventData {
  const idField = aggregateIdField[type] as string;
  const record = fields as unknown as Record<string, unknown>;
  const aggregateId = record[idField];
  if (typeof aggregateId !== 'string' || !aggregateId) throw new TypeError(`${type}: ${idField} is required`);
  const body: Record<string, unknown> = { [idField]: aggregateId };
  for (const [k, v] of Object.entries(record)) if (k !== idField) body[k] = wire(v);
  return { type, aggregateId, body: JSON.stringify(body) };
}
