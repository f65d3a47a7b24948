/** A session recording for the unit tests: its file in a temp dir, its log quiet, its clock fixed; and the cast it wrote. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { SessionRecording, type RecordingOptions } from '../../api/recordings/session-recording';
import type { RecordingProgress } from '../../api/store/recordings';
import { createLogger } from '../../shared/log';
import { parseCastStrict, type StrictCast } from './asciicast';
import { tempDir } from './temp';

/** A recording of session `sessionId` by ann on device dev, opened 2026-01-01; `options` override any of that. */
export function unitRecording(sessionId: string, options: Partial<RecordingOptions> = {}) {
  const path = join(tempDir('tether-rec-unit-'), 'cast.gz');
  /** What the recording reported, in order. */
  const progress: RecordingProgress[] = [];
  const rec = new SessionRecording({
    sessionId,
    deviceId: 'dev',
    username: 'ann',
    path,
    startedAt: Date.UTC(2026, 0, 1),
    recordInput: false,
    maxStoredBytes: 1 << 30,
    log: createLogger({ level: 'error', write: () => {} }),
    onProgress: async (p) => {
      progress.push(p);
    },
    now: () => Date.UTC(2026, 0, 1, 0, 1),
    ...options,
  });
  /** The cast the file holds, as text. */
  const castText = (): string => gunzipSync(readFileSync(path)).toString('utf8');
  /** The cast the file holds, checked against the asciicast v2 format. */
  const cast = (): StrictCast => parseCastStrict(castText());
  return { rec, progress, castText, cast };
}
