// Installed before any page script: collects long tasks and long animation frames.
window.__longtasks = [];
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      window.__longtasks.push({start: e.startTime, duration: e.duration});
  }).observe({type: 'longtask', buffered: true});
} catch (e) {}
window.__loaf = [];
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (e.duration > 50)
      window.__loaf.push({start: e.startTime, duration: e.duration,
        // where the frame went: scripts, then style and layout, then paint (from renderStart)
        render_ms: e.renderStart ? e.startTime + e.duration - e.renderStart : 0,
        style_layout_ms: e.styleAndLayoutStart ? e.startTime + e.duration - e.styleAndLayoutStart : 0,
        blocking_ms: e.blockingDuration || 0, scripts: (e.scripts || []).map(
        (s) => ({invoker: s.invoker, source: s.sourceURL, fn: s.sourceFunctionName, duration: s.duration,
          forced_layout_ms: s.forcedStyleAndLayoutDuration || 0}))});
  }).observe({type: 'long-animation-frame', buffered: true});
} catch (e) {}
