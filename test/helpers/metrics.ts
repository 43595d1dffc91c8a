/** The sum of the samples of metric `name` in a Prometheus text exposition whose labels include all of `labels`. */
export function sample(exposition: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    if (Object.entries(labels).every(([key, value]) => match[2]?.includes(`${key}="${value}"`))) sum += Number(match[3]);
  }
  return sum;
}
