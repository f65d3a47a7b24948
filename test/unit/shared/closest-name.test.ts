/** "Did you mean …?": edit distances with swaps, and only near names suggested. */
import { describe, expect, it } from 'vitest';
import { closestName, editDistance } from '../../../shared/closest-name';

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions, and a swap of neighbours as one edit', () => {
    expect(editDistance('LISTEN', 'LISTEN')).toBe(0);
    expect(editDistance('LISTN', 'LISTEN')).toBe(1);
    expect(editDistance('LISTEN', 'LISTN')).toBe(1);
    expect(editDistance('LISTEM', 'LISTEN')).toBe(1);
    expect(editDistance('LSITEN', 'LISTEN')).toBe(1);
    expect(editDistance('', 'ABC')).toBe(3);
    expect(editDistance('KITTEN', 'SITTING')).toBe(3);
  });
});

describe('closestName', () => {
  const names = ['LISTEN', 'DATA_DIR', 'LOG_LEVEL', 'LOG_DIRS'];

  it('picks the nearest name, ignoring case', () => {
    expect(closestName('listen', names)).toBe('LISTEN');
    expect(closestName('DATADIR', names)).toBe('DATA_DIR');
    expect(closestName('LOG_LEVLE', names)).toBe('LOG_LEVEL');
    expect(closestName('LOG_DIR', names)).toBe('LOG_DIRS');
  });

  it('suggests nothing when no name is near', () => {
    expect(closestName('COLOUR', names)).toBeUndefined();
    expect(closestName('PORT', names)).toBeUndefined();
    expect(closestName('X', [])).toBeUndefined();
  });
});
