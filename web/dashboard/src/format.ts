// Display formatting. Amounts stay decimal strings everywhere else; they become numbers only here,
// to be printed.

const moneyFormats = new Map<string, Intl.NumberFormat>();

export function money(amount: string | number | null | undefined, currency = 'USD'): string {
  if (amount === null || amount === undefined || amount === '') return '—';
  const value = typeof amount === 'number' ? amount : Number(amount);
  if (!Number.isFinite(value)) return String(amount);
  let format = moneyFormats.get(currency);
  if (!format) {
    try {
      format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    } catch {
      format = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    }
    moneyFormats.set(currency, format);
  }
  return format.format(value);
}

// Times are shown in the organization's time zone (Settings), with the zone's name, so that "2:15 PM"
// is never ambiguous. Until the organization is loaded, the zone remembered from the last visit is used.
let timeZone = 'UTC';
let dateTimeFormat = makeDateTimeFormat(timeZone);
let dayFormat = makeDayFormat(timeZone);

function makeDateTimeFormat(zone: string) {
  return new Intl.DateTimeFormat(undefined, {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone: zone,
  });
}

function makeDayFormat(zone: string) {
  return new Intl.DateTimeFormat('en-CA', {
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    timeZone: zone,
  });
}

const zoneNames = new Map<string, string>();

/** The zone's short name at `date` ("UTC", "GMT+2", "EST"). */
function zoneName(date: Date): string {
  const key = `${timeZone}|${date.getUTCFullYear()}-${date.getUTCMonth()}`;
  let name = zoneNames.get(key);
  if (name === undefined) {
    const part = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'short' })
      .formatToParts(date)
      .find((piece) => piece.type === 'timeZoneName');
    name = part?.value ?? timeZone;
    zoneNames.set(key, name);
  }
  return name;
}

/** Sets the zone every time is shown in (an IANA name the browser knows; anything else keeps UTC). */
export function setDisplayTimeZone(zone: string): void {
  try {
    dateTimeFormat = makeDateTimeFormat(zone);
    dayFormat = makeDayFormat(zone);
    timeZone = zone;
  } catch {
    timeZone = 'UTC';
    dateTimeFormat = makeDateTimeFormat(timeZone);
    dayFormat = makeDayFormat(timeZone);
  }
}

export function displayTimeZone(): string {
  return timeZone;
}

/** "Mar 3, 2026, 2:15 PM UTC": the instant in the organization's time zone, with the zone. */
export function dateTime(value: string | null | undefined): string {
  if (!value) return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : `${dateTimeFormat.format(date)} ${zoneName(date)}`;
}

/** The calendar day (yyyy-mm-dd) of an instant in the organization's time zone. */
export function dayOf(value: string | Date): string {
  return dayFormat.format(typeof value === 'string' ? new Date(value) : value);
}

/** "Mar 3" for a yyyy-mm-dd day. */
export function shortDay(day: string): string {
  return new Date(`${day}T12:00:00Z`).toLocaleDateString(undefined, {
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
}

/** The day `offset` days after the yyyy-mm-dd `day`. */
export function addDays(day: string, offset: number): string {
  return new Date(Date.parse(`${day}T12:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);
}

/** How far the zone's wall clock is ahead of UTC at the instant `time` (ms). */
function zoneOffset(time: number): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
      .formatToParts(new Date(time))
      .map((part) => [part.type, Number(part.value)]),
  );
  const wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return wall - Math.floor(time / 1000) * 1000;
}

/** The instant the organization's wall clock reads `day` at `clock` (ms into the day). */
function zonedInstant(day: string, clock: number): number {
  const [year, month, date] = day.split('-').map(Number);
  const wall = Date.UTC(year, month - 1, date) + clock;
  const first = wall - zoneOffset(wall);
  // Near a daylight-saving change the offset at the answer can differ from the first guess's.
  return wall - zoneOffset(first);
}

export function titleCase(value: string): string {
  const spaced = value.replace(/[_.]+/g, ' ');
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

/** A date input's yyyy-mm-dd as the ISO instant that starts (or ends) that day in the organization's zone. */
export function dayBoundary(day: string, end: boolean): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  return new Date(zonedInstant(day, end ? 86_400_000 - 1 : 0)).toISOString();
}

/** A datetime-local input's value (the organization's wall clock) as an ISO instant, or null when empty. */
export function localInputToIso(value: string): string | null {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})$/.exec(value);
  if (!match) return null;
  return new Date(zonedInstant(match[1], (Number(match[2]) * 60 + Number(match[3])) * 60_000)).toISOString();
}

/** An ISO instant as a datetime-local input's value on the organization's wall clock. */
export function isoToLocalInput(value: string | null | undefined): string {
  if (!value) return '';
  const time = Date.parse(value);
  if (Number.isNaN(time)) return '';
  return new Date(time + zoneOffset(time)).toISOString().slice(0, 16);
}
