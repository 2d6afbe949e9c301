/* util.js — DOM building and number formatting for the report's views.
 * Every string from the payload goes through textContent (NK.h), never
 * innerHTML: a function name cannot inject markup. Formatting only: no
 * Diagnostic is computed here. */
(function (NK) {
  'use strict';
  var SVGNS = 'http://www.w3.org/2000/svg';

  function fill(e, attrs, kids) {
    var k;
    for (k in attrs || {}) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] === null ||
          attrs[k] === undefined || attrs[k] === false)
        continue;
      if (k === 'text') e.textContent = String(attrs[k]);
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k] === true ? '' : String(attrs[k]));
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    });
    return e;
  }

  /* h('td', {class: 'num', text: '3'}, [children]) */
  NK.h = function (tag, attrs, kids) {
    return fill(document.createElement(tag), attrs, kids);
  };
  NK.s = function (tag, attrs, kids) {
    return fill(document.createElementNS(SVGNS, tag), attrs, kids);
  };

  NK.pct = function (x, digits) {
    if (x === null || x === undefined) return null;
    if (digits === undefined) digits = x && Math.abs(x) < 0.001 ? 3 : 1;
    return (100 * x).toFixed(digits) + ' %';
  };

  NK.num = function (x, digits) {
    if (x === null || x === undefined) return null;
    if (x !== 0 && (Math.abs(x) >= 1e6 || Math.abs(x) < 1e-3))
      return x.toExponential(digits === undefined ? 3 : digits);
    return String(+x.toFixed(digits === undefined ? 3 : digits));
  };

  NK.seconds = function (s) {
    if (s === null || s === undefined) return null;
    var a = Math.abs(s);
    if (a >= 1 || a === 0) return s.toFixed(3) + ' s';
    if (a >= 1e-3) return (s * 1e3).toFixed(3) + ' ms';
    if (a >= 1e-6) return (s * 1e6).toFixed(3) + ' µs';
    return (s * 1e9).toFixed(0) + ' ns';
  };

  NK.bytes = function (b) {
    if (b === null || b === undefined) return null;
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : String(b)) + ' ' + u[i];
  };

  /* a value by its unit: fraction as %, s, B, B/s, flop/s... */
  NK.byUnit = function (v, unit) {
    if (v === null || v === undefined) return null;
    switch (unit) {
    case 'fraction': return NK.pct(v);
    case 's': return NK.seconds(v);
    case 'B': return NK.bytes(v);
    case 'ratio': return '× ' + NK.num(v);
    default: return NK.num(v) + (unit ? ' ' + unit : '');
    }
  };

  /* "unavailable" with its reason, never 0 */
  NK.unavailable = function (reason, short, word) {
    return NK.h('span', {class: 'unavail', title: reason || ''},
      [word || 'unavailable', reason && !short ? NK.h('span', {class: 'reason',
                                                               text: ': ' + reason}) : null]);
  };

  NK.badge = function (quality) {
    if (!quality) return NK.h('span', {class: 'q q-none', text: '—', title: 'below the floor'});
    return NK.h('span', {class: 'q q-' + quality, text: quality});
  };

  /* a {value, unit, quality, reason} Measurement, as text, Quality marked */
  NK.value = function (v, opts) {
    opts = opts || {};
    if (!v) return NK.unavailable('not in the payload', opts.short);
    if (v.value === null || v.value === undefined)
      return NK.unavailable(v.reason, opts.short, v.quality === 'unavailable' ? null
                            : 'no value');
    var kids = [NK.h('span', {class: 'v', text: NK.byUnit(v.value, v.unit)})];
    if (v.quality === 'estimated' && !opts.short) /* short: a Quality column is next to it */
      kids.push(NK.h('span', {class: 'q q-estimated', text: 'estimated',
                               title: v.reason || ''}));
    if (v.reason && !opts.short) kids.push(NK.h('span', {class: 'reason', text: v.reason}));
    return NK.h('span', {class: 'val'}, kids);
  };

  /* a plain number that may be null with a reason next to it */
  /* an extrapolated value (a rank probed in sampled windows): "≈v ± err",
   * an "estimated" badge whose title says why; plain fmt(v) when not
   * estimated (why null) */
  NK.estimate = function (v, err, fmt, why) {
    if (v === null || v === undefined) return NK.unavailable('not measured');
    if (!why) return document.createTextNode(fmt(v));
    return NK.h('span', {class: 'est'}, [
      NK.h('span', {class: 'v', text: '≈' + fmt(v) + ' ± ' +
        (err === null || err === undefined ? 'unavailable' : fmt(err))}),
      NK.h('span', {class: 'q q-estimated', text: 'estimated', title: why})]);
  };

  NK.maybe = function (x, fmt, reason) {
    if (x === null || x === undefined) return NK.unavailable(reason);
    return document.createTextNode(fmt(x));
  };

  /* <table> with <th scope=col> heads; rows are arrays of cells (node or text) */
  NK.table = function (caption, heads, rows, opts) {
    opts = opts || {};
    var thead = NK.h('thead', {}, [NK.h('tr', {}, heads.map(function (hd) {
      var o = typeof hd === 'object' ? hd : {text: hd};
      return NK.h('th', {scope: 'col', class: o.num ? 'num' : null, text: o.text});
    }))]);
    var tbody = NK.h('tbody', {}, rows.map(function (r) {
      return NK.h('tr', r.attrs || {}, (r.cells || r).map(function (c, i) {
        var o = typeof heads[i] === 'object' ? heads[i] : {};
        var tag = i === 0 && opts.rowHeads ? 'th' : 'td';
        var cell = NK.h(tag, {class: o.num ? 'num' : null, scope: tag === 'th' ? 'row' : null});
        if (c === null || c === undefined) cell.appendChild(NK.h('span', {class: 'muted', text: '—'}));
        else cell.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
        return cell;
      }));
    }));
    return NK.h('table', {class: 'data' + (opts.cls ? ' ' + opts.cls : '')},
      [caption ? NK.h('caption', {text: caption}) : null, thead, tbody]);
  };

  /* a horizontal bar, width = fraction of the widest (drawing only) */
  NK.bar = function (fraction, label, cls) {
    var w = Math.max(0, Math.min(1, fraction || 0));
    return NK.h('span', {class: 'bar ' + (cls || ''), role: 'img', 'aria-label': label || ''},
      [NK.h('span', {class: 'bar-fill', style: 'width:' + (100 * w).toFixed(2) + '%'})]);
  };

  NK.section = function (title, kids, attrs) {
    return NK.h('section', attrs || {}, [NK.h('h2', {text: title})].concat(kids));
  };

  NK.note = function (text, cls) {
    return NK.h('p', {class: 'note ' + (cls || ''), text: text});
  };

  /* distinct colours for a few categories, by index (drawing) */
  var PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#17becf', '#e377c2',
                 '#bcbd22', '#8c564b', '#393b79', '#637939', '#ad494a'];
  NK.palette = function (i) { return PALETTE[i % PALETTE.length]; };

  /* a stable colour per string (drawing) */
  NK.hue = function (s) {
    var h = 0, i;
    for (i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
    return h % 360;
  };

  /* the Diagnostic values of a Hotspot, in the payload's order */
  NK.diagnosticValues = function (d) {
    var out = [], k;
    for (k in d || {})
      if (d[k] && typeof d[k] === 'object' && 'quality' in d[k]) out.push([k, d[k]]);
    return out;
  };

  /* the Run's balance as one table (synthesis and ranks views): with one
   * rank there is none to measure, said once (not "unavailable") */
  NK.balanceTable = function (b, caption) {
    var na = b.imbalance_not_applicable;
    return NK.table(caption, ['ranks', 'imbalance', 'efficiency', 'busiest rank',
      'MPI share'], [[String(b.ranks)].concat(na ? [NK.h('span', {class: 'muted balance-na',
        text: 'not applicable: ' + na}), null, null] : [
      NK.maybe(b.imbalance, NK.num, 'not measured'), NK.maybe(b.efficiency, NK.pct,
      'not measured'), b.busiest_rank === null ? NK.unavailable('no busiest rank') : 'rank ' +
      b.busiest_rank + ' (× ' + NK.num(b.busiest_factor) + ')']).concat([
      NK.maybe(b.mpi_share, NK.pct, 'no MPI time measured')])]);
  };

  NK.hotspotLink = function (h, i) {
    return NK.h('a', {href: '#hotspot/' + i, text: h.name});
  };

  NK.rankOf = function (locus) {
    return locus && locus.rank !== null && locus.rank !== undefined ? locus.rank : null;
  };
  NK.locusLabel = function (l) {
    var r = NK.rankOf(l);
    return (r !== null ? 'rank ' + r + ' · ' : (l.comm || '?') + ' ') + l.tgid +
      (l.tid !== l.tgid ? '/' + l.tid : '');
  };
})(window.NK = window.NK || {});
