// A QR code drawn as SVG from uqr's module matrix (no canvas, no innerHTML): an authenticator app scans
// the otpauth:// URL from it.
import { encode } from 'uqr';

export function QrCode({ text, label, size = 200 }: { text: string; label: string; size?: number }) {
  const { data } = encode(text, { ecc: 'M', border: 2 });
  const cells = data.length;
  const path: string[] = [];
  data.forEach((row, y) => {
    row.forEach((dark, x) => {
      if (dark) path.push(`M${x} ${y}h1v1h-1z`);
    });
  });
  return (
    <svg
      className="qr-code"
      role="img"
      aria-label={label}
      width={size}
      height={size}
      viewBox={`0 0 ${cells} ${cells}`}
      shapeRendering="crispEdges"
    >
      <rect width={cells} height={cells} fill="#fff" />
      <path d={path.join('')} fill="#000" />
    </svg>
  );
}
