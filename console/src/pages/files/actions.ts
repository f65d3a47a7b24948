/**
 * @module The changes the files page makes to a device's tree (docs/session-streams.md, changing
 * files): a new folder, a rename and a delete, each asked in one form above the listing (a delete
 * only once confirmed, naming what goes with it) and sent as one request on the page's stream.
 */
import type { FileEntry, MkdirParams, RemoveParams, RenameParams } from '../../../../shared/protocol/session-stream';
import { errorBox, h, replace } from '../../dom';
import type { SessionStream } from '../../session-stream';
import { join } from './transfers';

/** Where the forms are asked, where the outcome is told, and what follows a change (the listing, read again). */
export interface ActionsView {
  dialog: HTMLElement;
  news: HTMLElement;
  afterChange: () => Promise<void>;
}

export interface FileActions {
  newFolder(dir: string): void;
  rename(dir: string, entry: FileEntry): void;
  remove(dir: string, entry: FileEntry): void;
}

/** A typed name as a path: relative to `dir`, or to the files root when it starts with `/`. */
const pathFrom = (dir: string, typed: string) => (typed.startsWith('/') ? typed : join(dir, typed));

export function fileActions(stream: SessionStream, view: ActionsView): FileActions {
  const { dialog, news } = view;
  const close = () => replace(dialog);

  /** Sends the request, then says what happened (`done`, or `failed` and the device's message) and lists again. */
  async function run(op: string, params: MkdirParams | RemoveParams | RenameParams, done: string, failed: string): Promise<void> {
    try {
      await stream.call(op, params);
      close();
      replace(news, done);
    } catch (err) {
      close();
      replace(news, errorBox(`${failed}: ${(err as Error).message}`));
    }
    await view.afterChange();
  }

  /** A form in the dialog: a question, an optional text field, the confirming button and Cancel. */
  function ask(id: string, question: string, confirm: string, field: { value: string; label: string } | undefined, act: (typed: string) => Promise<void>) {
    const input = field ? h('input', { type: 'text', id: `${id}-name`, value: field.value, 'aria-label': field.label, required: true }) : undefined;
    const form = h(
      'form',
      { class: 'card', id, role: 'dialog', 'aria-labelledby': `${id}-question` },
      h('p', { id: `${id}-question` }, question),
      h(
        'div',
        { class: 'actions' },
        input,
        h('button', { type: 'submit', id: `${id}-confirm` }, confirm),
        h('button', { type: 'button', id: `${id}-cancel`, onclick: close }, 'Cancel'),
      ),
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const typed = input?.value.trim() ?? '';
      if (input && !typed) return;
      for (const b of form.querySelectorAll('button')) b.disabled = true;
      void act(typed);
    });
    replace(dialog, form);
    (input ?? form.querySelector<HTMLButtonElement>(`#${id}-cancel`))?.focus();
    input?.select();
  }

  return {
    newFolder(dir) {
      ask('new-folder', `A new folder in ${dir}:`, 'Create', { value: '', label: 'Folder name' }, (name) =>
        run('mkdir', { path: pathFrom(dir, name) } satisfies MkdirParams, `Created the folder ${name}.`, `Could not create ${name}`),
      );
    },
    rename(dir, entry) {
      ask(
        'rename',
        `Rename ${entry.name} to (a name in ${dir}, or a path from the files root starting with /):`,
        'Rename',
        { value: entry.name, label: 'New name' },
        (to) =>
          run(
            'rename',
            { from: join(dir, entry.name), to: pathFrom(dir, to) } satisfies RenameParams,
            `Renamed ${entry.name} to ${to}.`,
            `Could not rename ${entry.name}`,
          ),
      );
    },
    remove(dir, entry) {
      const what =
        entry.type === 'dir'
          ? `the folder ${entry.name} and everything in it`
          : entry.type === 'symlink'
            ? `the link ${entry.name} (not what it points to)`
            : `the file ${entry.name}`;
      ask('remove', `Delete ${what} from the device? This cannot be undone.`, 'Delete', undefined, () =>
        run(
          'remove',
          { path: join(dir, entry.name), recursive: entry.type === 'dir' } satisfies RemoveParams,
          `Deleted ${entry.name}.`,
          `Could not delete ${entry.name}`,
        ),
      );
    },
  };
}
