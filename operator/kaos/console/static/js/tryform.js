// The try-it forms of the MCP server and model API pages: one request at a time, its answer or
// its error shown in a result area.

import { h, replace } from './dom.js';

// A form: a labelled `choice` (a select) in a row, a labelled `input` below it, and a submit `button`.
// On submit, `check()` may refuse (its message is shown in `result`, nothing is sent); else `work()` runs
// with the button disabled and `pending()` in `result`, and `result` shows the elements it returns (none
// when it returns null: the page was left) or its error, marked data-<mark>="failed" (an aborted
// request, the page left, shows nothing).
export function tryForm(label, { choice: [choiceLabel, select], input: [inputLabel, input], button, result },
  { check, pending, work, mark }) {
  return h('form', { 'aria-label': label, onsubmit: async (event) => {
    event.preventDefault();
    const refusal = check();
    if (refusal) { replace(result, h('p', { class: 'error' }, refusal)); return; }
    button.disabled = true;
    replace(result, h('p', { class: 'muted' }, pending()));
    try {
      const shown = await work();
      if (shown) replace(result, ...shown);
    } catch (error) {
      if (error.name !== 'AbortError') replace(result, h('p', { class: 'error', [`data-${mark}`]: 'failed' }, error.message));
    } finally {
      button.disabled = false;
    }
  } },
  h('div', { class: 'row' }, h('div', {}, h('label', { for: select.id }, choiceLabel), select)),
  h('label', { for: input.id }, inputLabel), input,
  h('div', { class: 'actions' }, button));
}
