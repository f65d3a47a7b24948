/**
 * @module Where an extraction's files wait until the whole archive is judged: temporary names
 * beside their destinations, each told to the journal before it is created. At commit they are
 * renamed into place and the renames made durable; on failure they are all removed, with every
 * directory the extraction made, so nothing partial is left behind.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, mkdir, open, rename, rmdir, symlink, unlink, utimes } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * Told about every temporary file and directory before it is created, so a process killed
 * meanwhile can remove them when it starts again (the agent's file-transfer/upload-journal.ts).
 */
export interface StagingJournal {
  file(path: string): void;
  dir(path: string): void;
  /** The extraction is committed or cleaned up. */
  end(): void;
}

/** A file written under a temporary name, renamed to `final` at commit. */
export interface StagedFile {
  temp: string;
  final: string;
  mode: number;
  mtime: Date;
}

/** Something made under a temporary name (a symbolic link), renamed to `final` at commit. */
export interface StagedName {
  temp: string;
  final: string;
}

/** Temporary names beside the destination; the upload journal recognises exactly these. */
function tempNameFor(dir: string, base: string): string {
  return join(dir, `.${base.slice(0, 200)}.tether-${randomBytes(6).toString('hex')}.part`);
}

/**
 * The staging area of one extraction. `createdBefore`: directories made for it beforehand (the
 * target's missing parents), outermost first; they are removed with it.
 */
export function createStaging(journal: StagingJournal | undefined, createdBefore: readonly string[] = []) {
  const files: StagedFile[] = [];
  const tempLinks: string[] = [];
  const createdDirs: string[] = [...createdBefore];

  /** A fresh temporary name for `base` in `dir`, journaled before anything creates it. */
  function tempName(dir: string, base: string): string {
    const temp = tempNameFor(dir, base);
    journal?.file(temp);
    return temp;
  }

  /** Makes a directory for this extraction: journaled first, removed if the extraction fails. */
  async function makeDir(path: string): Promise<void> {
    journal?.dir(path);
    await mkdir(path, { mode: 0o755 });
    createdDirs.push(path);
  }

  /** A file being written under its temporary name: from now on a failure removes it. */
  function addFile(file: StagedFile): void {
    files.push(file);
  }

  /** Makes a symbolic link under a temporary name beside `base` in `dir`; returns that name. */
  async function makeLink(dir: string, base: string, target: string): Promise<string> {
    const temp = tempName(dir, base);
    tempLinks.push(temp);
    await symlink(target, temp);
    return temp;
  }

  /**
   * Gives the files their modes and times, renames them and `links` into place, and makes the
   * renames themselves durable. Everything that can be refused has been by now: only renames.
   */
  async function place(links: readonly StagedName[]): Promise<void> {
    for (const file of files) {
      await chmod(file.temp, file.mode || 0o644);
      await utimes(file.temp, file.mtime, file.mtime);
    }
    const dirs = new Set<string>();
    for (const file of files) {
      await rename(file.temp, file.final);
      dirs.add(dirname(file.final));
    }
    for (const link of links) {
      await rename(link.temp, link.final);
      dirs.add(dirname(link.final));
    }
    for (const dir of dirs) {
      const handle = await open(dir, constants.O_RDONLY).catch(() => undefined);
      await handle?.sync().catch(() => {});
      await handle?.close();
    }
  }

  /** Removes every temporary file and link, then the directories made, innermost first. */
  async function removeAll(): Promise<void> {
    for (const file of files) await unlink(file.temp).catch(() => {});
    for (const temp of tempLinks) await unlink(temp).catch(() => {});
    for (const dir of createdDirs.slice().reverse()) await rmdir(dir).catch(() => {});
  }

  return {
    tempName,
    makeDir,
    addFile,
    makeLink,
    place,
    removeAll,
    /** Files staged so far. */
    get fileCount(): number {
      return files.length;
    },
  };
}
export type Staging = ReturnType<typeof createStaging>;
