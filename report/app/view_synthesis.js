/* view_synthesis.js — the synthesis: the findings (Hotspots above the floor)
 * by decreasing share with their evidence (the Diagnostic values with their
 * Quality and reason; what holds for the whole Run — no roofline placement,
 * imbalance not applicable — said once above them, not per finding), the
 * ranks and MPI share, and what this report does
 * not say (others, unresolved code, Ceilings not measured, Degradations,
 * the flame graph's and timeline's limits). Everything is read from the
 * payload. */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};
  var FINDINGS = 30;

  /* the placement values: none is said per finding when the Run places no
   * Hotspot (said once, above the findings) */
  var PLACEMENT = {dram_intensity: 1, achieved: 1, attainable: 1, envelope_fraction: 1, ridge: 1};

  /* the values one by one; those without a value grouped by their reason */
  function evidence(h, run) {
    var dl = NK.h('dl', {class: 'evidence'}), none = [], byReason = {};
    NK.diagnosticValues(h.diagnostic).forEach(function (kv) {
      var v = kv[1], name = kv[0].replace(/_/g, ' ');
      var missing = v.value === null || v.value === undefined;
      if (missing && run.no_placement && PLACEMENT[kv[0]]) return;
      if (missing) {
        var k = v.quality + '\n' + (v.reason || '');
        if (!byReason[k]) { byReason[k] = {names: [], v: v}; none.push(k); }
        byReason[k].names.push(name);
        return;
      }
      dl.appendChild(NK.h('dt', {text: name}));
      dl.appendChild(NK.h('dd', {}, [NK.value(v), ' ', NK.badge(v.quality)]));
    });
    none.forEach(function (k) {
      var g = byReason[k];
      dl.appendChild(NK.h('dt', {text: g.names.join(', ')}));
      dl.appendChild(NK.h('dd', {}, [NK.value(g.v), ' ', NK.badge(g.v.quality)]));
    });
    return dl;
  }

  function finding(h, i, run) {
    var d = h.diagnostic || {};
    var cls = d.classification ? NK.h('span', {class: 'cls', text: d.classification})
      : run.no_placement ? '—' : NK.unavailable(d.classification_reason);
    return NK.h('li', {class: 'finding'}, [
      NK.h('h3', {}, [NK.h('span', {class: 'share', text: NK.pct(h.share)}), ' ',
                      NK.hotspotLink(h, i), NK.h('span', {class: 'muted', text: ' in ' + h.module})]),
      NK.h('p', {}, ['class: ', cls, ' · level ', h.resolution_level, ' · ', String(h.samples),
                     ' samples · ', NK.seconds(h.seconds), ' · Quality ', NK.badge(h.quality)]),
      evidence(h, run)
    ]);
  }

  /* what holds for the whole Run, said once: no placement, imbalance not
   * applicable (per reason, naming the findings when not all) */
  function runNotes(list, run) {
    var out = [], reasons = [], by = {};
    if (run.no_placement)
      out.push(NK.note('No roofline placement in this Run, so no roofline class: ' +
                       run.no_placement + '.', 'run-no-placement'));
    list.forEach(function (x) {
      var why = (x[0].diagnostic || {}).imbalance_not_applicable;
      if (!why) return;
      if (!by[why]) { by[why] = []; reasons.push(why); }
      by[why].push(x[0].name);
    });
    reasons.forEach(function (why) {
      out.push(NK.note('Imbalance not applicable' + (by[why].length < list.length ? ' to ' +
                       by[why].join(', ') : '') + ': ' + why + '.', 'imbalance-na'));
    });
    return out;
  }

  function findings(S) {
    var list = S.hotspots.map(function (h, i) { return [h, i]; })
      .filter(function (x) { return x[0].above_floor; })
      .sort(function (a, b) { return b[0].share - a[0].share; });
    if (!list.length)
      return NK.section('Findings', [NK.note('No Hotspot reaches the floor of ' + S.floor +
                                             ' samples: there is no finding to show.')]);
    var ol = NK.h('ol', {class: 'findings'}), more = NK.h('p'), run = S.diagnostic_run || {};
    function show(n) {
      list.slice(ol.children.length, n).forEach(function (x) {
        ol.appendChild(finding(x[0], x[1], run));
      });
      more.textContent = '';
      if (ol.children.length < list.length)
        more.appendChild(NK.h('button', {type: 'button', text: 'Show the ' + (list.length -
          ol.children.length) + ' other findings', onclick: function () { show(list.length); }}));
    }
    show(FINDINGS);
    return NK.section('Findings', [
      NK.note(list.length + ' Hotspots above the floor of ' + S.floor + ' samples, ' +
              S.totals.samples + ' samples (' + NK.seconds(S.totals.seconds) + ') of ' +
              (S.counter || 'unknown counter') + (list.length > FINDINGS ? '; the first ' +
              FINDINGS + ' here, every one in the Hotspot inventory' : '') + '.')
    ].concat(runNotes(list, run), [ol, more]));
  }

  function ranks(S) {
    var b = S.balance || {};
    if (!b.ranks)
      return NK.section('Ranks and MPI', [NK.note('Not an MPI Run: no ranks were seen, so ' +
                                                  'there is no imbalance or MPI share.')]);
    return NK.section('Ranks and MPI', [NK.balanceTable(b, null),
      NK.h('p', {}, [NK.h('a', {href: '#ranks', text: 'Per-rank times and MPI call sites'})])]);
  }

  /* with no Hotspot placed, no conclusion rests on a Ceiling: none listed */
  function ceilings(M, run) {
    if (run && run.no_placement)
      return NK.note('Ceilings: none is used, since no Hotspot of this Run is placed (the ' +
                     'Machine\'s are in the Run\'s manifest).', 'ceilings-unused');
    var machines = M.machines || (M.machine ? {'': M.machine} : {}), rows = [], n;
    for (n in machines)
      (machines[n].ceilings || []).forEach(function (c) {
        if (c.quality !== 'measured')
          rows.push([n || '—', c.name, NK.value(c, {short: true}), NK.badge(c.quality),
                     c.reason || '']);
      });
    if (!rows.length) return NK.note('Every Ceiling of the Machine was measured.');
    return NK.table('Ceilings not measured', ['node', 'Ceiling', 'value', 'Quality', 'reason'], rows);
  }

  function limits(P) {
    var out = [], f = P.flame || {}, e = P.events || {};
    if (f.limit)
      out.push('Flame graph: ' + f.limit.stacks + ' of ' + f.limit.of + ' Stacks kept (' +
               f.limit.reason + '); ' + (f.samples - f.kept_samples) + ' samples not drawn' +
               (f.limit.frames_cut ? '; ' + f.limit.frames_cut + ' Stacks cut to their ' +
                'innermost frames.' : '.'));
    if (e.limit)
      out.push('Timeline: ' + e.limit.events + ' of ' + e.limit.of + ' MPI Events kept (' +
               e.limit.reason + ').');
    if (e.available === false)
      out.push('No MPI Events timeline: ' + (e.reason || 'no reason given') + '.');
    return out;
  }

  function notSaid(P) {
    var S = P.summary, kids = [], o = S.others || {};
    kids.push(NK.note(o.hotspots + ' Hotspots below the floor (' + o.samples + ' samples, ' +
                      NK.pct(o.share) + ') are not findings.'));
    kids.push(NK.h('p', {}, ['Unresolved code: ', NK.maybe(S.unresolved_share, NK.pct,
                                                           'not computed'), ' of the samples.']));
    if ((S.unresolved_modules || []).length)
      kids.push(NK.table('Modules without symbols', ['module', {text: 'share', num: 1},
        {text: 'samples', num: 1}, 'remedy'], S.unresolved_modules.map(function (m) {
        return [NK.h('span', {text: m.module, title: m.path}), NK.pct(m.share), String(m.samples),
                m.remedy];
      })));
    if (S.kernel_share !== null && S.kernel_share !== undefined)
      kids.push(NK.note('Kernel code: ' + NK.pct(S.kernel_share) + ' of the samples (' +
                        (S.kernel_share_source || '') + ').'));
    kids.push(ceilings(P.manifest || {}, P.summary.diagnostic_run));
    if ((S.degradations || []).length)
      kids.push(NK.table('Degradations', ['Degradation', 'node', 'what happened', 'remedy'],
        S.degradations.map(function (d) {
          /* a remedy may hold one line per cause */
          return [d.name, d.node || '—', d.message, NK.h('span', {class: 'lines', text: d.remedy})];
        })));
    else
      kids.push(NK.note('No Degradation was recorded.'));
    limits(P).forEach(function (t) { kids.push(NK.note(t)); });
    if (S.being_written) kids.push(NK.note('The Run was still being written.', 'error'));
    return NK.section('What this report does not say', kids);
  }

  NK.views.synthesis = {
    render: function (sec, P) {
      sec.appendChild(NK.h('h2', {class: 'print-title', text: 'Synthesis'}));
      sec.appendChild(findings(P.summary));
      sec.appendChild(ranks(P.summary));
      sec.appendChild(notSaid(P));
    }
  };
})(window.NK = window.NK || {});
