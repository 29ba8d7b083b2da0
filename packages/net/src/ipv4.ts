/**
 * IPv4 addresses as unsigned 32-bit numbers: the compact form the proxy
 * parser, the reserved-range check and the geo lookups share.
 */

/**
 * Parses a dotted quad (`1.2.3.4`) into an unsigned 32-bit number, or -1.
 * Each octet is 1-3 decimal digits with a value of at most 255; leading zeros
 * are read as decimal (`010` is 10, never octal) and vanish in the canonical
 * form. Anything else (`1.2.3`, `1.2.3.4.5`, `0x7f.1.1.1`, `256.1.1.1`) is -1.
 */
export function parseIpv4(text: string): number {
  const length = text.length;
  if (length < 7 || length > 15) return -1;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) {
      if (digits === 3) return -1;
      octet = octet * 10 + (code - 48);
      digits++;
    } else if (code === 46) {
      if (digits === 0 || octet > 255 || dots === 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0 || octet > 255) return -1;
  return value * 256 + octet;
}

/** The canonical dotted quad of an unsigned 32-bit number. */
export function formatIpv4(value: number): string {
  return `${Math.floor(value / 16777216) % 256}.${Math.floor(value / 65536) % 256}.${Math.floor(value / 256) % 256}.${value % 256}`;
}
