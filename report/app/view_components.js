/* view_components.js — the Component costs per Step (payload.components:
 * self or inclusive, wall_s or cpu_s, each the JSON of `nunatak components
 * --json`), the warm-up Step marked, and the per-executable (when the
 * sampled processes ran more than one, as in the terminal summary),
 * per-process and per-thread tables of the summary. Where a Component did
 * not run: no value, never 0. */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};

  function fmt(v, unit) {
    return v === null || v === undefined ? null : NK.byUnit(v, unit);
  }

  function overview(C) {
    return NK.table('Components (' + C.metric + ', ' + (C.inclusive ? 'inclusive' : 'self') +
      ', over ' + C.steps + ' Steps' + (C.warm_up_kept ? ', warm-up kept' :
      ', warm-up left out') + ')', ['Component', 'parent', {text: 'calls', num: 1},
      {text: 'total', num: 1}, {text: 'per Step', num: 1}, {text: 'per Step it ran', num: 1},
      {text: 'coverage', num: 1}], C.components.map(function (c) {
      return [NK.h('span', {}, [c.name, c.is_step ? NK.h('span', {class: 'q q-none',
        text: 'Step'}) : null]), c.parent, String(c.calls), fmt(c.seconds, C.unit),
        fmt(c.seconds_per_step, C.unit), fmt(c.seconds_when_run, C.unit), NK.pct(c.coverage)];
    }), {rowHeads: 1});
  }

  function perStep(C) {
    var n = 0, rows = [], s;
    C.components.forEach(function (c) { n = Math.max(n, (c.per_step || []).length); });
    for (s = 0; s < n; s++) {
      var warm = s === 0 || s < C.first_step;
      rows.push({attrs: {class: warm ? 'warm' : ''}, cells: [
        NK.h('span', {}, [String(s), warm ? NK.h('span', {class: 'q q-estimated',
          text: s >= C.first_step ? 'warm-up, counted' : 'warm-up, left out of the totals'}) : null])
      ].concat(C.components.map(function (c) { return fmt(c.per_step[s], C.unit); }))});
    }
    return NK.table('Per Step (— where the Component did not run)', ['Step'].concat(
      C.components.map(function (c) { return {text: c.name, num: 1}; })), rows,
      {rowHeads: 1, cls: 'steps'});
  }

  function components(sec, CS) {
    var state = {metric: 'wall_s', kind: 'self'}, out = NK.h('div');
    var metrics = Object.keys(CS);
    function draw() {
      var C = CS[state.metric][state.kind];
      out.textContent = '';
      out.appendChild(overview(C));
      (C.notes || []).forEach(function (t) { out.appendChild(NK.note(t)); });
      var o = C.measurement_overhead_ns;
      if (o && o.per_call !== null)
        out.appendChild(NK.note('Probe cost: ' + NK.seconds(o.per_call / 1e9) + ' per call, ' +
          o.calls + ' calls (inside the costs above, not subtracted).'));
      out.appendChild(perStep(C));
    }
    var kind = NK.h('button', {type: 'button', 'aria-pressed': 'false', id: 'comp-inclusive',
      text: 'Inclusive (nested Components added)', onclick: function () {
        state.kind = state.kind === 'self' ? 'inclusive' : 'self';
        kind.setAttribute('aria-pressed', state.kind === 'inclusive' ? 'true' : 'false');
        draw();
      }});
    sec.appendChild(NK.h('div', {class: 'controls', role: 'group', 'aria-label': 'Components'}, [
      NK.h('label', {for: 'comp-metric', text: 'Metric'}),
      NK.h('select', {id: 'comp-metric', onchange: function (e) {
        state.metric = e.target.value; draw();
      }}, metrics.map(function (m) { return NK.h('option', {value: m, text: m}); })), kind]));
    sec.appendChild(out);
    draw();
  }

  function cpuTime(x) {
    return x.cpu_time === null ? NK.unavailable(x.cpu_time_reason) :
      NK.h('span', {}, [NK.seconds(x.cpu_time), x.cpu_time_quality === 'estimated' ?
        NK.badge('estimated') : null]);
  }

  /* its file name; its path where another executable has the same name */
  function executableLabel(e) {
    if (e.name === null) return 'unknown (neither path nor command name recorded)';
    if (e.executable === null) return e.name + ' (path unknown)';
    return NK.h('span', {title: e.executable, text: e.name_shared ? e.executable : e.name});
  }

  function executables(S) {
    var E = S.executables || [];
    if (E.filter(function (e) { return e.samples > 0; }).length < 2) return null;
    return NK.table('Executables (' + E.length + ', of ' + (S.processes || []).length +
      ' processes)', ['executable', {text: 'share', num: 1}, {text: 'samples', num: 1},
      {text: 'seconds', num: 1}, {text: 'processes', num: 1}, {text: 'CPU time', num: 1}],
      E.map(function (e) {
        return [executableLabel(e), NK.pct(e.share), String(e.samples),
          e.seconds === null ? null : NK.seconds(e.seconds), String(e.processes), cpuTime(e)];
      }), {rowHeads: 1, cls: 'executables'});
  }

  function processes(S) {
    return NK.table('Processes', ['process', 'node', 'executable', {text: 'samples', num: 1},
      {text: 'share', num: 1}, {text: 'CPU time', num: 1}, {text: 'threads', num: 1},
      {text: 'busy threads', num: 1}], (S.processes || []).map(function (p) {
      return [(p.comm || '?') + ' ' + p.pid, p.node, p.executable, String(p.samples),
        NK.pct(p.share), cpuTime(p), String(p.threads), String(p.busy_threads)];
    }), {rowHeads: 1});
  }

  function threads(S) {
    return NK.table('Threads', ['thread', 'node', 'process', {text: 'samples', num: 1},
      {text: 'share', num: 1}, {text: 'share of its process', num: 1}, 'busy'],
      (S.threads || []).map(function (t) {
        return [String(t.tid), t.node, String(t.pid), String(t.samples), NK.pct(t.share),
                NK.pct(t.process_share), t.busy ? 'busy' : 'idle'];
      }), {rowHeads: 1});
  }

  NK.views.components = {
    render: function (sec, P) {
      sec.appendChild(NK.h('h2', {text: 'Components, executables, processes and threads'}));
      if (P.components && P.components.wall_s) components(sec, P.components);
      else sec.appendChild(NK.note('No Component costs: the Run was made without ' +
        '--component/--step.'));
      var E = executables(P.summary);
      if (E) sec.appendChild(E);
      sec.appendChild(processes(P.summary));
      sec.appendChild(threads(P.summary));
    }
  };
})(window.NK = window.NK || {});
