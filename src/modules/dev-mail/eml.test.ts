import assert from 'node:assert/strict';
import { test } from 'node:test';
import nodemailer from 'nodemailer';
import { addresses, decodeWords, parseEml } from './eml.ts';

async function rendered(message: { to: string; subject: string; text: string; html?: string }) {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const info = await transport.sendMail({ from: 'Kassa <no-reply@kassa.local>', ...message });
  return (info.message as Buffer).toString('utf8');
}

test("nodemailer's messages read back: folded, encoded subject and quoted-printable body", async () => {
  const subject = 'Ünïcode refund code — a long subject line that nodemailer folds over several lines';
  const text = `Your refund verification code for Acme Café is 123456.\n\n${'x'.repeat(200)} = done\n`;
  const mail = parseEml(await rendered({ to: 'Owner <owner@acme.test>', subject, text }));
  assert.equal(mail.headers.get('subject'), subject);
  assert.equal(mail.text, text);
  assert.deepEqual(addresses(mail.headers.get('to')), ['owner@acme.test']);
  assert.deepEqual(addresses(mail.headers.get('from')), ['no-reply@kassa.local']);
});

test('the text part of a multipart message is the one shown', async () => {
  const mail = parseEml(
    await rendered({ to: 'a@b.test', subject: 'Hi', text: 'Plain words.\n', html: '<p>HTML words</p>' }),
  );
  assert.equal(mail.text, 'Plain words.\n');
});

test('base64 encoded words and bodies decode', () => {
  assert.equal(decodeWords('=?UTF-8?B?w5xuaWNvZGU=?= =?UTF-8?Q?_ok?='), 'Ünicode ok');
  const raw = `To: a@b.test\nSubject: x\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n${Buffer.from('Grüße\n').toString('base64')}\n`;
  assert.equal(parseEml(raw).text, 'Grüße\n');
});
