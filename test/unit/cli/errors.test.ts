import { describe, expect, it } from 'vitest';
import { CliError, usageError } from '../../../cli/errors';

describe('CliError', () => {
  it('carries its code as data; a usage mistake exits 2, everything else 1', () => {
    expect(usageError('which server?')).toMatchObject({ code: 'usage', exitCode: 2, message: 'which server?' });
    expect(new CliError('gone', 'not_found')).toMatchObject({ code: 'not_found', exitCode: 1, name: 'CliError' });
  });
});
