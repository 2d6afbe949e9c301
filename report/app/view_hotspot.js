/* view_hotspot.js — one Hotspot (#hotspot/N, N its index in
 * summary.hotspots): the source extract with each line's share as a bar, the
 * inline frames of its sampled addresses, the Diagnostic metrics with value,
 * unit, Quality, reason, formula and lineage, and its roofline chart
 * (NK.roofline, view_roofline.js). */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};

  function source(h) {
    var s = h.source, kids = [];
    if (!s)
      return NK.section('Source', [NK.note('No source extract: ' + (h.resolution_level ===
        'line' ? 'the summary has none for this Hotspot' : 'the Hotspot is resolved to the ' +
        h.resolution_level + ' level, not to lines') + '.')]);
    kids.push(NK.h('p', {class: 'note'}, [NK.h('code', {text: s.resolved || s.file || '?'}),
      ' · ', NK.h('span', {class: 'status status-' + s.status, text: s.status}),
      s.reason ? ': ' + s.reason : '', s.truncated ? ' · extract truncated' : '']));
    var max = 0;
    (s.lines || []).forEach(function (l) { if (l.share > max) max = l.share; });
    var rows = (s.lines || []).map(function (l) {
      return NK.h('tr', {class: l.samples ? 'hot' : ''}, [
        NK.h('th', {scope: 'row', class: 'num', text: String(l.line)}),
        NK.h('td', {class: 'num'}, [l.share === null ? '' : NK.pct(l.share)]),
        NK.h('td', {class: 'barcell'}, [l.share ? NK.bar(l.share / max, NK.pct(l.share) +
                                                        ' of the samples') : null]),
        NK.h('td', {class: 'code'}, [l.text === null || l.text === undefined ?
          NK.h('span', {class: 'muted', text: '(text not in this report)'}) :
          NK.h('code', {text: l.text})])
      ]);
    });
    if (rows.length)
      kids.push(NK.h('table', {class: 'data source'}, [
        NK.h('caption', {class: 'sr-only', text: 'Source lines with their share of samples'}),
        NK.h('thead', {}, [NK.h('tr', {}, ['line', 'share', 'bar', 'code'].map(function (t) {
          return NK.h('th', {scope: 'col', text: t});
        }))]), NK.h('tbody', {}, rows)]));
    return NK.section('Source', kids);
  }

  function inline(h) {
    var chains = h.inline || [];
    if (!chains.length)
      return NK.section('Inline frames', [NK.note('No inlined function among its sampled ' +
                                                  'addresses.')]);
    return NK.section('Inline frames', [NK.table(null, [{text: 'samples', num: 1},
      'chain (outermost first)'], chains.map(function (c) {
      return [String(c.samples), NK.h('ol', {class: 'chain'}, c.frames.map(function (f) {
        return NK.h('li', {}, [NK.h('code', {text: f.function || '?'}), NK.h('span', {
          class: 'muted', text: ' ' + (f.file || '?') + ':' + (f.line === null ? '?' : f.line)})]);
      }))];
    }))]);
  }

  /* A value unavailable for the Run-wide reason (no placement in this Run)
   * is not a row of its own: one line says which and why (the cause once,
   * in the Roofline section); the ridge, which places nothing then, stands
   * in the Roofline's Ceilings per core only. */
  function metrics(h, run) {
    var np = (run || {}).no_placement, runWide = [];
    var rows = NK.diagnosticValues(h.diagnostic).filter(function (kv) {
      if (np && kv[1].quality === 'unavailable' && kv[1].reason === np) {
        runWide.push(kv[0].replace(/_/g, ' '));
        return false;
      }
      return !(np && kv[0] === 'ridge'); /* placing nothing, under Ceilings per core */
    }).map(function (kv) {
      var v = kv[1];
      return [kv[0].replace(/_/g, ' '),
              NK.value(v, {short: true}),
              v.unit || '', NK.badge(v.quality), v.reason || '', v.formula || '',
              (v.lineage || []).join(', ')];
    });
    var d = h.diagnostic || {};
    return NK.section('Metrics', [NK.table(null, ['metric', 'value', 'unit', 'Quality', 'reason',
      'formula', 'lineage'], rows, {rowHeads: 1}),
      runWide.length ? NK.note('Not computed: ' + runWide.join(', ') + ' — no roofline ' +
        'placement in this Run (why: see Roofline).', 'metrics-run-wide') : null,
      NK.h('p', {}, ['Class: ', d.classification ? NK.h('strong', {text: d.classification})
        : np && runWide.length ? NK.h('span', {class: 'muted', text: 'none (no roofline ' +
          'placement in this Run)'}) : NK.unavailable(d.classification_reason, false, 'none'),
        d.imbalance_over ? ' · imbalance over ' + d.loci + ' ' + d.imbalance_over : '',
        d.imbalance_not_applicable ? ' · imbalance not applicable: ' +
          d.imbalance_not_applicable : ''])]);
  }

  NK.views.hotspot = {
    render: function (sec, P, arg) {
      var i = +arg, h = P.summary.hotspots[i];
      sec.appendChild(NK.h('p', {}, [NK.h('a', {href: '#hotspots', text: '← Hotspot inventory'})]));
      if (!h) {
        sec.appendChild(NK.note('There is no Hotspot number ' + arg + ' in this Run.', 'error'));
        return;
      }
      sec.appendChild(NK.h('h2', {}, [NK.h('span', {text: h.name})]));
      sec.appendChild(NK.h('p', {class: 'note'}, [NK.pct(h.share) + ' of the samples · ' +
        h.samples + ' samples · ' + NK.seconds(h.seconds) + ' · module ', NK.h('code',
        {text: h.module}), ' · level ' + h.resolution_level + ' · Quality ', NK.badge(h.quality),
        h.above_floor ? '' : ' · below the floor']));
      sec.appendChild(source(h));
      sec.appendChild(inline(h));
      sec.appendChild(metrics(h, P.summary.diagnostic_run));
      sec.appendChild(NK.roofline(P.roofline, h, P.summary.diagnostic_run));
    }
  };
})(window.NK = window.NK || {});
