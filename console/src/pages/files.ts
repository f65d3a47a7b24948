/**
 * @module A device's files, through a file-transfer session that lives as long as the page:
 * browse a directory, download a file or a folder (as a .tar; the browser reads the tar stream
 * itself), upload files by drag and drop or by choosing them, with progress (the browser writes
 * the tar stream: the transfers are in files/transfers.ts), and make a folder, rename or delete
 * (files/actions.ts). Paths are relative to the agent's files root.
 */
import type { Session } from '../../../shared/api/sessions';
import type { FileEntry } from '../../../shared/protocol/session-stream';
import { api } from '../api';
import { errorBox, formatBytes, h, replace, table } from '../dom';
import { timeElement } from '../format';
import type { Cleanup } from '../page';
import { askInPage, openSession, SessionStream } from '../session-stream';
import { accessRefusal } from './access/device-notice';
import { fileActions } from './files/actions';
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
  const newFolder = h('button', { type: 'button', id: 'new-folder-button', disabled: true }, 'New folder');
  const dialog = h('div', { id: 'files-dialog' });
  const banner = h('div', { id: 'session-notice', class: 'notice', role: 'alert', hidden: true });
  replace(
    root,
    h('h1', {}, 'Files on ', h('a', { href: `#/devices/${encodeURIComponent(id!)}` }, id!)),
    banner,
    where,
    drop,
    h('div', { class: 'actions' }, newFolder),
    dialog,
    progress,
    news,
    listing,
  );

  let session: Session;
  try {
    session = await openSession(id!, 'file-transfer', askInPage(listing, id!, 'file-transfer'));
  } catch (err) {
    replace(listing, accessRefusal(err, id!, 'file-transfer') ?? errorBox((err as Error).message));
    return () => {};
  }
  const stream = new SessionStream(session.websocket_url!);
  const transfers = fileTransfers(stream, { progress, news, afterUpload: () => list() });
  const actions = fileActions(stream, { dialog, news, afterChange: () => list() });
  stream.onNotice((n) => {
    replace(banner, n.message); // the session expires soon: a transfer may not finish
    banner.hidden = false;
  });
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
          replace(dialog); // a question about the directory left behind
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
            Modified: (e) => timeElement(e.mtime),
            '': (e) => h('div', { class: 'actions row-actions' }, ...rowActions(e)),
          },
          'This directory is empty.',
        ),
      );
    } catch (err) {
      replace(listing, errorBox((err as Error).message));
    }
  }

  /** A row's buttons: download (a folder as .tar; a link is not followed), rename, delete. */
  const rowActions = (e: FileEntry) => [
    e.type !== 'symlink' &&
      h(
        'button',
        {
          type: 'button',
          'data-download': e.name,
          title: e.type === 'dir' ? 'Download as a .tar' : undefined,
          onclick: () => void transfers.download(path, e),
        },
        e.type === 'dir' ? 'Download .tar' : 'Download',
      ),
    h('button', { type: 'button', 'data-rename': e.name, onclick: () => actions.rename(path, e) }, 'Rename'),
    h('button', { type: 'button', 'data-remove': e.name, onclick: () => actions.remove(path, e) }, 'Delete'),
  ];

  newFolder.addEventListener('click', () => actions.newFolder(path));
  newFolder.disabled = false;
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
