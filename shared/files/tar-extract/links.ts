/**
 * @module The symbolic links of an archive, judged as a whole before the first rename: each one
 * as it will resolve once every entry is in place (the tree on disk overlaid with the archive,
 * judged by `linkProblem` in tar-names.ts), since a link may lead through another one the same
 * archive makes later. Then each is made under a temporary name, so placing it is a rename too.
 */
import { lstat, readlink, realpath } from 'node:fs/promises';
import { basename } from 'node:path';
import { linkProblem, type NodeKind, type TreeView } from '../tar-names';
import { OpError } from '../../protocol/op-error';
import type { Planned, PlannedLink } from './entries';
import type { Staging, StagedName } from './staging';

/** What is on disk at `path`, not following a link there. */
async function diskKind(path: string): Promise<NodeKind> {
  try {
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) return 'link';
    if (stats.isDirectory()) return 'dir';
    return stats.isFile() ? 'file' : 'other';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    throw err;
  }
}

/** The tree once every entry is in place: what is on disk, overlaid with the archive. */
function finalTree(planned: ReadonlyMap<string, Planned>): TreeView {
  return {
    kindOf: async (path) => planned.get(path)?.kind ?? diskKind(path),
    linkTarget: async (path) => {
      const entry = planned.get(path);
      return entry?.kind === 'link' ? entry.target : readlink(path);
    },
  };
}

function plannedLinks(planned: ReadonlyMap<string, Planned>): PlannedLink[] {
  return [...planned.values()].filter((p): p is PlannedLink => p.kind === 'link');
}

/** Refuses the archive if any of its links could lead outside the root (see linkProblem). */
export async function judgeLinks(realRoot: string, planned: ReadonlyMap<string, Planned>): Promise<void> {
  const tree = finalTree(planned);
  for (const link of plannedLinks(planned)) {
    const problem = await linkProblem(realRoot, link.dir, link.target, tree);
    if (problem) throw new OpError('path_outside_root', `symbolic link ${link.name} -> ${link.target} ${problem.reason}`, { namesRoot: problem.namesRoot });
  }
}

/** Makes each planned link under a temporary name beside it; returns what to rename where. */
export async function stageLinks(planned: ReadonlyMap<string, Planned>, staging: Staging): Promise<StagedName[]> {
  const staged: StagedName[] = [];
  for (const link of plannedLinks(planned)) {
    const temp = await staging.makeLink(link.dir, basename(link.final), link.target);
    // The directory swapped for a link leading out since it was checked would show here.
    if ((await realpath(link.dir)) !== link.dir) {
      throw new OpError('path_outside_root', `symbolic link ${link.name}: its directory moved while the archive arrived`);
    }
    staged.push({ temp, final: link.final });
  }
  return staged;
}
