// What a reader would notice on the page, measured in the page: text that is cut, plot labels
// that overlap or leave their figure, and colours below WCAG AA. Each check returns a list of
// problems as sentences; an empty list is a pass. `root` is the panel's CSS selector.
(root) => {
  const panel = document.querySelector(root);
  const all = [...panel.querySelectorAll("*")];
  const shown = (el) => {
    if (!el.getClientRects().length) return false;
    for (let e = el; e && e !== document.documentElement; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === "none" || s.visibility === "hidden" || +s.opacity === 0) return false;
    }
    return true;
  };
  const name = (el) => `${el.tagName.toLowerCase()}.${[...el.classList].join(".")} "${(el.textContent || el.value || "").trim().slice(0, 40)}"`;
  const inactive = (el) => !!el.closest(":disabled, .mod-disabled, [disabled]");

  // --- colours: parse, blend over what lies behind, WCAG contrast -------------------------------
  const probe = document.createElement("canvas").getContext("2d");
  const rgba = (css) => {
    const m = css && css.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [r, g, b, a];
  };
  const over = (top, under) => top.slice(0, 3).map((c, i) => c * top[3] + under[i] * (1 - top[3])).concat(1);
  const behind = (el) => {  // the opaque colour an element is drawn on, layers composited
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]);
  };
  const lum = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => { const [h, l] = [lum(a), lum(b)].sort((x, y) => y - x); return (h + 0.05) / (l + 0.05); };
  const opacity = (el) => { let o = 1; for (let e = el; e; e = e.parentElement) o *= +getComputedStyle(e).opacity; return o; };

  const contrast = [];
  for (const el of all) {
    if (!shown(el) || inactive(el)) continue;
    const svg = el instanceof SVGElement;
    const ownText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())
      || (el.matches("select, input[type=text], input[type=number]") && el.value);
    const bg = behind(svg ? el.ownerSVGElement || el : el);
    if (ownText) {
      const s = getComputedStyle(el);
      const c = rgba(svg ? s.fill : s.color);
      if (!c) continue;
      const fg = over([...c.slice(0, 3), c[3] * opacity(el) * (svg ? +s.fillOpacity : 1)], bg);
      const r = ratio(fg, bg);
      if (r < 4.5) contrast.push(`text ${name(el)} is ${r.toFixed(2)}:1`);
    } else if (svg && el.matches("path.line, .dot, path.element")) {  // data lines and markers
      const s = getComputedStyle(el);
      const paint = el.matches("path.line") ? s.stroke : s.fill;
      const width = el.matches("path.line") ? parseFloat(s.strokeWidth) : 1;
      const c = rgba(paint);
      if (!c || width <= 0) continue;
      const part = el.matches("path.line") ? +s.strokeOpacity : +s.fillOpacity;
      if (c[3] * part * opacity(el) < 0.5) continue;  // a shade, not a line
      const r = ratio(over([...c.slice(0, 3), c[3] * part * opacity(el)], bg), bg);
      if (r < 3) contrast.push(`mark ${name(el)} is ${r.toFixed(2)}:1`);
    }
  }

  // --- cut text: overflowing labels and buttons, values wider than their box, off-screen parts --
  const cut = [];
  const width = document.documentElement.clientWidth;
  for (const el of all) {
    if (!shown(el) || el instanceof SVGElement) continue;
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > width + 1) cut.push(`${name(el)} runs past the window (${box.right.toFixed(0)} > ${width})`);
    if (el.matches("label, button, .widget-label, .widget-readout, .widget-label-basic") && el.scrollWidth > el.clientWidth + 1) {
      cut.push(`${name(el)} is cut (${el.scrollWidth} > ${el.clientWidth})`);
    }
    if (el.matches("select, input[type=text], input[type=number]")) {
      const s = getComputedStyle(el);
      probe.font = `${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
      const text = el.tagName === "SELECT" ? (el.selectedOptions[0] || {}).text || "" : el.value;
      const room = el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight) - (el.tagName === "SELECT" ? 16 : 0);
      if (probe.measureText(text).width > room + 1) cut.push(`${name(el)} shows "${text}" in ${room.toFixed(0)} px`);
    }
  }

  // --- plot labels: inside their figure, no two overlapping ----------------------------------
  const labels = [];
  for (const figure of panel.querySelectorAll(".bqplot.figure")) {
    const frame = figure.getBoundingClientRect();
    const texts = [...figure.querySelectorAll("svg text")].filter((t) => shown(t) && t.textContent.trim());
    const boxes = texts.map((t) => [t, t.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
    for (const [t, b] of boxes) {
      if (b.left < frame.left - 1 || b.right > frame.right + 1 || b.top < frame.top - 1 || b.bottom > frame.bottom + 1) {
        labels.push(`"${t.textContent.trim()}" leaves its figure`);
      }
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, p] = boxes[i], [b, q] = boxes[j];
        const dx = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const dy = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (dx > 1 && dy > 1) labels.push(`"${a.textContent.trim()}" overlaps "${b.textContent.trim()}"`);
      }
    }
  }
  return { contrast, cut, labels };
}
