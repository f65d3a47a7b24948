/**
 * @module Safe tar extraction, for the agent's `upload` and the client's download: one tar
 * stream extracted into a directory inside a root, fully streaming. Every entry is checked
 * before anything is written (no absolute names, no `..`, no links leading out, no hard links or
 * device files, caps on size and count; tar-extract/entries.ts); files go to temporary files
 * beside their destination, are fsynced, and are renamed into place only once the whole archive
 * has arrived (tar-extract/staging.ts). A failure or a cut connection removes every temporary
 * file and every directory the upload created, so nothing partial is ever left behind.
 *
 * The whole archive is judged before the first rename: a name holds one kind of entry, and
 * symbolic links are judged as they will resolve once every entry is in place
 * (tar-extract/links.ts). A refused archive leaves the tree exactly as it was.
 */
import * as tar from 'tar-stream';
import { createEntryPlan } from './tar-extract/entries';
import { judgeLinks, stageLinks } from './tar-extract/links';
import { createStaging, type StagingJournal } from './tar-extract/staging';
import { checkEntryName } from './tar-names';
import { OpError } from '../protocol/op-error';

export type { StagingJournal } from './tar-extract/staging';

export interface ExtractOptions {
  /** Sum of file sizes; 0 = unlimited. */
  maxBytes: number;
  maxEntries: number;
  /** Maps an entry's safe segments to where it goes (e.g. a new name for the top entry). */
  rename?: (segments: string[]) => string[];
  /** File content written so far, for progress. */
  onBytes?: (bytes: number) => void;
  /** What to call the limit in a `too_large` message. */
  limitHolder?: string;
  /** Records what is about to be created, so a process killed meanwhile can clean up later. */
  journal?: StagingJournal;
  /** Directories made for this extraction beforehand (the target's missing parents), outermost first. */
  createdDirs?: string[];
}

export interface ExtractResult {
  files: number;
  bytes: number;
}

/** How long an abort waits for the file being written to close before removing it anyway. */
const ABORT_GRACE_MS = 1000;

/** The entry's name as safe relative segments, or a OpError naming the problem. */
export function safeSegments(name: string): string[] {
  const check = checkEntryName(name);
  if (!check.ok) throw new OpError(check.problem.code, check.problem.message);
  return check.segments;
}

/**
 * Extracts a tar fed through `input()` into `targetDir` (canonical, inside `realRoot`, existing).
 * Call `commit()` after the last chunk and `abort()` on any failure.
 */
export function createExtraction(realRoot: string, targetDir: string, limits: ExtractOptions) {
  // Room for a few frames: a 16 KiB buffer (the default) would stall the socket every frame.
  const extract = tar.extract({ highWaterMark: 4 * 1024 * 1024 });
  const staging = createStaging(limits.journal, limits.createdDirs);
  let failure: unknown;
  const plan = createEntryPlan(realRoot, targetDir, staging, { onBytes: limits.onBytes, failure: () => failure });
  /** The entry being worked on (entries come one at a time) and its content stream. */
  let current: Promise<void> = Promise.resolve();
  let currentEntry: { destroy(err?: Error): void } | undefined;
  let entries = 0;
  let bytes = 0;
  const finished = new Promise<void>((resolveDone, reject) => {
    extract.on('finish', () => resolveDone());
    extract.on('error', reject);
  });
  finished.catch(() => {}); // observed through commit()

  /** Checks one entry against the limits and hands it to the plan by its type. */
  async function takeEntry(header: tar.Header, stream: NodeJS.ReadableStream): Promise<void> {
    if (failure) throw failure;
    if (++entries > limits.maxEntries) throw new OpError('too_large', `the archive has more than ${limits.maxEntries} entries`);
    const segments = limits.rename ? limits.rename(safeSegments(header.name)) : safeSegments(header.name);
    if (segments.length === 0) return; // the target directory itself
    switch (header.type) {
      case 'file':
      case 'contiguous-file': {
        bytes += header.size;
        if (limits.maxBytes > 0 && bytes > limits.maxBytes) {
          throw new OpError('too_large', `the archive exceeds ${limits.limitHolder ?? 'the'} limit of ${limits.maxBytes} bytes`);
        }
        await plan.stageFile(segments, header, stream);
        return;
      }
      case 'directory':
        await plan.ensureDir(segments);
        return;
      case 'symlink':
        await plan.planLink(segments, header);
        return;
      case 'link':
        throw new OpError('path_outside_root', `hard link ${header.name} refused: only files, directories and symbolic links are accepted`);
      default:
        throw new OpError('bad_params', `${header.type} ${header.name} refused: only files, directories and symbolic links are accepted`);
    }
  }

  extract.on('entry', function onEntry(header, stream, next) {
    currentEntry = stream;
    // An abort destroys the entry with an error, maybe before anything reads it: without a
    // listener that error would be uncaught and end the process (the failure is reported anyway).
    stream.on('error', () => {});
    const work = (current = takeEntry(header, stream as unknown as NodeJS.ReadableStream));
    work.then(
      () => {
        stream.resume(); // drain whatever an entry without content left
        next();
      },
      (err: unknown) => {
        failure ??= err;
        stream.resume();
        next(err as Error);
      },
    );
  });

  return {
    /** The writable end to feed tar bytes into (honour its backpressure). */
    input: extract as unknown as NodeJS.WritableStream,

    /**
     * Ends the input, waits for every entry, judges the archive as a whole, and moves everything
     * into place. Every refusal, and every step that creates something, comes before the first
     * rename, so a refused archive changes nothing; only the renames themselves come after.
     */
    async commit(): Promise<ExtractResult> {
      (extract as unknown as NodeJS.WritableStream).end();
      await finished;
      if (failure) throw failure;
      await judgeLinks(realRoot, plan.planned);
      const links = await stageLinks(plan.planned, staging);
      await staging.place(links);
      limits.journal?.end();
      return { files: staging.fileCount, bytes };
    },

    /** Stops extracting and removes every temporary file and created directory. */
    async abort(reason: unknown): Promise<void> {
      failure ??= reason;
      const err = reason instanceof Error ? reason : new Error(String(reason));
      extract.destroy(err);
      currentEntry?.destroy(err); // so the file being written is closed, not left waiting for data
      // Let the writer let go of its file, but never wait on a stream that does not settle.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([finished, current]), new Promise((resolve) => (timer = setTimeout(resolve, ABORT_GRACE_MS)))]);
      clearTimeout(timer);
      await staging.removeAll();
      limits.journal?.end();
    },

    /** The first problem met, if any (the caller answers with it at once). */
    get failure(): unknown {
      return failure;
    },
    extract,
  };
}
export type Extraction = ReturnType<typeof createExtraction>;
