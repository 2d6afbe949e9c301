/* view_roofline.js — NK.roofline(roofline, hotspot, diagnostic_run): the log-log roofline
 * chart of one Hotspot from payload.roofline (peak, bandwidth, ridge) and
 * the Hotspot's dram_intensity and achieved values. The diagonal (memory
 * bound) stops at the ridge, the peak goes on from there; without a
 * bandwidth only the peak is drawn, without a peak no chart: the reason is
 * said. A Hotspot that is not placed gets no chart (no estimated peak over
 * an empty plot): the Ceilings as a table and why there is no point — the
 * Run's reason (diagnostic_run.no_placement) when no Hotspot is placed.
 * Drawing only: the values are the payload's. */
(function (NK) {
  'use strict';
  var W = 560, H = 340, L = 70, R = 20, T = 20, B = 50;

  function tick(d) {
    var e = Math.round(Math.log10(d));
    return e >= 4 || e <= -3 ? '1e' + e : String(+d.toPrecision(1));
  }

  function decade(x, up) { return Math.pow(10, (up ? Math.ceil : Math.floor)(Math.log10(x))); }

  function axes(svg, x, y, xr, yr) {
    var d, g = NK.s('g', {class: 'axes'});
    for (d = xr[0]; d <= xr[1] * 1.0001; d *= 10) {
      g.appendChild(NK.s('line', {x1: x(d), x2: x(d), y1: T, y2: H - B, class: 'grid'}));
      g.appendChild(NK.s('text', {x: x(d), y: H - B + 16, 'text-anchor': 'middle',
                                  text: tick(d)}));
    }
    for (d = yr[0]; d <= yr[1] * 1.0001; d *= 10) {
      g.appendChild(NK.s('line', {x1: L, x2: W - R, y1: y(d), y2: y(d), class: 'grid'}));
      g.appendChild(NK.s('text', {x: L - 6, y: y(d) + 4, 'text-anchor': 'end',
                                  text: tick(d)}));
    }
    g.appendChild(NK.s('text', {x: (L + W - R) / 2, y: H - 10, 'text-anchor': 'middle',
                                text: 'arithmetic intensity (flop/B of DRAM traffic)'}));
    g.appendChild(NK.s('text', {x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle',
                                transform: 'rotate(-90 14 ' + (T + H - B) / 2 + ')',
                                text: 'flop/s'}));
    svg.appendChild(g);
  }

  function chart(rf, px, py) {
    var peak = rf.peak.value, bw = rf.bandwidth && rf.bandwidth.value,
        ridge = rf.ridge && rf.ridge.value;
    var xs = [ridge || 1].concat(px ? [px] : []), ys = [peak].concat(py ? [py] : []);
    var xr = [decade(Math.min.apply(null, xs) / 10), decade(Math.max.apply(null, xs) * 10, 1)];
    if (bw) ys.push(bw * xr[0]);
    var yr = [decade(Math.min.apply(null, ys) / 2), decade(Math.max.apply(null, ys) * 2, 1)];
    var lx = Math.log10, x = function (v) {
      return L + (W - L - R) * (lx(v) - lx(xr[0])) / (lx(xr[1]) - lx(xr[0]));
    }, y = function (v) {
      return H - B - (H - T - B) * (lx(v) - lx(yr[0])) / (lx(yr[1]) - lx(yr[0]));
    };
    var label = 'Roofline: peak ' + NK.byUnit(peak, rf.peak.unit) +
      (bw ? ', bandwidth ' + NK.byUnit(bw, rf.bandwidth.unit) + ', ridge at ' +
       NK.num(ridge) + ' flop/B' : '') + (px ? '; this Hotspot at ' + NK.num(px) + ' flop/B, ' +
       NK.num(py) + ' flop/s' : '; no point for this Hotspot');
    var svg = NK.s('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'roofline', role: 'img',
                           'aria-label': label}, [NK.s('title', {text: label})]);
    axes(svg, x, y, xr, yr);
    if (bw && ridge) {
      svg.appendChild(NK.s('line', {x1: x(xr[0]), y1: y(bw * xr[0]), x2: x(ridge), y2: y(peak),
                                    class: 'roof mem'}));
      svg.appendChild(NK.s('line', {x1: x(ridge), y1: y(peak), x2: x(xr[1]), y2: y(peak),
                                    class: 'roof peak'}));
      svg.appendChild(NK.s('text', {x: x(ridge) + 4, y: y(peak) + 16, 'text-anchor': 'start',
                                    text: 'ridge ' + NK.num(ridge) + ' flop/B'}));
    } else {
      svg.appendChild(NK.s('line', {x1: L, y1: y(peak), x2: W - R, y2: y(peak),
                                    class: 'roof peak'}));
    }
    svg.appendChild(NK.s('text', {x: W - R - 4, y: y(peak) - 6, 'text-anchor': 'end',
                                  text: 'peak ' + NK.byUnit(peak, rf.peak.unit) +
                                  (rf.peak.quality === 'estimated' ? ' (estimated)' : '')}));
    if (px && py)
      svg.appendChild(NK.s('circle', {cx: x(px), cy: y(py), r: 6, class: 'point'},
                           [NK.s('title', {text: 'this Hotspot: ' + NK.num(px) + ' flop/B, ' +
                                           NK.num(py) + ' flop/s'})]));
    return svg;
  }

  NK.roofline = function (rf, h, run) {
    var d = h.diagnostic || {}, kids = [];
    var xi = d.dram_intensity || {}, ya = d.achieved || {};
    var placed = xi.value > 0 && ya.value > 0;
    run = run || {};
    rf = rf || {peak: {value: null, reason: 'no roofline in the payload'}};
    kids.push(NK.table('Ceilings per core', ['', 'value', 'Quality'], ['peak', 'bandwidth',
      'ridge'].map(function (k) {
        var v = rf[k] || {value: null, quality: 'unavailable', reason: rf.reason};
        return [k, NK.value(v, {short: true}), NK.badge(v.quality)];
      }), {rowHeads: 1, cls: 'compact'}));
    /* no point, no chart: an estimated peak over an empty plot says nothing */
    if (!placed) {
      kids.push(NK.note(run.no_placement
        ? 'No roofline chart: no Hotspot of this Run is placed (' + run.no_placement + ').'
        : 'No roofline chart: this Hotspot is not placed (' +
          ((xi.value > 0 ? ya.reason : xi.reason) || d.classification_reason ||
           'no placement') + ').', 'roofline-none'));
      return NK.section('Roofline', kids, {class: 'roofline-sec'});
    }
    if (rf.reason) kids.push(NK.note('No roofline diagonal: ' + rf.reason + '.'));
    if (rf.peak && rf.peak.value > 0)
      kids.push(chart(rf, xi.value, ya.value));
    else
      kids.push(NK.note('No roofline chart: the peak is unavailable (' +
                        (rf.peak && rf.peak.reason || 'no reason given') + ').'));
    return NK.section('Roofline', kids, {class: 'roofline-sec'});
  };
})(window.NK = window.NK || {});
