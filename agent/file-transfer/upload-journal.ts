/**
 * @module The agent's journal of uploads in progress, so an agent killed in the middle of one
 * (SIGKILL, power cut, OOM) removes what that upload left behind when it starts again.
 *
 * An upload writes to temporary files beside their destinations and creates missing directories;
 * a live agent removes them when an upload fails, but a dead one cannot. Before creating any of
 * them the agent appends a line naming it, and a last line once the upload is committed or cleaned
 * up. At start-up, every upload without that last line is undone: its temporary files removed and
 * the directories it created removed if empty. Only names the extractor itself makes
 * (`.NAME.tether-HEX.part`) are ever unlinked, so a damaged journal cannot remove user files.
 *
 * One line per event, JSON-encoded (file names may hold newlines):
 *   {"u":ID,"f":PATH}  a temporary file is about to be created
 *   {"u":ID,"d":PATH}  a directory is about to be created
 *   {"u":ID,"end":1}   the upload is committed or cleaned up
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmdirSync, unlinkSync, writeSync, ftruncateSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../../shared/log';
import type { StagingJournal } from '../../shared/files/tar-extract';

/** The journal is emptied when no upload is in progress and it has grown past this. */
const COMPACT_AT_BYTES = 1024 * 1024;
const TEMP_NAME = /^\..*\.tether-[0-9a-f]{12}\.part$/s;

export interface UploadJournal {
  /** A journal for one upload. */
  begin(): StagingJournal;
  close(): void;
}

interface Pending {
  files: string[];
  dirs: string[];
}

/** Reads what earlier runs left unfinished, as uploads. */
function unfinished(text: string): Pending[] {
  const uploads = new Map<number, Pending>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    let entry: { u?: unknown; f?: unknown; d?: unknown; end?: unknown };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line cut by the crash
    }
    if (typeof entry.u !== 'number') continue;
    let pending = uploads.get(entry.u);
    if (!pending) uploads.set(entry.u, (pending = { files: [], dirs: [] }));
    if (entry.end) uploads.delete(entry.u);
    else if (typeof entry.f === 'string') pending.files.push(entry.f);
    else if (typeof entry.d === 'string') pending.dirs.push(entry.d);
  }
  return [...uploads.values()];
}

/**
 * Opens `<stateDir>/uploads-<deviceId>.journal`, first undoing every upload an earlier run left
 * unfinished (and logging what it removed).
 */
export function openUploadJournal(stateDir: string, deviceId: string, log: Logger): UploadJournal {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = join(stateDir, `uploads-${deviceId}.journal`);
  const recovered = { files: 0, dirs: 0 };
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  for (const upload of unfinished(text)) {
    for (const path of upload.files) {
      if (!TEMP_NAME.test(basename(path))) continue;
      try {
        unlinkSync(path);
        recovered.files++;
      } catch {
        // already gone
      }
    }
    for (const dir of upload.dirs.reverse()) {
      try {
        rmdirSync(dir); // only if empty: a directory that holds anything now is somebody's
        recovered.dirs++;
      } catch {
        // not empty, or gone
      }
    }
  }
  if (recovered.files || recovered.dirs) {
    log.warn('removed what interrupted uploads left behind', { temp_files: recovered.files, directories: recovered.dirs });
  }
  // Appending (so writes after a truncation start at 0); what was in it is dealt with.
  const fd = openSync(file, 'a', 0o600);
  ftruncateSync(fd, 0);
  let nextId = 1;
  let active = 0;
  let size = 0;
  let closed = false;
  const append = (entry: object) => {
    if (closed) return;
    size += writeSync(fd, `${JSON.stringify(entry)}\n`);
  };

  return {
    begin(): StagingJournal {
      const u = nextId++;
      active++;
      let ended = false;
      return {
        file: (path) => append({ u, f: path }),
        dir: (path) => append({ u, d: path }),
        end() {
          if (ended) return;
          ended = true;
          append({ u, end: 1 });
          // Nothing in progress: the whole journal is history, start it afresh.
          if (--active === 0 && size > COMPACT_AT_BYTES && !closed) {
            ftruncateSync(fd, 0);
            size = 0;
          }
        },
      };
    },
    close(): void {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}
