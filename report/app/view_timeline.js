/* view_timeline.js — the MPI Events of payload.events on one SVG lane per
 * Locus (by rank), zoom and pan by buttons, the keyboard (+ - ← →) or the
 * wheel, a <title> per Event (name, duration, bytes, peer). Events thinner
 * than a pixel next to each other are drawn as one mark (drawing only).
 * Without Events: the reason. */
(function (NK) {
  'use strict';
  NK.views = NK.views || {};
  var W = 1200, L = 130, LANE = 30;

  function Timeline(P) {
    var E = P.events, self = this, end = 0;
    this.P = P; this.E = E; this.lanes = [];
    var byLocus = {};
    E.events.forEach(function (e) {
      (byLocus[e[0]] = byLocus[e[0]] || []).push(e);
      if (e[2] + e[3] > end) end = e[2] + e[3];
    });
    Object.keys(byLocus).map(Number).sort(function (a, b) {
      var ra = NK.rankOf(P.loci[a]), rb = NK.rankOf(P.loci[b]);
      return (ra === null ? 1e9 : ra) - (rb === null ? 1e9 : rb) || a - b;
    }).forEach(function (l) {
      self.lanes.push({locus: l, ev: byLocus[l].sort(function (a, b) { return a[2] - b[2]; })});
    });
    this.end = end || 1;
    this.t0 = 0; this.t1 = this.end;
  }

  Timeline.prototype.x = function (t) {
    return L + (W - L) * (t - this.t0) / (this.t1 - this.t0);
  };

  Timeline.prototype.title = function (e) {
    var name = this.E.names[e[1]];
    return name + ' at ' + NK.seconds(e[2] / 1e9) + ', ' + NK.seconds(e[3] / 1e9) +
      (e[4] !== null && e[4] !== undefined ? ', ' + NK.bytes(e[4]) : '') +
      (e[5] !== null && e[5] !== undefined ? ', peer rank ' + e[5] : '');
  };

  Timeline.prototype.lane = function (g, lane, i) {
    var self = this, y = i * LANE + 4, last = null, drawn = 0;
    g.appendChild(NK.s('text', {x: 4, y: y + 15, text: NK.locusLabel(this.P.loci[lane.locus])}));
    g.appendChild(NK.s('line', {x1: L, x2: W, y1: y + LANE - 3, y2: y + LANE - 3, class: 'grid'}));
    lane.ev.forEach(function (e) {
      if (e[2] + e[3] < self.t0 || e[2] > self.t1) return;
      var x0 = Math.max(L, self.x(e[2])), x1 = Math.min(W, self.x(e[2] + e[3]));
      if (last && last.tiny && x0 - last.x1 < 1 && x1 - x0 < 1 && last.x1 - last.x0 < 3) {
        last.x1 = Math.max(last.x1, x1);
        last.n++;
        if (e[1] !== last.name) last.r.setAttribute('fill', '#8a8f96'); /* mixed Events */
        last.r.setAttribute('width', Math.max(1, last.x1 - last.x0).toFixed(2));
        last.t.textContent = last.n + ' Events too short to draw apart, from ' + last.first;
        return;
      }
      var t = NK.s('title', {text: self.title(e)});
      var r = NK.s('rect', {x: x0.toFixed(2), y: y, height: LANE - 8,
                            width: Math.max(1, x1 - x0).toFixed(2),
                            fill: NK.palette(e[1])}, [t]);
      g.appendChild(r);
      drawn++;
      last = {x0: x0, x1: x1, r: r, t: t, n: 1, first: self.title(e), name: e[1],
              tiny: x1 - x0 < 1};
    });
    return drawn;
  };

  Timeline.prototype.draw = function () {
    var self = this, g = NK.s('g'), span = this.t1 - this.t0, k;
    this.lanes.forEach(function (lane, i) { self.lane(g, lane, i); });
    for (k = 0; k <= 4; k++)
      g.appendChild(NK.s('text', {x: L + (W - L) * k / 4, y: this.lanes.length * LANE + 18,
        'text-anchor': k === 0 ? 'start' : k === 4 ? 'end' : 'middle',
        text: NK.seconds((this.t0 + span * k / 4) / 1e9)}));
    this.svg.textContent = '';
    this.svg.appendChild(NK.s('title', {text: 'MPI Events per rank'}));
    this.svg.appendChild(g);
    this.info.textContent = 'Showing ' + NK.seconds(this.t0 / 1e9) + ' to ' +
      NK.seconds(this.t1 / 1e9) + ' after the first Event.';
  };

  /* zoom by factor f around the fraction c of the window; pan by fraction p */
  Timeline.prototype.view = function (f, c, p) {
    var span = (this.t1 - this.t0) * f, mid = this.t0 + (this.t1 - this.t0) * c;
    span = Math.max(1000, Math.min(this.end, span));
    var t0 = mid - span * c + (this.t1 - this.t0) * p;
    t0 = Math.max(0, Math.min(this.end - span, t0));
    this.t0 = t0; this.t1 = t0 + span;
    this.draw();
  };

  Timeline.prototype.controls = function () {
    var self = this, b = function (text, label, f, p) {
      return NK.h('button', {type: 'button', text: text, 'aria-label': label,
                             onclick: function () { self.view(f, 0.5, p); }});
    };
    return NK.h('div', {class: 'controls', role: 'group', 'aria-label': 'Timeline zoom and pan'}, [
      b('+', 'zoom in', 0.5, 0), b('−', 'zoom out', 2, 0), b('←', 'pan left', 1, -0.25),
      b('→', 'pan right', 1, 0.25),
      NK.h('button', {type: 'button', text: 'Reset', onclick: function () {
        self.t0 = 0; self.t1 = self.end; self.draw();
      }})]);
  };

  NK.views.timeline = {
    render: function (sec, P) {
      var E = P.events, tl, box;
      sec.appendChild(NK.h('h2', {text: 'Timeline of MPI Events'}));
      if (!E || !E.available || !E.events.length) {
        sec.appendChild(NK.note('No MPI Event to show: ' + (E && E.reason ||
          'the Run has no Events') + '.'));
        return;
      }
      tl = new Timeline(P);
      sec.appendChild(NK.note(E.events.length + ' Events (' + E.names.join(', ') + ') on ' +
        tl.lanes.length + ' Loci; time from the first Event. Hover an Event for its details.'));
      if (E.limit)
        sec.appendChild(NK.note('Only ' + E.limit.events + ' of ' + E.limit.of + ' Events are ' +
                                'drawn (' + E.limit.reason + ').', 'warn'));
      sec.appendChild(NK.h('ul', {class: 'legend', 'aria-label': 'Event colours'},
        E.names.map(function (n, i) {
          return NK.h('li', {}, [NK.h('span', {class: 'swatch', 'aria-hidden': 'true',
            style: 'background:' + NK.palette(i)}), n]);
        }).concat([NK.h('li', {}, [NK.h('span', {class: 'swatch', 'aria-hidden': 'true',
          style: 'background:#8a8f96'}), 'several Events too short to draw apart'])])));
      sec.appendChild(tl.controls());
      tl.info = NK.h('p', {class: 'note', 'aria-live': 'polite'});
      sec.appendChild(tl.info);
      tl.svg = NK.s('svg', {class: 'timeline', width: '100%', role: 'img', tabindex: '0',
        'aria-label': 'MPI Events per rank; + and − zoom, arrows pan',
        viewBox: '0 0 ' + W + ' ' + (tl.lanes.length * LANE + 26)});
      tl.svg.addEventListener('wheel', function (e) {
        var r = tl.svg.getBoundingClientRect();
        var c = Math.max(0, Math.min(1, ((e.clientX - r.left) * W / r.width - L) / (W - L)));
        e.preventDefault();
        tl.view(e.deltaY < 0 ? 0.8 : 1.25, c, 0);
      }, {passive: false});
      tl.svg.addEventListener('keydown', function (e) {
        var m = {'+': [0.5, 0], '=': [0.5, 0], '-': [2, 0], ArrowLeft: [1, -0.25],
                 ArrowRight: [1, 0.25]}[e.key];
        if (!m) return;
        e.preventDefault();
        tl.view(m[0], 0.5, m[1]);
      });
      box = NK.h('div', {class: 'timeline-box'}, [tl.svg]);
      sec.appendChild(box);
      tl.draw();
      NK.timeline = tl;
    }
  };
})(window.NK = window.NK || {});
