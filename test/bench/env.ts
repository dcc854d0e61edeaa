/** A whole-number knob of the bench from the environment, checked against its range (the fallback when unset). */
export function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be a whole number in ${min}..${max} (got "${raw}")`);
  return n;
}
