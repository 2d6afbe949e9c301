/* main.js — starts the report: reads the payload, draws the header and the
 * tab bar, and shows one view per #hash (#synthesis #hotspots #hotspot/N
 * #ranks #flame #timeline #components). Each view is rendered once into its
 * own <section class="view">, then marked data-view-ready=NAME; before
 * printing every view is rendered so the printout has every table.
 * The views register themselves in NK.views (the other files). */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};

  var TABS = [
    ['synthesis', 'Synthesis'], ['hotspots', 'Hotspots'], ['ranks', 'Ranks and MPI'],
    ['flame', 'Flame graph'], ['timeline', 'Timeline'], ['components', 'Components']
  ];

  function header(P) {
    var run = P.manifest && P.manifest.run || {};
    var cmd = (run.command || []).join(' ');
    return NK.h('header', {class: 'top'}, [
      NK.h('h1', {}, ['nunatak — ', NK.h('span', {text: run.name || P.run_dir || 'Run'})]),
      NK.h('p', {class: 'meta'}, [
        NK.h('span', {text: cmd}),
        NK.h('span', {text: ' · created ' + (run.created || '?')}),
        NK.h('span', {text: ' · report ' + (P.generated || '?')}),
        NK.h('span', {text: ' · ' + (P.format && P.format.generated_by || '')}),
        P.no_source ? NK.h('span', {class: 'q q-estimated', text: 'no source'}) : null
      ])
    ]);
  }

  function tabBar(go) {
    var bar = NK.h('nav', {class: 'tabs', role: 'tablist', 'aria-label': 'Report views'});
    TABS.forEach(function (t, i) {
      bar.appendChild(NK.h('button', {
        type: 'button', role: 'tab', id: 'tab-' + t[0], 'data-tab': t[0],
        'aria-controls': 'view-' + t[0], 'aria-selected': 'false', tabindex: i ? '-1' : '0',
        text: t[1], onclick: function () { go(t[0]); }
      }));
    });
    bar.addEventListener('keydown', function (e) {
      var tabs = Array.prototype.slice.call(bar.querySelectorAll('[role=tab]'));
      var i = tabs.indexOf(document.activeElement), j = -1;
      if (i < 0) return;
      if (e.key === 'ArrowRight') j = (i + 1) % tabs.length;
      else if (e.key === 'ArrowLeft') j = (i + tabs.length - 1) % tabs.length;
      else if (e.key === 'Home') j = 0;
      else if (e.key === 'End') j = tabs.length - 1;
      if (j < 0) return;
      e.preventDefault();
      tabs[j].focus();
      go(tabs[j].getAttribute('data-tab'));
    });
    return bar;
  }

  function App(P) {
    this.P = P;
    this.sections = {};
    this.main = NK.h('main', {id: 'views'});
  }

  /* the section of a route, rendered on first use */
  App.prototype.section = function (name, arg) {
    var key = arg === undefined ? name : name + '/' + arg, sec = this.sections[key];
    var view = NK.views[name];
    if (sec) return sec;
    sec = NK.h('section', {class: 'view', id: 'view-' + key.replace('/', '-'), role: 'tabpanel',
                           'aria-labelledby': 'tab-' + (name === 'hotspot' ? 'hotspots' : name),
                           tabindex: '-1', hidden: true});
    this.main.appendChild(sec);
    this.sections[key] = sec;
    try {
      view.render(sec, this.P, arg, this);
    } catch (err) {
      sec.appendChild(NK.note('This view could not be drawn: ' + err.message, 'error'));
      throw err;
    }
    sec.setAttribute('data-view-ready', name);
    return sec;
  };

  App.prototype.show = function () {
    var hash = decodeURIComponent((location.hash || '').replace(/^#/, '')) || 'synthesis';
    var parts = hash.split('/'), name = parts[0], arg = parts[1], k, sec;
    if (!NK.views[name] || (name === 'hotspot' && !/^\d+$/.test(arg || ''))) {
      name = 'synthesis'; arg = undefined;
    }
    sec = this.section(name, arg);
    for (k in this.sections) this.sections[k].hidden = this.sections[k] !== sec;
    var tab = name === 'hotspot' ? 'hotspots' : name;
    Array.prototype.forEach.call(document.querySelectorAll('[role=tab]'), function (b) {
      var on = b.getAttribute('data-tab') === tab;
      b.setAttribute('aria-selected', on ? 'true' : 'false');
      b.setAttribute('tabindex', on ? '0' : '-1');
    });
    if (this.current && this.current !== sec && document.activeElement &&
        document.activeElement.getAttribute('role') !== 'tab')
      sec.focus({preventScroll: true});
    this.current = sec;
  };

  App.prototype.go = function (route) {
    if (location.hash === '#' + route) this.show();
    else location.hash = route;
  };

  /* every view (not the hotspot details not opened) for the printout */
  App.prototype.renderAll = function () {
    var self = this;
    TABS.forEach(function (t) { self.section(t[0]); });
  };

  NK.start = function () {
    var root = document.getElementById('app'), P, app;
    try {
      P = JSON.parse(document.getElementById('nunatak-payload').textContent);
    } catch (err) {
      root.appendChild(NK.note('The report payload cannot be read: ' + err.message, 'error'));
      throw err;
    }
    if (!P.format || P.format.name !== 'nunatak-report' || P.format.schema !== 1)
      root.appendChild(NK.note('This page expects the nunatak-report payload schema 1; ' +
                               'it may be drawn wrong.', 'error'));
    app = new App(P);
    NK.app = app;
    root.removeAttribute('aria-live');
    root.appendChild(header(P));
    root.appendChild(tabBar(function (r) { app.go(r); }));
    root.appendChild(app.main);
    window.addEventListener('hashchange', function () { app.show(); });
    window.addEventListener('beforeprint', function () { app.renderAll(); });
    app.show();
  };

  if (!NK.started) {
    NK.started = true;
    if (document.readyState === 'loading')
      document.addEventListener('DOMContentLoaded', function () { NK.start(); });
    else
      setTimeout(function () { NK.start(); }, 0);
  }
})(window.NK = window.NK || {});
