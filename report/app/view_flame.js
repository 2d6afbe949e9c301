/* view_flame.js — the flame graph (root at the bottom) and icicle (root at
 * the top) of payload.flame: the stored Stacks merged into a tree for all
 * ranks or one rank (by the Loci's rank), zoom on a frame by click or
 * Enter, reset, a search box that highlights matching frames and says
 * "N frames match, X % of samples". Truncated Stacks hang under a
 * "[truncated]" frame. Widths are sums of sample counts: drawing only. */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};
  var W = 1200, ROW = 17, MINW = 1.5, MAXRECTS = 6000, TRUNC = -1;

  function Node(f, parent) {
    this.f = f; this.v = 0; this.x = 0; this.c = null; this.k = null; this.p = parent;
    this.d = parent ? parent.d + 1 : 0;
  }

  /* the child of n for frame f, made when missing (a Map once it has many) */
  function child(n, f) {
    var c, i;
    if (n.c) {
      c = n.c.get(f);
    } else if (n.k) {
      for (i = 0; i < n.k.length; i++) if (n.k[i].f === f) return n.k[i];
    }
    if (c) return c;
    c = new Node(f, n);
    if (!n.k) n.k = [];
    n.k.push(c);
    if (n.c) n.c.set(f, c);
    else if (n.k.length > 8) n.c = new Map(n.k.map(function (x) { return [x.f, x]; }));
    return c;
  }

  /* the weight of a Stack for a selection: '' all, 'r:N' rank N, 'none' no rank */
  function weight(st, sel, loci) {
    if (sel === '') return st.n;
    var w = 0;
    (st.l || []).forEach(function (e) {
      var r = NK.rankOf(loci[e[0]]);
      if (sel === 'none' ? r === null : r !== null && 'r:' + r === sel) w += e[1];
    });
    return w;
  }

  function build(F, loci, sel) {
    var root = new Node(null, null);
    F.stacks.forEach(function (st) {
      var w = weight(st, sel, loci), node = root, path;
      if (!w) return;
      root.v += w;
      path = st.t ? [TRUNC].concat(st.f) : st.f;
      for (var i = 0; i < path.length; i++) {
        node = child(node, path[i]);
        node.v += w;
      }
    });
    var todo = [root], n, x;
    while (todo.length) { /* children sorted by weight, laid out left to right */
      n = todo.pop();
      n.k = n.k ? n.k.sort(function (a, b) { return b.v - a.v; }) : [];
      n.c = null;
      x = n.x;
      for (var j = 0; j < n.k.length; j++) { n.k[j].x = x; x += n.k[j].v; todo.push(n.k[j]); }
    }
    return root;
  }

  function frameOf(F, f) {
    return f === TRUNC ? {name: '[truncated]', module: '', kernel: false}
      : f === null ? {name: 'all', module: '', kernel: false} : F.frames[f];
  }

  function colour(fr, match) {
    if (match) return 'hsl(300, 85%, 62%)';
    if (fr.kernel) return 'hsl(25, 80%, 62%)';
    if (fr.name === '[truncated]' || fr.name === 'all') return 'hsl(0, 0%, 78%)';
    return 'hsl(' + (NK.hue(fr.module || fr.name) % 50 + 20) + ', 75%, ' +
      (55 + NK.hue(fr.name) % 15) + '%)';
  }

  function Flame(sec, P) {
    this.P = P; this.F = P.flame; this.sel = ''; this.icicle = false; this.query = '';
    this.root = build(this.F, P.loci || [], '');
    this.focus = this.root;
    this.sec = sec;
  }

  Flame.prototype.matches = function (fr) {
    return this.query !== '' && fr.name.toLowerCase().indexOf(this.query) >= 0;
  };

  /* "N frames match, X % of samples" over the whole tree of the selection */
  Flame.prototype.searchText = function () {
    var self = this, frames = {}, hit = 0;
    if (!this.query) return '';
    (function walk(n) {
      if (n.f !== null && self.matches(frameOf(self.F, n.f))) {
        hit += n.v;
        (function mark(m) {
          if (self.matches(frameOf(self.F, m.f))) frames[m.f] = 1;
          m.k.forEach(mark);
        })(n);
        return;
      }
      n.k.forEach(walk);
    })(this.root);
    return Object.keys(frames).length + ' frames match, ' +
      (this.root.v ? NK.pct(hit / this.root.v) : '0 %') + ' of samples';
  };

  Flame.prototype.rect = function (g, n, x, w, depth) {
    var fr = frameOf(this.F, n.f), self = this, total = this.root.v;
    var y = this.icicle ? depth * ROW : (this.depth - depth) * ROW;
    var label = fr.name + (fr.module ? ' (' + fr.module + ')' : '') + ' — ' + n.v +
      ' samples, ' + NK.pct(total ? n.v / total : 0, 2);
    var match = n.f !== null && this.matches(fr);
    var e = NK.s('g', {class: 'fr' + (match ? ' match' : ''), transform: 'translate(' +
      x.toFixed(2) + ',' + y + ')', tabindex: w > 40 ? '0' : null, role: w > 40 ? 'button' : null,
      'aria-label': w > 40 ? label + '; Enter zooms' : null}, [
      NK.s('title', {text: label}),
      NK.s('rect', {width: Math.max(w - 0.5, 0.5).toFixed(2), height: ROW - 1, rx: 2,
                    fill: colour(fr, match)})]);
    if (w > 28)
      e.appendChild(NK.s('text', {x: 3, y: ROW - 5, text: fr.name.length * 6.6 > w - 6 ?
        fr.name.slice(0, Math.max(1, Math.floor((w - 6) / 6.6) - 1)) + '…' : fr.name}));
    e.addEventListener('click', function () { self.zoom(n); });
    e.addEventListener('keydown', function (ev) {
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); self.zoom(n); }
    });
    g.appendChild(e);
  };

  Flame.prototype.draw = function () {
    var self = this, F = this.focus, scale = F.v ? W / F.v : 0, list = [], anc = [], a, g;
    for (a = F; a; a = a.p) anc.unshift(a);
    this.depth = 0;
    /* breadth first, the widest kept: at most MAXRECTS frames of MINW px or more */
    var queue = [F], qi = 0, n;
    while (qi < queue.length && list.length < MAXRECTS) {
      n = queue[qi++];
      list.push(n);
      if (n.d > self.depth) self.depth = n.d;
      n.k.forEach(function (c) { if (c.v * scale >= MINW) queue.push(c); });
    }
    this.cut = queue.length - list.length;
    g = NK.s('g');
    anc.forEach(function (n) { if (n !== F) self.rect(g, n, 0, W, n.d); });
    list.forEach(function (n) { self.rect(g, n, (n.x - F.x) * scale, n.v * scale, n.d); });
    this.svg.setAttribute('viewBox', '0 0 ' + W + ' ' + (this.depth + 1) * ROW);
    this.svg.setAttribute('height', (this.depth + 1) * ROW);
    this.svg.textContent = '';
    this.svg.appendChild(NK.s('title', {text: (this.icicle ? 'Icicle' : 'Flame') + ' graph of ' +
                                        this.root.v + ' samples'}));
    this.svg.appendChild(g);
    this.status.textContent = this.searchText();
    this.where.textContent = (F === this.root ? 'Whole profile.' : 'Zoomed on ' +
      frameOf(this.F, F.f).name + ' (' + F.v + ' samples).') + (this.cut ? ' ' + this.cut +
      ' more frames are too many to draw at once: zoom in to see them.' : '');
  };

  Flame.prototype.zoom = function (n) { this.focus = n; this.draw(); };

  Flame.prototype.selector = function () {
    var self = this, ranks = {}, none = false, opts;
    (this.P.loci || []).forEach(function (l) {
      var r = NK.rankOf(l);
      if (r === null) none = true; else ranks[r] = 1;
    });
    opts = [NK.h('option', {value: '', text: 'all ranks and processes'})];
    Object.keys(ranks).map(Number).sort(function (a, b) { return a - b; }).forEach(function (r) {
      opts.push(NK.h('option', {value: 'r:' + r, text: 'rank ' + r}));
    });
    if (none && Object.keys(ranks).length)
      opts.push(NK.h('option', {value: 'none', text: 'processes without a rank (launcher…)'}));
    return [NK.h('label', {for: 'flame-rank', text: 'Ranks'}),
      NK.h('select', {id: 'flame-rank', disabled: opts.length < 2, onchange: function (e) {
        self.sel = e.target.value;
        self.root = build(self.F, self.P.loci || [], self.sel);
        self.focus = self.root;
        self.draw();
      }}, opts)];
  };

  Flame.prototype.controls = function () {
    var self = this, box = NK.h('div', {class: 'controls', role: 'group',
                                        'aria-label': 'Flame graph controls'});
    var search = NK.h('input', {type: 'search', id: 'flame-search', placeholder: 'function name',
                                autocomplete: 'off'});
    search.addEventListener('input', function () {
      self.query = search.value.trim().toLowerCase();
      self.draw();
    });
    var toggle = NK.h('button', {type: 'button', 'aria-pressed': 'false', id: 'flame-icicle',
                                 text: 'Icicle (root at the top)', onclick: function () {
      self.icicle = !self.icicle;
      toggle.setAttribute('aria-pressed', self.icicle ? 'true' : 'false');
      self.draw();
    }});
    [NK.h('label', {for: 'flame-search', text: 'Search'}), search,
     NK.h('button', {type: 'button', id: 'flame-reset', text: 'Reset zoom',
                     onclick: function () { self.zoom(self.root); }}), toggle]
      .concat(this.selector()).forEach(function (n) { box.appendChild(n); });
    return box;
  };

  NK.views.flame = {
    render: function (sec, P) {
      var F = P.flame, fl;
      sec.appendChild(NK.h('h2', {text: 'Flame graph'}));
      if (!F || !F.stacks || !F.stacks.length) {
        sec.appendChild(NK.note('No Stack was stored in this Run: there is no flame graph.'));
        return;
      }
      fl = new Flame(sec, P);
      sec.appendChild(NK.note(F.samples + ' samples of ' + (F.counter || 'an unknown counter') +
        ', ' + F.stacks.length + ' distinct Stacks; click a frame (or Enter) to zoom.'));
      if (F.limit)
        sec.appendChild(NK.note('Only ' + F.limit.stacks + ' of ' + F.limit.of + ' Stacks are ' +
          'drawn (' + F.limit.reason + '): ' + (F.samples - F.kept_samples) +
          ' samples are not in this graph.', 'warn'));
      if (F.limit && F.limit.frames_cut)
        sec.appendChild(NK.note(F.limit.frames_cut + ' Stacks were too deep: only their ' +
          'innermost frames are drawn.', 'warn'));
      sec.appendChild(fl.controls());
      fl.status = NK.h('p', {class: 'note', id: 'flame-status', role: 'status',
                             'aria-live': 'polite'});
      fl.where = NK.h('p', {class: 'note'});
      sec.appendChild(fl.status);
      sec.appendChild(fl.where);
      fl.svg = NK.s('svg', {class: 'flame', width: '100%', role: 'group',
                            'aria-label': 'Flame graph'});
      sec.appendChild(NK.h('div', {class: 'flame-box'}, [fl.svg]));
      fl.draw();
      NK.flame = fl;
    }
  };
})(window.NK = window.NK || {});
