/** Tar archives for the tests: packing a local tree, crafting hostile entries, extracting. */
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import * as tar from 'tar-stream';

type Header = Partial<tar.Header> & { name: string };

async function collect(pack: tar.Pack): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A tar of the given entries, in order. */
export async function tarOf(entries: Array<{ header: Header; content?: Buffer | string }>): Promise<Buffer> {
  const pack = tar.pack();
  const done = collect(pack);
  for (const e of entries) {
    await new Promise<void>((resolve, reject) => {
      pack.entry(e.header, e.content ?? '', (err) => (err ? reject(err) : resolve()));
    });
  }
  pack.finalize();
  return done;
}

/** A tar of a local directory tree, names relative to its parent (as `download` makes them). */
export async function tarOfTree(dir: string): Promise<Buffer> {
  const base = dirname(dir);
  const entries: Array<{ header: Header; content?: Buffer }> = [];
  const walk = (path: string) => {
    const name = relative(base, path);
    const s = lstatSync(path);
    if (s.isSymbolicLink()) entries.push({ header: { name, type: 'symlink', linkname: readlinkSync(path) } });
    else if (s.isDirectory()) {
      entries.push({ header: { name: `${name}/`, type: 'directory', mode: 0o755 } });
      for (const child of readdirSync(path).sort()) walk(join(path, child));
    } else entries.push({ header: { name, type: 'file', mode: s.mode & 0o777 }, content: readFileSync(path) });
  };
  walk(dir);
  return tarOf(entries);
}

/** Extracts a (trusted) tar into `dir`. */
export async function extractInto(archive: Buffer, dir: string): Promise<string[]> {
  const extract = tar.extract();
  const names: string[] = [];
  const done = (async () => {
    for await (const entry of extract) {
      const h = entry.header;
      names.push(h.name);
      const target = join(dir, h.name);
      if (h.type === 'directory') mkdirSync(target, { recursive: true });
      else if (h.type === 'symlink') {
        mkdirSync(dirname(target), { recursive: true });
        symlinkSync(h.linkname, target);
      } else {
        const chunks: Buffer[] = [];
        for await (const c of entry as AsyncIterable<Buffer>) chunks.push(c);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, Buffer.concat(chunks));
        continue;
      }
      entry.resume();
    }
  })();
  extract.end(archive);
  await done;
  return names;
}

/** `relative path -> sha256 | "-> target" | "dir"` of every entry below `dir`. */
export function treeDigest(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (path: string) => {
    for (const child of readdirSync(path).sort()) {
      const full = join(path, child);
      const rel = relative(dir, full);
      const s = lstatSync(full);
      if (s.isSymbolicLink()) out[rel] = `-> ${readlinkSync(full)}`;
      else if (s.isDirectory()) {
        out[rel] = 'dir';
        walk(full);
      } else out[rel] = createHash('sha256').update(readFileSync(full)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

/**
 * Every symbolic link below `root` (found without following links) that the kernel resolves to
 * a place outside it, as `relative path -> where it leads`. Dangling and looping links lead nowhere.
 */
export function linksLeadingOut(root: string): string[] {
  const realRoot = realpathSync.native(root);
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const child of readdirSync(dir).sort()) {
      const full = join(dir, child);
      const s = lstatSync(full);
      if (s.isDirectory()) walk(full);
      if (!s.isSymbolicLink()) continue;
      let real: string;
      try {
        real = realpathSync.native(full); // the kernel's answer: fs.realpathSync resolves `..` lexically
      } catch {
        continue;
      }
      const rel = relative(realRoot, real);
      if (rel === '..' || rel.startsWith('../') || isAbsolute(rel)) out.push(`${relative(root, full)} -> ${real}`);
    }
  };
  walk(root);
  return out;
}
