import { appendFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from './config';

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

/**
 * SMTP mailer (nodemailer, SMTP_URL). `send` hands the mail over and returns at once: the caller's
 * answer takes the same time whether a mail leaves or not (password reset tells nobody who is
 * registered), and an unreachable mail server does not fail the request that already committed its
 * token. A failure is logged (code and message, never the body: it holds a token); the user asks again.
 */
export function smtpMailer(url: string, from: string, log: Logger): Mailer {
  const transport = nodemailer.createTransport(url);
  return {
    async send(mail) {
      transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text }).catch((err: { code?: string; message?: string }) => {
        log.error({ mail: { kind: mail.data?.kind, subject: mail.subject }, err: { code: err.code, message: err.message } }, 'mail not sent');
      });
    },
  };
}

/** The mailer of a process: SMTP when SMTP_URL is set (required in production), else the file mailer. */
export function createMailer(config: Config, log: Logger): Mailer {
  return config.SMTP_URL ? smtpMailer(config.SMTP_URL, config.MAIL_FROM, log) : fileMailer(config.DATA_DIR);
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
