/* view_ranks.js — ranks and MPI: per-rank bars (MPI time, time outside MPI,
 * CPU time) with the balance figures (imbalance, efficiency, busiest rank)
 * from summary.balance, the per-rank table, and the MPI call sites by time
 * and by bytes with their per-rank spread (summary.mpi[].per_rank).
 * A rank probed in sampled windows (the probes' cost budget) has estimated
 * sites and MPI time: "≈v ± one standard error" and an "estimated" badge
 * whose title says why (summary.mpi[].estimate), said once under the
 * tables; a rank's MPI time says whether it came from its samples ("from N
 * samples") or its windows (summary.ranks[].mpi_time_method). */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};

  var SERIES = [['mpi_time', 'MPI time', 'c-mpi'], ['outside_mpi_time', 'outside MPI', 'c-out'],
                ['cpu_time', 'CPU time', 'c-cpu']];

  function bars(ranks) {
    var max = 0, rowH = 3 * 14 + 12, W = 640, L = 70, svg;
    ranks.forEach(function (r) {
      SERIES.forEach(function (s) { if (r[s[0]] > max) max = r[s[0]]; });
    });
    svg = NK.s('svg', {viewBox: '0 0 ' + W + ' ' + (ranks.length * rowH + 30), class: 'rankbars',
                       role: 'img', 'aria-label': 'Per-rank MPI, outside-MPI and CPU time; ' +
                       'the same values are in the table below'});
    ranks.forEach(function (r, i) {
      var y0 = i * rowH + 4;
      svg.appendChild(NK.s('text', {x: 0, y: y0 + 24, text: 'rank ' + r.rank}));
      SERIES.forEach(function (s, j) {
        var v = r[s[0]], y = y0 + j * 14;
        if (v === null || v === undefined) {
          svg.appendChild(NK.s('text', {x: L, y: y + 10, class: 'unavail',
                                        text: s[1] + ': unavailable'}));
          return;
        }
        svg.appendChild(NK.s('rect', {x: L, y: y, height: 12, class: s[2],
          width: Math.max(1, (W - L - 150) * (max ? v / max : 0))},
          [NK.s('title', {text: 'rank ' + r.rank + ' ' + s[1] + ': ' + NK.seconds(v)})]));
        svg.appendChild(NK.s('text', {x: L + 4 + (W - L - 150) * (max ? v / max : 0), y: y + 10,
                                      text: s[1] + ' ' + NK.seconds(v)}));
      });
    });
    return svg;
  }

  function rankTable(ranks) {
    return NK.table('Per rank', ['rank', 'node', {text: 'application time', num: 1},
      {text: 'MPI time', num: 1}, {text: 'outside MPI', num: 1}, {text: 'CPU time', num: 1},
      {text: 'MPI fraction', num: 1}, {text: 'imbalance', num: 1},
      {text: 'nunatak probe cost', num: 1}], ranks.map(function (r) {
      return [String(r.rank), r.node, r.app_time === null ? NK.unavailable(r.app_time_reason)
        : NK.h('span', {}, [NK.seconds(r.app_time), r.app_time_quality === 'estimated' ?
          NK.badge('estimated') : null]),
        NK.estimate(r.mpi_time, r.mpi_time_error, NK.seconds, rankWhy(r)),
        NK.maybe(r.outside_mpi_time, NK.seconds, 'not measured'),
        NK.maybe(r.cpu_time, NK.seconds, 'not measured'),
        NK.estimate(r.mpi_fraction, r.mpi_fraction_error, NK.pct, rankWhy(r)),
        r.imbalance === undefined ? null : NK.maybe(r.imbalance, NK.num, 'not measured'),
        probeCell(r)];
    }), {rowHeads: 1});
  }

  /* why a rank's MPI time is estimated and how (its samples, or its
   * windows: the probing text), null: measured */
  function rankWhy(r) {
    if (!r.mpi_time_estimated) return null;
    var probing = r.probing || 'probed in sampled windows';
    if (r.mpi_time_method === 'samples' && r.samples)
      return 'from ' + r.samples.application + ' samples, ' + NK.pct(r.mpi_fraction) +
        ' of them inside MPI calls, × the app time (its calls ' + probing +
        '; the windows\' estimate: ' + NK.seconds(r.windows_mpi_time) + ' ± ' +
        NK.seconds(r.windows_mpi_time_error) + ')';
    return 'extrapolated from its windows: ' + probing + (r.mpi_time_method_reason ?
      ' (not from its samples: ' + r.mpi_time_method_reason + ')' : '');
  }

  /* which call sites are estimated and why, once under the tables */
  function estimateNote(mpi) {
    var est = mpi.filter(function (s) { return s.estimate && !s.lifetime; });
    if (!est.length) return null;
    return NK.note('≈ estimated, ± one standard error: ' + est.length + ' call site' +
      (est.length === 1 ? '' : 's') + ' (marked estimated): ' + est[0].estimate +
      '. Their totals are extrapolated from the windows in which their ranks\' calls were ' +
      'probed, so that nunatak\'s probes stay within their cost budget.', 'estimate-note');
  }

  /* what nunatak's MPI probes cost one rank: calls × calibrated cost, its
   * share of the rank's time; not part of the application's times above */
  function probeCell(r) {
    if (r.probe_cost_s === null || r.probe_cost_s === undefined)
      return NK.unavailable(r.probe_cost_reason || 'not measured');
    return NK.h('span', {title: r.probe_calls + ' probed calls × ' +
      NK.num(r.probe_cost_per_call_ns / 1000) + ' µs' + (r.probing ? '; ' + r.probing : '')},
      [NK.seconds(r.probe_cost_s) + ' (' + NK.pct(r.probe_cost_share) + ')']);
  }

  /* the Run-level statement of the probe cost */
  function probeNote(pc) {
    var per = pc.per_call_ns_min === pc.per_call_ns_max ? NK.num(pc.per_call_ns_min / 1000) :
      NK.num(pc.per_call_ns_min / 1000) + '–' + NK.num(pc.per_call_ns_max / 1000);
    return NK.note('nunatak\'s MPI probes cost ' + NK.seconds(pc.seconds) + ', ' +
      NK.pct(pc.share) + ' of the ranks\' time (' + pc.calls + ' probed calls × ' + per +
      ' µs, calibrated on each node at the start): nunatak\'s cost, taken out of the ' +
      'application and MPI times shown here.', 'probe-cost');
  }

  function spread(site, key, fmt) {
    var max = 0, per = site.per_rank || [];
    per.forEach(function (p) { if (p[key] > max) max = p[key]; });
    return NK.h('ul', {class: 'spread'}, per.map(function (p) {
      return NK.h('li', {}, [NK.h('span', {class: 'rk', text: 'r' + p.rank}),
        NK.bar(max ? p[key] / max : 0, 'rank ' + p.rank + ': ' + fmt(p[key])),
        NK.h('span', {class: 'muted', text: ' ' + fmt(p[key])})]);
    }));
  }

  function where(s) {
    var c = s.call_site || {};
    return NK.h('span', {}, [NK.h('code', {text: s.function}), NK.h('span', {class: 'muted',
      text: ' ' + (c.function || '?') + ' ' + (c.file ? c.file.split('/').pop() : '?') + ':' +
      (c.line === null || c.line === undefined ? '?' : c.line)}),
      s.lifetime ? NK.h('span', {class: 'q q-none', text: 'lifetime'}) : null]);
  }

  function count(n) { return String(Math.round(n)); }

  function sites(mpi) {
    var byTime = mpi.slice().sort(function (a, b) { return b.total_time - a.total_time; });
    var byBytes = mpi.filter(function (s) { return s.bytes || s.bytes_reason; })
      .sort(function (a, b) { return (b.bytes || 0) - (a.bytes || 0); });
    return [
      NK.table('MPI call sites by time', ['call site', {text: 'calls', num: 1},
        {text: 'total', num: 1}, {text: 'mean', num: 1}, {text: 'min', num: 1},
        {text: 'max', num: 1}, {text: 'CoV', num: 1}, 'time per rank'], byTime.map(function (s) {
        return [where(s), NK.estimate(s.calls, s.calls_error, count, s.estimate),
                NK.estimate(s.total_time, s.total_time_error, NK.seconds, s.estimate),
                NK.seconds(s.mean_time),
                NK.seconds(s.min_time), NK.seconds(s.max_time), s.cov_not_applicable ? NK.h('span', {class: 'muted cov-na',
                  text: 'not applicable: ' + s.cov_not_applicable}) : NK.maybe(s.cov, NK.num, 'one call'),
                spread(s, 'total_time', NK.seconds)];
      }), {rowHeads: 1}),
      NK.table('MPI call sites by bytes', ['call site', {text: 'calls', num: 1},
        {text: 'bytes', num: 1}, 'time per rank'], byBytes.map(function (s) {
        return [where(s), NK.estimate(s.calls, s.calls_error, count, s.estimate),
                NK.maybe(s.bytes, function (b) { return (s.estimate ? '≈' : '') + NK.bytes(b); },
                         s.bytes_reason),
                spread(s, 'total_time', NK.seconds)];
      }), {rowHeads: 1}),
      estimateNote(mpi)
    ].filter(function (x) { return x; });
  }

  NK.views.ranks = {
    render: function (sec, P) {
      var S = P.summary, b = S.balance || {};
      sec.appendChild(NK.h('h2', {text: 'Ranks and MPI'}));
      if (!b.ranks || !(S.ranks || []).length) {
        sec.appendChild(NK.note('Not an MPI Run: no rank was seen (no MPI_Init in the ' +
          'profiled processes), so there are no per-rank times and no MPI call sites.'));
        return;
      }
      sec.appendChild(NK.balanceTable(b, 'Balance'));
      sec.appendChild(NK.h('figure', {}, [bars(S.ranks), NK.h('figcaption', {
        text: 'Per rank: MPI time, time outside MPI, CPU time.'})]));
      sec.appendChild(rankTable(S.ranks));
      if (S.probe_cost && S.probe_cost.seconds !== null && S.probe_cost.seconds !== undefined)
        sec.appendChild(probeNote(S.probe_cost));
      if ((S.mpi || []).length) sites(S.mpi).forEach(function (t) { sec.appendChild(t); });
      else sec.appendChild(NK.note('No MPI call site was recorded.'));
    }
  };
})(window.NK = window.NK || {});
