// Injected into a copy of a report's index.html by `cargo xtask ci` (xtask/src/browser.rs):
// collects what a reader would see broken and writes it, one line per problem, into
// a pre element (id rtrace-browser-check) once every figure file has loaded or failed.
(function () {
  const problems = [];
  const say = (p) => problems.push(p);
  const origError = console.error;
  console.error = function (...args) {
    say("console error: " + args.map(String).join(" "));
    origError.apply(console, args);
  };
  window.addEventListener("error", (e) => {
    const t = e.target;
    if (t && t !== window && (t.src || t.href)) {
      say("resource did not load: " + (t.getAttribute("src") || t.getAttribute("href")));
    } else {
      say("script error: " + e.message);
    }
  }, true);
  window.addEventListener("load", async () => {
    // What a reader can unfold is checked unfolded.
    document.querySelectorAll("details").forEach((d) => { d.open = true; });
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > width) {
      say(`page is ${document.documentElement.scrollWidth} px wide, wider than the window (${width} px)`);
    }
    document.querySelectorAll("table").forEach((t, i) => {
      const r = t.getBoundingClientRect();
      const name = t.closest("section, [id]")?.id || `#${i}`;
      if (t.scrollWidth > t.clientWidth + 1 || r.right > width + 1) {
        say(`table ${i} (in ${name}) is ${t.scrollWidth} px wide, the page shows ${Math.round(Math.min(t.clientWidth, width))} px`);
      }
    });
    document.querySelectorAll("figure").forEach((f) => {
      const svg = f.querySelector("svg");
      const img = f.querySelector("img");
      if (img) {
        if (!img.complete || img.naturalWidth === 0) say(`figure ${f.id}: its image did not load`);
        return;
      }
      if (!svg) return say(`figure ${f.id} holds no image`);
      const box = svg.getBoundingClientRect();
      const marks = [...svg.querySelectorAll("path, line, polyline, polygon, rect, circle")]
        .filter((e) => { const b = e.getBBox(); return b.width > 0 || b.height > 0; }).length;
      if (box.width < 50 || box.height < 50) say(`figure ${f.id} is ${Math.round(box.width)}x${Math.round(box.height)} px`);
      if (marks < 10) say(`figure ${f.id} is empty: ${marks} drawn marks`);
    });
    const nav = document.querySelector("nav");
    if (!nav) say("no table of contents (nav)");
    nav?.querySelectorAll('a[href^="#"]').forEach((a) => {
      const id = decodeURIComponent(a.getAttribute("href").slice(1));
      const target = document.getElementById(id);
      if (!target) say(`table of contents names #${id}, the page has no such section`);
      else if (target.innerText.trim().length < 20) say(`section #${id} is empty`);
    });
    const files = [...document.querySelectorAll('a[href$=".svg"], a[href$=".png"]')]
      .map((a) => a.getAttribute("href")).filter((h) => !/^[a-z]+:/.test(h));
    await Promise.all(files.map((src) => new Promise((done) => {
      const im = new Image();
      im.onload = () => { if (im.naturalWidth === 0) say(`figure file ${src} is empty`); done(); };
      im.onerror = () => { say(`figure file ${src} does not load`); done(); };
      im.src = src;
    })));
    const out = document.createElement("pre");
    out.id = "rtrace-browser-check";
    out.textContent = `checked: ${document.querySelectorAll("figure").length} figures, ` +
      `${document.querySelectorAll("table").length} tables, ${files.length} figure files\n` +
      problems.join("\n");
    document.body.appendChild(out);
  });
})();
