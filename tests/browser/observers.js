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
      window.__loaf.push({start: e.startTime, duration: e.duration, scripts: (e.scripts || []).map(
        (s) => ({invoker: s.invoker, source: s.sourceURL, fn: s.sourceFunctionName, duration: s.duration}))});
  }).observe({type: 'long-animation-frame', buffered: true});
} catch (e) {}
