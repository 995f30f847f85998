/** Time, injectable: every time-dependent rule reads the clock from the request context. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private t: Date = new Date()) {}
  now(): Date {
    return new Date(this.t);
  }
  set(t: Date): void {
    this.t = new Date(t);
  }
  advance(ms: number): void {
    this.t = new Date(this.t.getTime() + ms);
  }
}
