// Outgoing mail: nodemailer over SMTP when KASSA_SMTP_URL is set; otherwise each message is written
// as an .eml file under <data dir>/mail/ (the development mailbox) and a line is logged naming the file.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type { Config } from '../config.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  /**
   * Appended to every "we sent you …" answer: '' when mail goes out over SMTP; otherwise where the
   * message really went (the development mailbox, or the server's mail folder), so nobody waits for it.
   */
  deliveryNote: string;
}

/** Whether the dashboard shows the development mailbox (Mail): development, and no SMTP server. */
export function devMailboxEnabled(config: Pick<Config, 'env' | 'smtpUrl'>): boolean {
  return config.env === 'development' && !config.smtpUrl;
}

/** Where file-mailbox messages are written. */
export function mailDirectory(config: Pick<Config, 'dataDir'>): string {
  return join(config.dataDir, 'mail');
}

export type MailLog = (line: string) => void;

/** The mailer the configuration asks for. Log lines never contain the message body. */
export function createMailer(
  config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'dataDir' | 'logLevel' | 'env'>,
  log: MailLog = config.logLevel === 'silent' ? () => {} : (line) => console.error(line),
): Mailer {
  if (config.smtpUrl) {
    const transport = nodemailer.createTransport(config.smtpUrl);
    return {
      async send(message) {
        await transport.sendMail({ from: config.mailFrom, ...message });
      },
      deliveryNote: '',
    };
  }
  const directory = mailDirectory(config);
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(message) {
      const info = await transport.sendMail({ from: config.mailFrom, ...message });
      await mkdir(directory, { recursive: true, mode: 0o700 });
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`;
      const file = join(directory, name);
      await writeFile(file, info.message, { mode: 0o600 });
      log(`kassa: mail "${message.subject}" to ${message.to} written to ${file}`);
    },
    deliveryNote: devMailboxEnabled(config)
      ? ' No mail server is configured, so it is in the development mailbox: open Mail in the dashboard to read it.'
      : ' No mail server is configured on this Kassa server, so the message was written to its mail folder; ask its operator for it.',
  };
}
