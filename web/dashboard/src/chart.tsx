// A bar chart of amounts per day as inline SVG, with the same figures as a table for screen readers.
import { money, shortDay } from './format.ts';

export interface DayTotal {
  /** yyyy-mm-dd in the organization's time zone. */
  day: string;
  amount: number;
  count: number;
}

const WIDTH = 640;
const HEIGHT = 200;
const PAD = { top: 12, right: 8, bottom: 24, left: 56 };

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

export function VolumeChart({
  days,
  currency,
  label,
}: {
  days: DayTotal[];
  currency: string;
  label: string;
}) {
  const max = niceMax(Math.max(0, ...days.map((day) => day.amount)));
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotWidth / Math.max(1, days.length);
  const barWidth = Math.max(2, slot * 0.7);
  const y = (amount: number) => PAD.top + plotHeight - (amount / max) * plotHeight;
  const total = days.reduce((sum, day) => sum + day.amount, 0);
  const labelEvery = Math.max(1, Math.ceil(days.length / 6));
  const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });

  return (
    <figure className="chart">
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        role="img"
        aria-label={`${label}: ${money(total, currency)} over ${days.length} days`}
      >
        {[0, 0.5, 1].map((fraction) => (
          <g key={fraction}>
            <line
              x1={PAD.left}
              x2={WIDTH - PAD.right}
              y1={y(max * fraction)}
              y2={y(max * fraction)}
              className="chart-grid"
            />
            <text x={PAD.left - 6} y={y(max * fraction) + 4} textAnchor="end" className="chart-label">
              {compact.format(max * fraction)}
            </text>
          </g>
        ))}
        {days.map((day, index) => {
          const x = PAD.left + index * slot + (slot - barWidth) / 2;
          const top = y(day.amount);
          return (
            <g key={day.day}>
              {day.amount > 0 ? (
                <rect
                  x={x}
                  y={top}
                  width={barWidth}
                  height={PAD.top + plotHeight - top}
                  className="chart-bar"
                >
                  <title>{`${shortDay(day.day)}: ${money(day.amount, currency)} (${day.count} payments)`}</title>
                </rect>
              ) : null}
              {index % labelEvery === 0 ? (
                <text x={x + barWidth / 2} y={HEIGHT - 6} textAnchor="middle" className="chart-label">
                  {shortDay(day.day)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption>
        {label}: <strong>{money(total, currency)}</strong> in {days.reduce((n, day) => n + day.count, 0)} paid
        payments.
      </figcaption>
      <details className="chart-data">
        <summary>Show the figures as a table</summary>
        <table>
          <caption className="visually-hidden">{label} per day</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col">Paid volume</th>
              <th scope="col">Payments</th>
            </tr>
          </thead>
          <tbody>
            {days
              .filter((day) => day.count > 0)
              .map((day) => (
                <tr key={day.day}>
                  <td>{shortDay(day.day)}</td>
                  <td>{money(day.amount, currency)}</td>
                  <td>{day.count}</td>
                </tr>
              ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
