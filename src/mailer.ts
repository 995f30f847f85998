import { appendFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

/** Outgoing mail (password reset, member invitations). Mail bodies carry one-time tokens: never log them. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** Machine-readable parts, such as the token, for the capture mailer of tests. */
  data?: Record<string, string>;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/** Development mailer: appends each mail as a JSON line to <DATA_DIR>/mailbox.jsonl (git-ignored, local only). */
export function fileMailer(dataDir: string): Mailer {
  return {
    async send(mail) {
      mkdirSync(dataDir, { recursive: true });
      appendFileSync(resolve(dataDir, 'mailbox.jsonl'), JSON.stringify({ at: new Date().toISOString(), ...mail }) + '\n', { mode: 0o600 });
    },
  };
}

/** Test mailer: keeps what was sent. */
export class CaptureMailer implements Mailer {
  sent: Mail[] = [];
  async send(mail: Mail) {
    this.sent.push(mail);
  }
  last(to: string): Mail | undefined {
    return [...this.sent].reverse().find((m) => m.to === to);
  }
}
