// @ts-check
// What the view's parts (header, controls, timeline, detail…) share: the store, the host
// they ask things of, the redraw, and the timers that tick between redraws.

/** @typedef {import("./store.js").Store} Store */

/**
 * @typedef {object} Host what the view can ask of the page it is on
 * @property {boolean} live a kernel-backed widget (controls shown)
 * @property {() => string} pauseOn where the run pauses: off, model, tools or both
 * @property {(value: string) => void} setPauseOn
 * @property {(action: string) => void} control continue, step or stop
 * @property {(msg: Record<string, any>) => void} send a message to Python
 * @property {boolean} forking whether "Fork from here" is offered at all
 * @property {() => boolean} canFork whether Python can fork now
 * @property {(runId: string | null) => void} [showRun] show that run of the run list (null: follow the newest again); absent on static pages
 * @property {(a: string, b: string) => void} [compare] show runs `a` and `b` (run ids) side by side
 * @property {() => void} [closeComparison] close the comparison shown
 */

/** @typedef {[HTMLElement, () => string]} TextTimer a node whose text ticks */
/** @typedef {[HTMLElement, (node: HTMLElement) => void]} PaintTimer a node repainted as time goes */

/**
 * @typedef {object} ViewContext
 * @property {Store} s
 * @property {Host} host
 * @property {(force?: boolean) => void} redraw draw soon; `force` draws everything on the next frame
 * @property {(fn: () => void) => void} drawn run `fn` once the next draw has drawn every part (a draw may take a few tasks)
 * @property {TextTimer[]} live the header's timers
 * @property {TextTimer[]} liveRows the timers of timeline rows in progress
 * @property {PaintTimer[]} liveDetail the detail pane's timers
 * @property {(msg: Record<string, any>, onAnswer: (answer: any) => void) => void} ask a request to Python, answered with a later message
 */

export {};
