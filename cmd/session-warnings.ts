/** @module The setting TETHER_SESSION_WARNINGS (docs/settings.md), parsed once with the other settings. */
import { z } from 'zod';

/**
 * Seconds before a session's end at which its stream's client and the event streams are warned:
 * comma-separated, each 1 to 28800, at most 10; `none` for no warnings.
 */
export const sessionWarnings = z
  // A YAML file may say `300` or `[300, 60]` as well.
  .preprocess((v) => (typeof v === 'number' ? String(v) : Array.isArray(v) ? v.join(',') : v), z.string())
  .default('300,60')
  .transform((text, ctx) => {
    if (text.trim() === 'none') return [];
    const items = text.split(',').map((s) => s.trim());
    const bad = items.filter((s) => !/^\d{1,5}$/.test(s) || Number(s) < 1 || Number(s) > 28_800);
    if (bad.length > 0 || items.length > 10) {
      ctx.addIssue({ code: 'custom', message: 'must be up to 10 whole numbers of seconds (1 to 28800), comma-separated, e.g. 300,60; or none' });
      return z.NEVER;
    }
    return [...new Set(items.map(Number))].sort((a, b) => b - a);
  });
