import { DomainError } from '../errors';
import type { Clock } from '../clock';

/**
 * Failed-attempt limiter for credential guessing (logins, refresh, password reset): at most
 * `limit` failures per key in a sliding `windowMs`. In-process: each API instance counts alone,
 * which bounds guessing per instance; a shared store is the step for many instances.
 */
export class RateLimiter {
  private failures = new Map<string, number[]>();
  constructor(
    private clock: Clock,
    private limit = 10,
    private windowMs = 15 * 60_000,
  ) {}

  private recent(key: string): number[] {
    const now = this.clock.now().getTime();
    const list = (this.failures.get(key) ?? []).filter((t) => now - t < this.windowMs);
    if (list.length) this.failures.set(key, list);
    else this.failures.delete(key);
    return list;
  }

  /** Throws RATE_LIMITED when the key has used up its failures. */
  check(key: string): void {
    const list = this.recent(key);
    if (list.length >= this.limit) {
      const retryAfterSeconds = Math.ceil((list[0]! + this.windowMs - this.clock.now().getTime()) / 1000);
      throw new DomainError('RATE_LIMITED', 'Too many failed attempts; try again later.', { retryAfterSeconds });
    }
  }

  fail(key: string): void {
    this.recent(key);
    const list = this.failures.get(key) ?? [];
    list.push(this.clock.now().getTime());
    this.failures.set(key, list);
  }

  reset(key: string): void {
    this.failures.delete(key);
  }
}
