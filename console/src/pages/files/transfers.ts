/**
 * @module The transfers of the files page, one at a time on its file-transfer stream: a download
 * (the browser reads the tar stream and saves the file; a folder is saved as that tar) and an upload (the browser writes the tar
 * stream, a block at a time as the WebSocket has room), each with progress and a line of news.
 */
import { frames, type FileEntry, type UploadDone } from '../../../../shared/protocol/session-stream';
import { errorBox, formatBytes, h, replace } from '../../dom';
import type { SessionStream } from '../../session-stream';
import { END_OF_ARCHIVE, fileHeader, filePadding, tarReader } from '../../tar';

const CHUNK = 256 * 1024;
const SEND_HIGH = 4 * 1024 * 1024;

/** `dir/name`, whatever slashes `dir` ends with. */
export const join = (dir: string, name: string) => `${dir.replace(/\/+$/, '')}/${name}`;

/** What the transfers show their progress in, and what follows an upload (the listing, read again). */
export interface TransferView {
  progress: HTMLProgressElement;
  news: HTMLElement;
  afterUpload: () => Promise<void>;
}

export interface Transfers {
  /** Downloads `entry` of `dir` and saves it (a folder as NAME.tar); nothing while another transfer runs. */
  download(dir: string, entry: FileEntry): Promise<void>;
  /** Uploads `files` into `dir`; nothing while another transfer runs. */
  upload(dir: string, files: File[]): Promise<void>;
}

/** Hands the browser `parts` as a file called `name` to save. */
function save(parts: Uint8Array[], name: string): void {
  const url = URL.createObjectURL(new Blob(parts as BlobPart[]));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The transfers on `stream`, which from now on hands them its binary frames. */
export function fileTransfers(stream: SessionStream, view: TransferView): Transfers {
  const { progress, news } = view;
  let busy = false;
  let onBinary: ((data: Uint8Array) => void) | undefined;
  stream.onBinary((data) => onBinary?.(data));

  function download(dir: string, entry: FileEntry): Promise<void> {
    if (busy) return Promise.resolve();
    busy = true;
    const folder = entry.type === 'dir';
    replace(news, `Downloading ${entry.name}${folder ? ' as a .tar' : ''}…`);
    const parts: Uint8Array[] = [];
    let got = 0;
    progress.hidden = false;
    if (folder) {
      // A folder is saved as the tar the device sends, whose size nobody knows beforehand.
      progress.removeAttribute('value');
      onBinary = (data) => {
        parts.push(data.slice());
        got += data.length;
        replace(news, `Downloading ${entry.name} as a .tar… ${formatBytes(got)}`);
      };
    } else {
      progress.value = 0;
      const reader = tarReader(
        () => {},
        (chunk) => {
          parts.push(chunk.slice());
          got += chunk.length;
          progress.value = entry.size ? got / entry.size : 1;
        },
      );
      onBinary = (data) => reader.push(data);
    }
    return new Promise<void>((resolve) => {
      stream.request('download', { path: join(dir, entry.name) }, (answer) => {
        if ('ok' in answer && !answer.ok) {
          replace(news, errorBox(`Download failed: ${answer.error.message}`));
        } else if ('done' in answer) {
          save(parts, folder ? `${entry.name}.tar` : entry.name);
          replace(
            news,
            folder
              ? `Downloaded ${entry.name} as ${entry.name}.tar (${answer.files} file${answer.files === 1 ? '' : 's'}, ${formatBytes(answer.bytes)}).`
              : `Downloaded ${entry.name} (${formatBytes(got)}).`,
          );
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

  /** Sends `files` as one tar stream, then the end of upload `uploadId`; `onSent` counts file bytes. */
  async function sendArchive(files: File[], uploadId: number, onSent: (bytes: number) => void): Promise<void> {
    for (const file of files) {
      for (const block of fileHeader(file.name, file.size, file.lastModified)) stream.sendBytes(block);
      for (let at = 0; at < file.size; at += CHUNK) {
        await room();
        stream.sendBytes(new Uint8Array(await file.slice(at, at + CHUNK).arrayBuffer()));
        onSent(Math.min(CHUNK, file.size - at));
      }
      stream.sendBytes(filePadding(file.size));
    }
    stream.sendBytes(END_OF_ARCHIVE);
    stream.sendJson(frames.uploadEnd(uploadId));
  }

  async function upload(dir: string, files: File[]): Promise<void> {
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
        const uploadId = stream.request('upload', { path: dir }, (answer) => {
          if (!('ok' in answer) || !answer.ok) {
            reject(new Error('ok' in answer ? answer.error.message : 'the device sent the end of a download during an upload'));
            return true;
          }
          if (!ready) {
            ready = true;
            sendArchive(files, uploadId, (bytes) => {
              sent += bytes;
              progress.value = total ? sent / total : 1;
            }).catch(reject);
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
      await view.afterUpload();
    }
  }

  return { download, upload };
}
