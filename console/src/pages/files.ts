/**
 * @module A device's files, through a file-transfer session that lives as long as the page:
 * browse a directory, download a file (the browser reads the tar stream itself), upload files
 * by drag and drop or by choosing them, with progress (the browser writes the tar stream).
 * Paths are relative to the agent's files root.
 */
import type { Session } from '../../../shared/api/sessions';
import { frames, type FileEntry, type UploadDone } from '../../../shared/session-stream';
import { api } from '../api';
import { errorBox, formatBytes, h, replace, table } from '../dom';
import type { Cleanup } from '../page';
import { askInPage, openSession, SessionStream } from '../session-stream';
import { END_OF_ARCHIVE, fileHeader, filePadding, tarReader } from '../tar';

const CHUNK = 256 * 1024;
const SEND_HIGH = 4 * 1024 * 1024;
const join = (dir: string, name: string) => `${dir.replace(/\/+$/, '')}/${name}`;

export async function filesPage(root: HTMLElement, [id]: string[], query: URLSearchParams): Promise<Cleanup> {
  let path = query.get('path') || '/';
  const where = h('p', { id: 'files-path' });
  const listing = h('div', { id: 'files-list' }, h('p', { class: 'muted' }, 'Opening a file-transfer session…'));
  const progress = h('progress', { id: 'upload-progress', max: 1, value: 0, hidden: true });
  const news = h('p', { id: 'files-status', role: 'status', 'aria-live': 'polite' });
  const picker = h('input', { type: 'file', id: 'upload-input', multiple: true, 'aria-label': 'Files to upload' });
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
  let busy = false;
  let onBinary: ((data: Uint8Array) => void) | undefined;
  stream.onBinary((data) => onBinary?.(data));
  void stream.closed.then(() => replace(news, 'The file-transfer session ended; reload the page to open another.'));
  await stream.opened;

  const hrefOf = (dir: string) => `#/files/${encodeURIComponent(id!)}?path=${encodeURIComponent(dir)}`;
  /** A link to a directory, opened in this page's session (one session, however far you browse). */
  const dirLink = (dir: string, text: string) =>
    h('a', {
      href: hrefOf(dir),
      onclick: (e: Event) => {
        e.preventDefault();
        path = dir;
        history.pushState(null, '', hrefOf(dir));
        crumbs();
        void list();
      },
    }, text);
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
            '': (e) => (e.type === 'file' ? h('button', { type: 'button', 'data-download': e.name, onclick: () => void download(e) }, 'Download') : ''),
          },
          'This directory is empty.',
        ),
      );
    } catch (err) {
      replace(listing, errorBox((err as Error).message));
    }
  }

  function download(entry: FileEntry): Promise<void> {
    if (busy) return Promise.resolve();
    busy = true;
    replace(news, `Downloading ${entry.name}…`);
    const parts: Uint8Array[] = [];
    let got = 0;
    const reader = tarReader(
      () => {},
      (chunk) => {
        parts.push(chunk.slice());
        got += chunk.length;
        progress.hidden = false;
        progress.value = entry.size ? got / entry.size : 1;
      },
    );
    onBinary = (data) => reader.push(data);
    return new Promise<void>((resolve) => {
      stream.request('download', { path: join(path, entry.name) }, (answer) => {
        if ('ok' in answer && !answer.ok) {
          replace(news, errorBox(`Download failed: ${answer.error.message}`));
        } else if ('done' in answer) {
          const url = URL.createObjectURL(new Blob(parts as BlobPart[]));
          const a = h('a', { href: url, download: entry.name, hidden: true });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(url), 60_000);
          replace(news, `Downloaded ${entry.name} (${formatBytes(got)}).`);
        } else return false; // the first answer: the tar follows
        onBinary = undefined;
        busy = false;
        progress.hidden = true;
        resolve();
        return true;
      });
    });
  }

  /** Waits until the WebSocket has room (a browser's has no drain event). */
  const room = async () => {
    while (stream.ws.bufferedAmount > SEND_HIGH) await new Promise((r) => setTimeout(r, 20));
  };

  async function upload(files: File[]): Promise<void> {
    if (busy || files.length === 0) return;
    busy = true;
    const total = files.reduce((n, f) => n + f.size, 0);
    let sent = 0;
    progress.hidden = false;
    progress.value = 0;
    replace(news, `Uploading ${files.length} file${files.length === 1 ? '' : 's'} (${formatBytes(total)})…`);
    try {
      const result = await new Promise<UploadDone>((resolve, reject) => {
        let ready = false;
        const uploadId = stream.request('upload', { path }, (answer) => {
          if (!('ok' in answer) || !answer.ok) {
            reject(new Error('ok' in answer ? answer.error.message : 'the device sent the end of a download during an upload'));
            return true;
          }
          if (!ready) {
            ready = true;
            void (async () => {
              for (const file of files) {
                for (const block of fileHeader(file.name, file.size, file.lastModified)) stream.sendBytes(block);
                for (let at = 0; at < file.size; at += CHUNK) {
                  await room();
                  stream.sendBytes(new Uint8Array(await file.slice(at, at + CHUNK).arrayBuffer()));
                  sent += Math.min(CHUNK, file.size - at);
                  progress.value = total ? sent / total : 1;
                }
                stream.sendBytes(filePadding(file.size));
              }
              stream.sendBytes(END_OF_ARCHIVE);
              stream.sendJson(frames.uploadEnd(uploadId));
            })().catch(reject);
            return false;
          }
          resolve(answer.result as UploadDone);
          return true;
        });
        void stream.closed.then(() => reject(new Error('the stream closed during the upload')));
      });
      replace(news, `Uploaded ${result.files} file${result.files === 1 ? '' : 's'} (${formatBytes(result.bytes)}).`);
    } catch (err) {
      replace(news, errorBox(`Upload failed: ${(err as Error).message}`));
    } finally {
      busy = false;
      progress.hidden = true;
      await list();
    }
  }

  picker.addEventListener('change', () => void upload([...(picker.files ?? [])]).then(() => (picker.value = '')));
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('over');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    void upload([...(e.dataTransfer?.files ?? [])]);
  });

  crumbs();
  await list();
  return () => {
    stream.close();
    void api('DELETE', `/v1/remote-access/sessions/${session.session_id}`).catch(() => {});
  };
}
