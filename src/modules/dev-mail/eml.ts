// Reads the .eml files the development mailbox holds (nodemailer's output, or any simple RFC 5322
// message): unfolded headers with RFC 2047 encoded words decoded, and the text/plain body decoded from
// quoted-printable or base64 (the first text/plain part of a multipart message). Pure, no I/O.

export interface ParsedMail {
  headers: Map<string, string>;
  text: string;
}

/** =?charset?Q|B?...?= words; adjacent words separated only by whitespace join without it. */
export function decodeWords(value: string): string {
  return value
    .replace(/(=\?[^?]+\?[QqBb]\?[^?]*\?=)\s+(?==\?)/g, '$1')
    .replace(
      /=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g,
      (_word, charset: string, encoding: string, data: string) => {
        const bytes =
          encoding.toUpperCase() === 'B'
            ? Buffer.from(data, 'base64')
            : quotedPrintableBytes(data.replace(/_/g, ' '));
        return decodeBytes(bytes, charset);
      },
    );
}

function decodeBytes(bytes: Buffer, charset: string): string {
  try {
    return new TextDecoder(charset.toLowerCase()).decode(bytes);
  } catch {
    return bytes.toString('latin1');
  }
}

function quotedPrintableBytes(text: string): Buffer {
  const soft = text.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < soft.length; i++) {
    const hex = soft.slice(i + 1, i + 3);
    if (soft[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(soft[i], 'utf8'));
    }
  }
  return Buffer.from(bytes);
}

function splitHead(raw: string): { headers: Map<string, string>; body: string } {
  const text = raw.replace(/\r\n/g, '\n');
  const end = text.indexOf('\n\n');
  const head = end < 0 ? text : text.slice(0, end);
  const headers = new Map<string, string>();
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body: end < 0 ? '' : text.slice(end + 2) };
}

function parameter(header: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}="?([^";]+)"?`, 'i').exec(header);
  return match?.[1];
}

function decodeBody(headers: Map<string, string>, body: string): string {
  const type = headers.get('content-type') ?? 'text/plain';
  const boundary = parameter(type, 'boundary');
  if (/^multipart\//i.test(type) && boundary) {
    for (const part of body.split(`--${boundary}`).slice(1)) {
      const parsed = splitHead(part.replace(/^\n/, ''));
      const partType = parsed.headers.get('content-type') ?? 'text/plain';
      if (/^(text\/plain|multipart\/)/i.test(partType)) return decodeBody(parsed.headers, parsed.body);
    }
    return '';
  }
  const charset = parameter(type, 'charset') ?? 'utf-8';
  const encoding = (headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
  if (encoding === 'quoted-printable') return decodeBytes(quotedPrintableBytes(body), charset);
  if (encoding === 'base64') return decodeBytes(Buffer.from(body.replace(/\s+/g, ''), 'base64'), charset);
  return body;
}

export function parseEml(raw: string): ParsedMail {
  const { headers, body } = splitHead(raw);
  for (const [name, value] of headers) headers.set(name, decodeWords(value));
  return { headers, text: decodeBody(headers, body).replace(/\n+$/, '\n') };
}

/** The bare addresses of an address list header ("Kassa <a@b.c>, d@e.f" → ["a@b.c", "d@e.f"]). */
export function addresses(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(',')
    .map((part) => (/<([^>]+)>/.exec(part)?.[1] ?? part).trim().toLowerCase())
    .filter(Boolean);
}
