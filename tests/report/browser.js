#!/usr/bin/env node
/* browser.js — opens a nunatak report in Debian's headless Chromium and
 * checks every view, with node's standard library only (no npm package).
 *
 *   node tests/report/browser.js --report FILE --artefacts DIR
 *        [--views a,b,...] [--search NAME] [--expect-timeline] [--json]
 *        [--timeout SECONDS] [--no-print] [--expect VIEW=TEXT]...
 *        [--expect-before VIEW=FIRST|THEN]...
 *        [--expect-no VIEW=SELECTOR]...
 *
 * Chromium speaks the DevTools protocol on fds 3 (commands in) and 4
 * (answers out), NUL-separated JSON (--remote-debugging-pipe): no WebSocket.
 * The network is emulated offline and every request that is not the page's
 * own file:// URL or a data: URL is counted as a failure. For each view:
 * navigate by #hash, wait for [data-view-ready=NAME] shown, screenshot into
 * DIR/NAME.png, decode the PNG (zlib) and fail when it is blank (< 2
 * colours, or < 1 % of the pixels differ from the background). Console
 * errors and exceptions fail. --search types NAME in the flame graph's
 * search box and needs a match count > 0; --expect-timeline needs Events
 * drawn on the timeline. Finally the page is printed to DIR/report.pdf
 * (every view rendered for print) and shot as DIR/print.png in print media;
 * (not with --no-print); the tab bar must answer the arrow keys and every
 * <th> have a scope; every control (sort, filters, rank, icicle, toggles)
 * is used once. --expect VIEW=TEXT: the view's text must contain TEXT;
 * --expect-before VIEW=FIRST|THEN: it must contain both, FIRST before THEN;
 * --expect-no VIEW=SELECTOR: no element of the view matches the CSS
 * SELECTOR.
 * Every wait is bounded (20 s by default; printing 3 times that).
 * Exit 0 ok, 1 failed, 77 SKIPPED (no chromium), 2 usage. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const {spawn} = require('child_process');

const ALL_VIEWS = ['synthesis', 'hotspots', 'hotspot', 'ranks', 'flame', 'timeline',
                   'components'];

function usage(msg) {
  process.stderr.write(`browser.js: ${msg}\nusage: node browser.js --report FILE ` +
    '--artefacts DIR [--views a,b] [--search NAME] [--expect-timeline] [--json] ' +
    '[--timeout S] [--no-print]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = {views: ALL_VIEWS, timeout: 20, json: false, expectTimeline: false};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], next = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === '--report') o.report = next();
    else if (a === '--artefacts') o.artefacts = next();
    else if (a === '--views') o.views = next().split(',').filter(Boolean);
    else if (a === '--search') o.search = next();
    else if (a === '--expect-timeline') o.expectTimeline = true;
    else if (a === '--no-print') o.noPrint = true;
    else if (a === '--expect') {
      const m = /^(\w+)=(.+)$/.exec(next());
      if (!m) usage('--expect VIEW=TEXT');
      (o.expect = o.expect || []).push([m[1], m[2]]);
    }
    else if (a === '--expect-before') {
      const m = /^(\w+)=([^|]+)\|(.+)$/.exec(next());
      if (!m) usage('--expect-before VIEW=FIRST|THEN');
      (o.before = o.before || []).push([m[1], m[2], m[3]]);
    }
    else if (a === '--expect-no') {
      const m = /^([a-z]+)=(.+)$/.exec(next());
      if (!m) usage('--expect-no VIEW=SELECTOR');
      (o.expectNo = o.expectNo || []).push([m[1], m[2]]);
    }
    else if (a === '--json') o.json = true;
    else if (a === '--timeout') o.timeout = Number(next());
    else usage(`unknown argument '${a}'`);
  }
  if (!o.report || !o.artefacts) usage('--report and --artefacts are needed');
  o.views.forEach((v) => { if (!ALL_VIEWS.includes(v)) usage(`unknown view '${v}'`); });
  return o;
}

function findChromium() {
  const names = process.env.CHROMIUM ? [process.env.CHROMIUM] : ['chromium', 'chromium-browser'];
  for (const n of names) {
    if (n.includes('/')) { if (fs.existsSync(n)) return n; continue; }
    for (const d of (process.env.PATH || '/usr/bin:/bin').split(':')) {
      const p = path.join(d, n);
      try { fs.accessSync(p, fs.constants.X_OK); return p; } catch (e) { /* next */ }
    }
  }
  return null;
}

/* ---- PNG decoding (8-bit RGB/RGBA, what Chromium writes) ---- */
function decodePng(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let off = 8, w = 0, h = 0, depth = 0, type = 0;
  const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off), kind = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (kind === 'IHDR') {
      w = data.readUInt32BE(0); h = data.readUInt32BE(4); depth = data[8]; type = data[9];
    } else if (kind === 'IDAT') idat.push(data);
    else if (kind === 'IEND') break;
    off += 12 + len;
  }
  const bpp = {2: 3, 6: 4}[type];
  if (depth !== 8 || !bpp) throw new Error(`PNG type ${type} depth ${depth} not handled`);
  const raw = zlib.inflateSync(Buffer.concat(idat)), stride = w * bpp;
  const px = Buffer.alloc(h * stride);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)], src = y * (stride + 1) + 1, dst = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? px[dst + x - bpp] : 0, b = y ? px[dst - stride + x] : 0;
      const c = x >= bpp && y ? px[dst - stride + x - bpp] : 0;
      let v = raw[src + x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      px[dst + x] = v & 0xff;
    }
  }
  return {w, h, bpp, px};
}

/* distinct colours and the share of pixels that are not the most frequent one */
function blankness(img) {
  const counts = new Map();
  for (let i = 0; i < img.px.length; i += img.bpp) {
    const k = (img.px[i] << 16) | (img.px[i + 1] << 8) | img.px[i + 2];
    counts.set(k, (counts.get(k) || 0) + 1);
  }
  let bg = 0;
  for (const n of counts.values()) if (n > bg) bg = n;
  const total = img.w * img.h;
  return {colours: counts.size, content: total ? (total - bg) / total : 0};
}

/* ---- the DevTools protocol over the pipe ---- */
class Cdp {
  constructor(child, timeoutMs) {
    this.child = child; this.timeoutMs = timeoutMs; this.id = 0; this.pending = new Map();
    this.handlers = []; this.buf = '';
    child.stdio[4].on('data', (d) => this.receive(d));
  }

  receive(d) {
    this.buf += d.toString('utf8');
    let i;
    while ((i = this.buf.indexOf('\0')) >= 0) {
      const msg = JSON.parse(this.buf.slice(0, i));
      this.buf = this.buf.slice(i + 1);
      if (msg.id !== undefined && this.pending.has(msg.id)) {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        clearTimeout(p.timer);
        if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
        else p.resolve(msg.result);
      } else if (msg.method) {
        this.handlers.forEach((h) => h(msg));
      }
    }
  }

  send(method, params, sessionId, timeoutMs) {
    const id = ++this.id;
    const msg = {id, method, params: params || {}};
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer in ${(timeoutMs || this.timeoutMs) / 1000} s`));
      }, timeoutMs || this.timeoutMs);
      this.pending.set(id, {resolve, reject, timer, method});
      this.child.stdio[3].write(JSON.stringify(msg) + '\0');
    });
  }

  on(h) { this.handlers.push(h); }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, timeoutMs, probe) {
  const t0 = Date.now();
  for (;;) {
    const v = await probe();
    if (v) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(40);
  }
}

/* ---- the run ---- */
class Run {
  constructor(opts) {
    this.o = opts; this.checks = []; this.errors = []; this.requests = [];
    this.timeoutMs = opts.timeout * 1000;
  }

  check(name, ok, detail) {
    this.checks.push({name, ok, detail});
    if (!this.o.json) process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}\n`);
  }

  eval(expr) {
    return this.cdp.send('Runtime.evaluate', {expression: expr, returnByValue: true,
                                              awaitPromise: true}, this.session)
      .then((r) => {
        if (r.exceptionDetails) throw new Error(`evaluate ${expr}: ${r.exceptionDetails.text}`);
        return r.result.value;
      });
  }

  listen(msg) {
    const p = msg.params || {};
    if (msg.method === 'Runtime.exceptionThrown') {
      const d = p.exceptionDetails || {};
      this.errors.push(`exception: ${(d.exception && d.exception.description) || d.text}`);
    } else if (msg.method === 'Runtime.consoleAPICalled' && p.type === 'error') {
      this.errors.push('console.error: ' + (p.args || []).map((a) =>
        a.value !== undefined ? String(a.value) : a.description || a.type).join(' '));
    } else if (msg.method === 'Log.entryAdded' && p.entry && p.entry.level === 'error') {
      this.errors.push(`log: ${p.entry.text} ${p.entry.url || ''}`);
    } else if (msg.method === 'Network.requestWillBeSent') {
      const url = p.request.url;
      if (!url.startsWith('data:') && url.split('#')[0] !== this.url) this.requests.push(url);
    }
  }

  async open() {
    const c = this.cdp;
    const {targetId} = await c.send('Target.createTarget', {url: 'about:blank'});
    const {sessionId} = await c.send('Target.attachToTarget', {targetId, flatten: true});
    this.session = sessionId;
    for (const d of ['Page', 'Runtime', 'Log', 'Network'])
      await c.send(`${d}.enable`, {}, sessionId);
    await c.send('Network.emulateNetworkConditions', {offline: true, latency: 0,
      downloadThroughput: -1, uploadThroughput: -1}, sessionId);
    await c.send('Emulation.setDeviceMetricsOverride', {width: 1280, height: 900,
      deviceScaleFactor: 1, mobile: false}, sessionId);
    const t0 = Date.now();
    await c.send('Page.navigate', {url: this.url}, sessionId);
    await waitFor('page load', this.timeoutMs, () =>
      this.eval('document.readyState === "complete"'));
    await waitFor('the page\'s script (NK.app; does the page hold report/app/*.js?)',
                  this.timeoutMs, () => this.eval('!!(window.NK && NK.app)'));
    this.check('open', true, `${this.url} loaded in ${Date.now() - t0} ms`);
  }

  async screenshot(name) {
    const m = await this.cdp.send('Page.getLayoutMetrics', {}, this.session);
    const size = m.cssContentSize || m.contentSize;
    const height = Math.min(Math.ceil(size.height), 6000);
    const shot = await this.cdp.send('Page.captureScreenshot', {format: 'png',
      captureBeyondViewport: true, clip: {x: 0, y: 0, width: 1280, height, scale: 1}},
      this.session);
    const png = Buffer.from(shot.data, 'base64');
    const file = path.join(this.o.artefacts, `${name}.png`);
    fs.writeFileSync(file, png);
    const img = decodePng(png), b = blankness(img);
    const ok = b.colours >= 2 && b.content >= 0.01;
    this.check(`screenshot ${name}`, ok, `${file} ${img.w}x${img.h}, ${b.colours} colours, ` +
               `${(100 * b.content).toFixed(1)} % non-background${ok ? '' : ': blank'}`);
  }

  async view(name) {
    const hash = name === 'hotspot' ? 'hotspot/0' : name;
    await this.eval(`location.hash = ${JSON.stringify('#' + hash)}; true`);
    const sel = JSON.stringify(`[data-view-ready="${name}"]:not([hidden])`);
    const ms = await waitFor(`view ${name}`, this.timeoutMs,
                             () => this.eval(`!!document.querySelector(${sel})`));
    const text = await this.eval(`document.querySelector(${sel}).innerText.length`);
    this.check(`view ${name}`, text > 40, `ready in ${ms} ms, ${text} characters of text`);
    for (const [v, want] of this.o.expect || []) {
      if (v !== name) continue;
      const has = await this.eval(`document.querySelector(${sel}).innerText.includes(${
        JSON.stringify(want)})`);
      this.check(`view ${name} text`, has, `${has ? 'has' : 'lacks'} "${want}"`);
    }
    for (const [v, first, then] of this.o.before || []) {
      if (v !== name) continue;
      const at = await this.eval(`(function (t) { return [t.indexOf(${JSON.stringify(first)}),
        t.indexOf(${JSON.stringify(then)})]; })(document.querySelector(${sel}).innerText)`);
      this.check(`view ${name} order`, at[0] >= 0 && at[1] > at[0],
                 `"${first}" at ${at[0]}, "${then}" at ${at[1]}`);
    }
    for (const [v, css] of this.o.expectNo || []) {
      if (v !== name) continue;
      const n = await this.eval(`document.querySelector(${sel}).querySelectorAll(${
        JSON.stringify(css)}).length`);
      this.check(`view ${name} without ${css}`, n === 0, `${n} element(s) match`);
    }
    await this.screenshot(name);
  }

  async search(term) {
    await this.eval('location.hash = "#flame"; true');
    await waitFor('flame view', this.timeoutMs,
                  () => this.eval('!!document.getElementById("flame-search")'));
    await this.eval('document.getElementById("flame-search").focus(); true');
    await this.cdp.send('Input.insertText', {text: term}, this.session);
    let status = '';
    try {
      await waitFor('search result', this.timeoutMs, async () => {
        status = await this.eval('document.getElementById("flame-status").textContent');
        return /frames match/.test(status);
      });
    } catch (e) { /* reported below */ }
    const m = /^(\d+) frames match, ([\d.]+) %/.exec(status);
    this.check(`flame search ${term}`, !!m && +m[1] > 0, status || 'no search result shown');
    /* a match too narrow to be drawn leaves no g.match: then a frame under the root */
    const zoomed = await this.eval('(function () { var g = document.querySelector(' +
      '"svg.flame g.match") || document.querySelectorAll("svg.flame g.fr")[1]; g.dispatchEvent(' +
      'new MouseEvent("click", {bubbles: true})); return document.getElementById(' +
      '"flame-status").nextSibling.textContent; })()');
    this.check('flame zoom', /^Zoomed on /.test(zoomed), zoomed);
    await this.screenshot('flame-search');
  }

  /* the tab bar answers the arrow keys; every table head has a scope */
  async keyboard() {
    await this.eval('location.hash = "#synthesis"; document.getElementById("tab-synthesis")' +
                    '.focus(); true');
    for (const type of ['keyDown', 'keyUp'])
      await this.cdp.send('Input.dispatchKeyEvent', {type, key: 'ArrowRight', code: 'ArrowRight',
        windowsVirtualKeyCode: 39}, this.session);
    let state = '';
    try {
      await waitFor('ArrowRight on the tabs', this.timeoutMs, async () => {
        state = await this.eval('location.hash + " " + document.activeElement.id');
        return state === '#hotspots tab-hotspots';
      });
    } catch (e) { /* reported below */ }
    this.check('keyboard', state === '#hotspots tab-hotspots', `ArrowRight on the first tab: ${
      state}`);
    const bare = await this.eval('document.querySelectorAll("table th:not([scope])").length');
    this.check('table heads', bare === 0, `${bare} <th> without scope`);
  }

  /* every control once (sort, filters, rank, icicle, components toggles): any
   * exception they throw is a console error */
  async controls() {
    const used = await this.eval(`(function () {
      var n = 0, i, q = function (s) { return document.querySelector(s); };
      var fire = function (e, type) { if (e) { e.dispatchEvent(new Event(type, {bubbles: true}));
                                               n++; } };
      var pick = function (sel) {
        if (sel && sel.options.length > 1) { sel.selectedIndex = 1; fire(sel, 'change'); }
      };
      var views = ['hotspots', 'flame', 'components'];
      for (i = 0; i < views.length; i++) NK.app.section(views[i]);
      Array.prototype.forEach.call(document.querySelectorAll('button.sort'), function (b) {
        b.click(); n++; });
      Array.prototype.forEach.call(document.querySelectorAll('.filters select'), pick);
      pick(q('#flame-rank'));
      if (q('#flame-icicle')) { q('#flame-icicle').click(); n++; }
      pick(q('#comp-metric'));
      if (q('#comp-inclusive')) { q('#comp-inclusive').click(); n++; }
      return n;
    })()`);
    this.check('controls', used > 0, `${used} controls used`);
  }

  async timeline() {
    const n = await this.eval('location.hash = "#timeline"; ' +
      'document.querySelectorAll("svg.timeline rect").length');
    this.check('timeline Events', n > 0, `${n} Event marks drawn`);
    const zoom = await this.eval('(function () { var s = document.querySelector("svg.timeline"),' +
      ' p = s.parentNode.previousSibling.textContent; s.dispatchEvent(new KeyboardEvent(' +
      '"keydown", {key: "+", bubbles: true})); return [p, s.parentNode.previousSibling' +
      '.textContent]; })()');
    this.check('timeline zoom', zoom[0] !== zoom[1], `+ key: ${zoom[0]} → ${zoom[1]}`);
  }

  async print() {
    const pdf = await this.cdp.send('Page.printToPDF', {printBackground: true}, this.session,
                                    3 * this.timeoutMs);
    const file = path.join(this.o.artefacts, 'report.pdf');
    fs.writeFileSync(file, Buffer.from(pdf.data, 'base64'));
    const views = await this.eval('document.querySelectorAll("section.view[data-view-ready]")' +
                                  '.length');
    this.check('print', views >= ALL_VIEWS.length - 1, `${file}, ${views} views rendered for ` +
               'print');
    await this.cdp.send('Emulation.setEmulatedMedia', {media: 'print'}, this.session);
    await this.screenshot('print');
    await this.cdp.send('Emulation.setEmulatedMedia', {media: ''}, this.session);
  }

  async steps() {
    await this.open();
    for (const v of this.o.views) await this.view(v);
    if (this.o.search) await this.search(this.o.search);
    if (this.o.expectTimeline) await this.timeline();
    await this.keyboard();
    if (!this.o.noPrint) await this.print();
    await this.controls(); /* last: the screenshots show the views as they open */
  }

  async run(chromium) {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'nunatak-chromium.'));
    const child = spawn(chromium, ['--headless=new', '--no-sandbox', '--disable-gpu',
      '--remote-debugging-pipe', `--user-data-dir=${profile}`, '--no-first-run',
      '--no-default-browser-check', '--disable-extensions', '--disable-sync',
      '--disable-background-networking', '--disable-component-update', '--disable-default-apps',
      '--mute-audio', '--hide-scrollbars', 'about:blank'],
      {stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true});
    const exited = new Promise((r) => child.on('exit', r));
    let stderr = '';
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    child.on('error', (e) => { stderr += String(e); });
    this.cdp = new Cdp(child, this.timeoutMs);
    this.cdp.on((m) => this.listen(m));
    try {
      await this.steps();
    } catch (e) {
      this.check('browser', false, `${e.message}${stderr ? '; chromium: ' + stderr.trim()
        .split('\n').slice(-3).join(' | ') : ''}`);
    } finally {
      try { await Promise.race([this.cdp.send('Browser.close'), sleep(2000)]); } catch (e) { /**/ }
      await Promise.race([exited, sleep(3000)]);
      try { process.kill(-child.pid, 'SIGKILL'); } catch (e) { /* the group is gone */ }
      try {
        fs.rmSync(profile, {recursive: true, force: true, maxRetries: 10, retryDelay: 100});
      } catch (e) {
        process.stderr.write(`browser.js: ${profile} left: ${e.message}\n`);
      }
    }
    await sleep(100); /* late console events */
    this.check('console errors', !this.errors.length, this.errors.length ?
               this.errors.join('; ') : 'none');
    this.check('network requests', !this.requests.length, this.requests.length ?
               this.requests.join(' ') : 'none');
  }
}

async function main(o) {
  const chromium = findChromium();
  if (!chromium) {
    process.stdout.write('SKIPPED: chromium is not installed (Debian package chromium)\n');
    process.exit(77);
  }
  if (!fs.existsSync(o.report)) usage(`no report ${o.report}`);
  fs.mkdirSync(o.artefacts, {recursive: true});
  const r = new Run(o);
  r.url = 'file://' + path.resolve(o.report).split('/').map(encodeURIComponent).join('/');
  const t0 = Date.now();
  const guard = setTimeout(() => {
    r.check('total time', false, 'over 10 × --timeout');
    process.exit(1);
  }, o.timeout * 10000);
  await r.run(chromium);
  clearTimeout(guard);
  const ok = r.checks.every((c) => c.ok);
  if (o.json)
    process.stdout.write(JSON.stringify({ok, report: o.report, seconds: (Date.now() - t0) / 1000,
      checks: r.checks, console_errors: r.errors, requests: r.requests}, null, 1) + '\n');
  else
    process.stdout.write(`${ok ? 'PASS' : 'FAIL'}: ${r.checks.filter((c) => !c.ok).length} of ` +
      `${r.checks.length} checks failed, ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  process.exit(ok ? 0 : 1);
}

module.exports = {decodePng, blankness};
if (require.main === module)
  main(parseArgs(process.argv.slice(2))).catch((e) => {
    process.stdout.write(`FAIL browser.js: ${e.stack || e}\n`);
    process.exit(1);
  });
