/* view_hotspots.js — the Hotspot inventory: every Hotspot of the summary,
 * sortable by each column (buttons in the heads, aria-sort), filtered by
 * module, class, resolution level and Quality. Rows link to #hotspot/N.
 * The "inside MPI" column names the MPI call most of a Hotspot's samples
 * were inside and its call site ("MPI_Send ← send_blocks (busy_send.c:60)",
 * summary inside_mpi); a note above the table counts nunatak's own probe
 * samples, which are in no Hotspot (summary nunatak_probes). */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};
  var PAGE = 500;

  var COLS = [
    {key: 'share', text: 'share', num: 1, get: function (h) { return h.share; },
     show: function (h) { return NK.pct(h.share); }},
    {key: 'samples', text: 'samples', num: 1, get: function (h) { return h.samples; }},
    {key: 'seconds', text: 'seconds', num: 1, get: function (h) { return h.seconds; },
     show: function (h) { return NK.seconds(h.seconds); }},
    {key: 'level', text: 'level', get: function (h) { return h.resolution_level; }},
    {key: 'module', text: 'module', get: function (h) { return h.module; }},
    {key: 'class', text: 'class', get: classOf,
     show: function (h) { return classOf(h) || NK.h('span', {class: 'muted', text: '—',
       title: h.diagnostic && h.diagnostic.classification_reason || ''}); }},
    {key: 'quality', text: 'Quality', get: function (h) { return h.quality || ''; },
     show: function (h) { return NK.badge(h.quality); }},
    {key: 'inside', text: 'inside MPI', get: insideOf},
    {key: 'name', text: 'Hotspot', get: function (h) { return h.name; }, link: 1}
  ];

  function base(path) { return String(path).replace(/^.*\//, ''); }

  /* "MPI_Send ← send_blocks (busy_send.c:60), 99%" for the first call; ''
   * when none of its samples was inside MPI */
  function insideOf(h) {
    var m = h.inside_mpi, c = m && m.calls[0], s;
    if (!c) return '';
    s = (c.function || 'MPI library') + ' \u2190 ';
    s += c.call_site ? (c.call_site.function || c.call_site.module) +
      (c.call_site.file ? ' (' + base(c.call_site.file) +
       (c.call_site.line ? ':' + c.call_site.line : '') + ')' : '') : 'call site not in the stack';
    return s + ', ' + NK.pct(h.samples ? c.samples / h.samples : null) +
      (m.calls.length > 1 ? ' (+' + (m.calls.length - 1) + ' more)' : '');
  }

  function classOf(h) { return h.diagnostic && h.diagnostic.classification || ''; }

  function distinct(list, get) {
    var seen = {};
    list.forEach(function (h) { seen[get(h)] = 1; });
    return Object.keys(seen).sort();
  }

  function filterSelect(label, values, onchange) {
    var id = 'filter-' + label.replace(/\W/g, '');
    var sel = NK.h('select', {id: id, onchange: onchange},
      [NK.h('option', {value: '', text: 'all'})].concat(values.map(function (v) {
        return NK.h('option', {value: v, text: v === '' ? '(none)' : v});
      })));
    return [NK.h('label', {for: id, text: label}), sel];
  }

  NK.views.hotspots = {
    render: function (sec, P) {
      var H = P.summary.hotspots.map(function (h, i) { return {h: h, i: i}; });
      var state = {sort: 'share', dir: -1, f: {}, shown: PAGE};
      var more = NK.h('p', {class: 'more'});
      var tbody = NK.h('tbody'), heads = NK.h('tr'), count = NK.h('p', {class: 'note',
                                                                         'aria-live': 'polite'});
      var filters = NK.h('div', {class: 'filters', role: 'group', 'aria-label': 'Filters'});
      var FILTERS = [['module', 'module'], ['class', 'class'], ['level', 'resolution level'],
                     ['quality', 'Quality']];

      function col(key) { return COLS.filter(function (c) { return c.key === key; })[0]; }

      function draw() {
        var c = col(state.sort), rows = H.filter(function (x) {
          return FILTERS.every(function (f) {
            var want = state.f[f[0]];
            return want === undefined || want === null || String(col(f[0]).get(x.h)) === want;
          });
        });
        rows.sort(function (a, b) {
          var u = c.get(a.h), v = c.get(b.h);
          if (u === v) return a.i - b.i;
          if (u === null || u === undefined) return 1;
          if (v === null || v === undefined) return -1;
          return (u < v ? -1 : 1) * state.dir;
        });
        tbody.textContent = '';
        more.textContent = '';
        if (rows.length > state.shown)
          more.appendChild(NK.h('button', {type: 'button', text: 'Show all ' + rows.length +
            ' rows (' + (rows.length - state.shown) + ' more)', onclick: function () {
            state.shown = Infinity; draw();
          }}));
        rows.slice(0, state.shown).forEach(function (x) {
          tbody.appendChild(NK.h('tr', {class: x.h.above_floor ? '' : 'below'}, COLS.map(function (k) {
            var v = k.link ? NK.hotspotLink(x.h, x.i) : k.show ? k.show(x.h) : k.get(x.h);
            return NK.h(k.link ? 'th' : 'td', {class: k.num ? 'num' : null,
                                               scope: k.link ? 'row' : null},
                        [v === null || v === undefined ? '—' : v]);
          })));
        });
        Array.prototype.forEach.call(heads.children, function (th, i) {
          th.setAttribute('aria-sort', COLS[i].key === state.sort ?
                          (state.dir < 0 ? 'descending' : 'ascending') : 'none');
        });
        count.textContent = rows.length + ' of ' + H.length + ' Hotspots match' +
          (rows.length > state.shown ? ', the first ' + state.shown + ' shown' : '') +
          ' (rows in grey are below the floor of ' + P.summary.floor + ' samples).';
      }

      COLS.forEach(function (c) {
        heads.appendChild(NK.h('th', {scope: 'col', class: c.num ? 'num' : null}, [
          NK.h('button', {type: 'button', class: 'sort', text: c.text,
                          'aria-label': 'sort by ' + c.text, onclick: function () {
            state.dir = state.sort === c.key ? -state.dir : (c.num ? -1 : 1);
            state.sort = c.key;
            draw();
          }})]));
      });
      FILTERS.forEach(function (f) {
        filterSelect(f[1], distinct(P.summary.hotspots, col(f[0]).get), function (e) {
          state.f[f[0]] = e.target.value === '' && e.target.selectedIndex === 0 ? null
            : e.target.value;
          draw();
        }).forEach(function (n) { filters.appendChild(n); });
      });
      sec.appendChild(NK.h('h2', {text: 'Hotspot inventory'}));
      var pr = P.summary.nunatak_probes;
      if (pr && pr.samples)
        sec.appendChild(NK.h('p', {class: 'note probes', text: "nunatak's probes: " +
          pr.samples + ' samples, ' + NK.pct(pr.share) + " of the samples \u2014 nunatak's cost, " +
          "not the application's: in no Hotspot below, in no share."}));
      sec.appendChild(filters);
      sec.appendChild(count);
      sec.appendChild(NK.h('table', {class: 'data hotspots'}, [
        NK.h('caption', {class: 'sr-only', text: 'Hotspots; column heads sort the table'}),
        NK.h('thead', {}, [heads]), tbody]));
      sec.appendChild(more);
      draw();
    }
  };
})(window.NK = window.NK || {});
