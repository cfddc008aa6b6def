// Checks the browser tests run in the page (read by conftest.py and the tests).

// Every debugger of the page, those drawn in open shadow roots too (marimo draws there).
function allRoots() {
  const out = [];
  const visit = (scope) => {
    out.push(...scope.querySelectorAll('.tl-root'));
    for (const el of scope.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(document);
  return out;
}

// Horizontal overflow of any debugger, and controls that are clipped or cut.
function layoutProblems() {
          const out = [];
          for (const root of allRoots()) {
            if (root.scrollWidth > root.clientWidth + 1) out.push(`root overflows: ${root.scrollWidth} > ${root.clientWidth}`);
            const area = root.closest('.jp-OutputArea-output') || root.parentElement;
            if (area.scrollWidth > area.clientWidth + 1) out.push(`output area overflows: ${area.scrollWidth} > ${area.clientWidth}`);
            const box = root.getBoundingClientRect();
            for (const c of root.querySelectorAll('button, select, input')) {
              if (!c.offsetParent) continue;  // hidden on purpose
              const r = c.getBoundingClientRect();
              if (r.left < box.left - 1 || r.right > box.right + 1) out.push(`${c.tagName} "${c.textContent || c.placeholder}" outside the view`);
              if (c.scrollWidth > c.clientWidth + 1 && c.tagName === 'BUTTON') out.push(`button "${c.textContent}" cut: ${c.scrollWidth} > ${c.clientWidth}`);
            }
          }
          return out;
        }

// The contrast of every visible text node of every debugger against its real background.
function contrastReport() {
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => { const a = top[3]; return [0,1,2].map(i => top[i]*a + under[i]*(1-a)).concat([1]); };
  const bgOf = (el) => { const stack = []; for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor); if (c && c[3] > 0) stack.push(c); if (c && c[3] >= 1) break; }
    let bg = [255,255,255,1]; for (const c of stack.reverse()) bg = over(c, bg); return bg; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); };
    return 0.2126*f(c[0]) + 0.7152*f(c[1]) + 0.0722*f(c[2]); };
  const worst = []; let count = 0;
  for (const root of allRoots()) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.trim()) continue;
      const el = n.parentElement; if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') continue;
      const st = getComputedStyle(el); const bg = bgOf(el); let fg = parse(st.color); fg = over(fg, bg);
      const op = parseFloat(st.opacity); const a = lum(fg), b = lum(bg);
      const ratio = (Math.max(a,b)+0.05)/(Math.min(a,b)+0.05); count++;
      if (ratio < 4.5 || op < 1) worst.push({text: n.textContent.slice(0, 40), ratio: Math.round(ratio*100)/100, color: st.color, bg: bg.join(',')});
    }
  }
  return {count, worst};
}
