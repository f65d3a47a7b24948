/**
 * @module "Did you mean …?": the known name nearest to a mistyped one, by Damerau–Levenshtein
 * distance (optimal string alignment: insertions, deletions, substitutions and swaps of two
 * neighbours each cost 1), ignoring case. Used where a misspelled setting must be named.
 */

/** Edits that turn `a` into `b`; a swap of two neighbouring characters counts as one. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate nearest to `name`, if it is near enough to be a likely typo: at most 2 edits,
 * or a third of the name's length for long names. Ties go to the first candidate.
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  const wanted = name.toUpperCase();
  const limit = Math.max(2, Math.floor(wanted.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, candidate.toUpperCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}
