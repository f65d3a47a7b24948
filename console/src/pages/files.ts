/**
 * @module A device's files, through a file-transfer session that lives as long as the page:
 * browse a directory, download a file (the browser reads the tar stream itself), upload files
 * by drag and drop or by choosing them, with progress (the browser writes the tar stream: the
 * transfers are in files/transfers.ts). Paths are relative to the agent's files root.
 */
import type { Session } from '../../../shared/api/sessions';
import type { FileEntry } from '../../../shared/protocol/session-stream';
import { api } from '../api';
import { errorBox, formatBytes, h, replace, table } from '../dom';
import type { Cleanup } from '../page';
import { askInPage, openSession, SessionStream } from '../session-stream';
import { fileTransfers, join } from './files/transfers';

export async function filesPage(root: HTMLElement, [id]: string[], query: URLSearchParams): Promise<Cleanup> {
  let path = query.get('path') || '/';
  const where = h('p', { id: 'files-path' });
  const listing = h('div', { id: 'files-list' }, h('p', { class: 'muted' }, 'Opening a file-transfer session…'));
  const progress = h('progress', { id: 'upload-progress', max: 1, value: 0, hidden: true });
  const news = h('p', { id: 'files-status', role: 'status', 'aria-live': 'polite' });
  // Usable once the page's file-transfer stream is open (below): a file picked before would be lost.
  const picker = h('input', { type: 'file', id: 'upload-input', multiple: true, disabled: true, 'aria-label': 'Files to upload' });
  const drop = h('div', { class: 'drop', id: 'drop-zone', tabindex: 0 }, 'Drop files here to upload them to this directory, or ', picker);
  replace(root, h('h1', {}, 'Files on ', h('a', { href: `#/devices/${encodeURIComponent(id!)}` }, id!)), where, drop, progress, news, listing);

  let session: Session;
  try {
    session = await openSession(id!, 'file-transfer', askInPage(listing, id!, 'file-transfer'));
  } catch (err) {
    replace(listing, errorBox((err as Error).message));
    return () => {};
  }
  const stream = new SessionStream(session.websocket_url!);
  const transfers = fileTransfers(stream, { progress, news, afterUpload: () => list() });
  void stream.closed.then(() => replace(news, 'The file-transfer session ended; reload the page to open another.'));
  await stream.opened;

  const hrefOf = (dir: string) => `#/files/${encodeURIComponent(id!)}?path=${encodeURIComponent(dir)}`;
  /** A link to a directory, opened in this page's session (one session, however far you browse). */
  const dirLink = (dir: string, text: string) =>
    h(
      'a',
      {
        href: hrefOf(dir),
        onclick: (e: Event) => {
          e.preventDefault();
          path = dir;
          history.pushState(null, '', hrefOf(dir));
          crumbs();
          void list();
        },
      },
      text,
    );
  const crumbs = () => {
    const parts = path.split('/').filter(Boolean);
    const links: HTMLElement[] = [dirLink('/', 'root')];
    parts.forEach((p, i) => links.push(h('span', {}, ' / '), dirLink(`/${parts.slice(0, i + 1).join('/')}`, p)));
    replace(where, ...links);
  };

  async function list(): Promise<void> {
    try {
      const { entries } = await stream.call<{ entries: FileEntry[] }>('list', { path });
      entries.sort((a, b) => (a.type === 'dir' ? 0 : 1) - (b.type === 'dir' ? 0 : 1) || a.name.localeCompare(b.name));
      replace(
        listing,
        table(
          entries,
          {
            Name: (e) => (e.type === 'dir' ? dirLink(join(path, e.name), `${e.name}/`) : e.name),
            Size: (e) => (e.type === 'file' ? formatBytes(e.size) : ''),
            Modified: (e) => new Date(e.mtime).toLocaleString(),
            '': (e) =>
              e.type === 'file' ? h('button', { type: 'button', 'data-download': e.name, onclick: () => void transfers.download(path, e) }, 'Download') : '',
          },
          'This directory is empty.',
        ),
      );
    } catch (err) {
      replace(listing, errorBox((err as Error).message));
    }
  }

  picker.addEventListener('change', () => void transfers.upload(path, [...(picker.files ?? [])]).then(() => (picker.value = '')));
  picker.disabled = false;
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    void transfers.upload(path, [...(e.dataTransfer?.files ?? [])]);
  });

  crumbs();
  await list();
  return () => {
    stream.close();
    void api('DELETE', `/v1/remote-access/sessions/${session.session_id}`).catch(() => {});
  };
}
