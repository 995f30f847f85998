export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString(undefined, { hour12: false }) : '—');
export const time = (iso: string) => new Date(iso).toLocaleTimeString(undefined, { hour12: false });
export function age(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}
/** The first `max` characters of a text (response bodies, errors). */
export const excerpt = (s: string | null | undefined, max = 200) => (!s ? '' : s.length > max ? `${s.slice(0, max)}…` : s);
export function prettyJson(s: string): string {
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch {
    return s;
  }
}
