/**
 * @module Fits the player's terminal to the window: a recording keeps its own columns and rows
 * (reflowing it to the window's would garble full-screen programs), so the terminal is scaled
 * as a whole, as large as fits beside and below what is above it, and again when the window or
 * the recording's size changes.
 */

/** The scale stays within these: below it nothing is legible, above it nothing is gained. */
const MIN_SCALE = 0.2;
const MAX_SCALE = 2;
/** Room left under the terminal (px), so it never touches the window's edge. */
const MARGIN = 12;

/**
 * Scales `inner` (the terminal element, laid out at its natural size) inside `box` to the room the
 * window leaves; returns what ends the fitting (its listener).
 */
/** An element's padding and border, across and down (px). */
function edges(el: HTMLElement): [number, number] {
  const s = getComputedStyle(el);
  const px = (v: string) => parseFloat(v) || 0;
  return [
    px(s.paddingLeft) + px(s.paddingRight) + px(s.borderLeftWidth) + px(s.borderRightWidth),
    px(s.paddingTop) + px(s.paddingBottom) + px(s.borderTopWidth) + px(s.borderBottomWidth),
  ];
}

export function fitToWindow(box: HTMLElement, inner: HTMLElement): { refit(): void; stop(): void } {
  function refit(): void {
    const term = inner.querySelector<HTMLElement>('.xterm');
    const screen = inner.querySelector<HTMLElement>('.xterm-screen');
    if (!term || !screen || !box.isConnected) return;
    // offsetWidth/Height are the natural (untransformed) size; the terminal's own padding adds to it.
    const [termX, termY] = edges(term);
    const naturalW = Math.ceil(screen.offsetWidth + termX);
    const naturalH = Math.ceil(screen.offsetHeight + termY);
    if (!screen.offsetWidth || !screen.offsetHeight) return;
    const [padX, padY] = edges(box);
    const parent = box.parentElement;
    const roomW = (parent ? parent.clientWidth : document.documentElement.clientWidth) - padX - 1;
    const top = box.getBoundingClientRect().top + window.scrollY;
    const roomH = document.documentElement.clientHeight - top - padY - MARGIN;
    const scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, Math.min(roomW / naturalW, roomH / naturalH)));
    inner.style.transformOrigin = '0 0';
    inner.style.transform = `scale(${scale})`;
    inner.style.width = `${naturalW}px`;
    inner.style.height = `${naturalH}px`;
    box.style.width = `${Math.ceil(naturalW * scale + padX)}px`;
    box.style.height = `${Math.ceil(naturalH * scale + padY)}px`;
    box.dataset.scale = scale.toFixed(3);
  }
  let frame = 0;
  const onResize = () => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(refit);
  };
  window.addEventListener('resize', onResize);
  return {
    refit: onResize,
    stop() {
      cancelAnimationFrame(frame);
      window.removeEventListener('resize', onResize);
    },
  };
}
