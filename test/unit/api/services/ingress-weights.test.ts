/**
 * The canary's weights (api/services/docker/ingress/weights.ts), exhaustively over small counts
 * and every percent: exact shares, HAProxy's weight range, no idle server unless exactness
 * needs one, and the shortest round-robin cycle that is exact.
 */
import { describe, expect, it } from 'vitest';
import { groupTotals, MAX_WEIGHT, splitWeights } from '../../../../api/services/docker/ingress/weights';

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const MAX_COUNT = 12;

/** Every (stable count, canary count, percent) with both counts up to MAX_COUNT. */
function* cases() {
  for (let s = 0; s <= MAX_COUNT; s++) for (let c = 0; c <= MAX_COUNT; c++) for (let w = 0; w <= 100; w++) yield { s, c, w };
}

function weightsOf(s: number, c: number, w: number) {
  const weights = splitWeights(names('s', s), names('c', c), w);
  return { stable: names('s', s).map((n) => weights.get(n)!), canary: names('c', c).map((n) => weights.get(n)!), weights };
}

describe('splitWeights', () => {
  it('gives the canary exactly the percent of every round-robin cycle, with weights 0–256', () => {
    const wrong: string[] = [];
    for (const { s, c, w } of cases()) {
      const { stable, canary, weights } = weightsOf(s, c, w);
      const [S, C] = [sum(stable), sum(canary)];
      // A group without servers cannot take its share: the other one takes everything.
      const share = c === 0 ? 0 : s === 0 ? 100 : w;
      const inRange = [...stable, ...canary].every((x) => Number.isInteger(x) && x >= 0 && x <= MAX_WEIGHT);
      const exact = s + c === 0 ? S + C === 0 : S + C > 0 && C * 100 === share * (S + C);
      if (weights.size !== s + c || !inRange || !exact) wrong.push(`${s} stable, ${c} canary, ${w} %: ${stable} / ${canary}`);
    }
    expect(wrong).toEqual([]);
  });

  it('spreads a group evenly (weights differ by at most 1) and idles a server only when exactness needs it', () => {
    for (const { s, c, w } of cases()) {
      const { stable, canary } = weightsOf(s, c, w);
      for (const group of [stable, canary]) if (group.length > 0) expect(Math.max(...group) - Math.min(...group)).toBeLessThanOrEqual(1);
      if (s === 0 && c === 0) continue;
      const share = c === 0 ? 0 : s === 0 ? 100 : w;
      // Brute force over cycle lengths: is there an exact split giving every server of a group with a share 1–256?
      let feasible = false;
      for (let total = 1; total <= MAX_WEIGHT * (s + c) && !feasible; total++) {
        const C = (total * share) / 100;
        const S = total - C;
        feasible = Number.isInteger(C) && (share === 0 || (C >= c && C <= MAX_WEIGHT * c)) && (share === 100 || (S >= s && S <= MAX_WEIGHT * s));
      }
      const idle = [...(share === 0 ? [] : canary), ...(share === 100 ? [] : stable)].filter((x) => x === 0).length;
      if (feasible) expect(idle, `${s} stable, ${c} canary, ${w} %`).toBe(0);
      else expect(idle, `${s} stable, ${c} canary, ${w} %`).toBeGreaterThan(0);
    }
  });

  it('keeps the cycle as short as an exact split with every server busy allows', () => {
    for (const { s, c, w } of cases()) {
      if (s === 0 || c === 0) continue;
      const { stable, canary } = weightsOf(s, c, w);
      if ([...(w === 0 ? [] : canary), ...(w === 100 ? [] : stable)].includes(0)) continue;
      const cycle = sum(stable) + sum(canary);
      // No shorter total splits exactly with at least one request per busy server.
      let shorter: number | undefined;
      for (let total = 1; total < cycle && shorter === undefined; total++) {
        const C = (total * w) / 100;
        if (Number.isInteger(C) && (w === 0 || C >= c) && (w === 100 || total - C >= s)) shorter = total;
      }
      expect(shorter, `${s} stable, ${c} canary, ${w} %: cycle ${cycle}`).toBeUndefined();
    }
  });

  it('halts with 0, promotes with 100, and splits the groups percent : (100 − percent) in the fewest parts', () => {
    expect(weightsOf(3, 2, 0)).toMatchObject({ stable: [1, 1, 1], canary: [0, 0] });
    expect(weightsOf(3, 2, 100)).toMatchObject({ stable: [0, 0, 0], canary: [1, 1] });
    expect(weightsOf(4, 1, 20)).toMatchObject({ stable: [1, 1, 1, 1], canary: [1] });
    expect(weightsOf(1, 1, 20)).toMatchObject({ stable: [4], canary: [1] });
    // 37 : 63 parts; equal weights per group would need 74 : 126, a cycle twice as long.
    expect(weightsOf(3, 2, 37)).toMatchObject({ stable: [21, 21, 21], canary: [19, 18] });
    expect(weightsOf(2, 0, 50)).toMatchObject({ stable: [1, 1], canary: [] });
    expect(weightsOf(0, 2, 50)).toMatchObject({ stable: [], canary: [1, 1] });
    // 1 % with three canary servers and one stable: 99 stable parts fit in one server, so only
    // one canary server can be busy (weights 1 : 99 make exactly 1 %).
    expect(weightsOf(1, 3, 1)).toMatchObject({ stable: [198], canary: [1, 1, 0] });
  });

  it('refuses a percent outside 0–100 or not whole, and a name used twice', () => {
    for (const bad of [-1, 101, 20.5, Number.NaN]) expect(() => splitWeights(['a'], ['b'], bad)).toThrow(RangeError);
    expect(() => splitWeights(['a'], ['a'], 10)).toThrow(RangeError);
    expect(groupTotals(0, 0, 30)).toEqual({ stable: 0, canary: 0 });
  });
});
