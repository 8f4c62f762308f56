// Seeded random numbers: a seed from integers, N(0, 1) by a ziggurat over mulberry32.
var ns = window.bookInpage = window.bookInpage || {};

function seedFrom(parts) {
  var h = 0x9e3779b9;
  for (var i = 0; i < parts.length; i++) {
    h = Math.imul(h ^ (parts[i] >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

// N(0, 1) by Marsaglia and Tsang's ziggurat (2000, 128 layers) over mulberry32: about one
// 32-bit draw per normal, so the d_k sampler's 2 · 4096 · 3000 normals take a fraction of a
// second (Box-Muller's log, sqrt and sine per pair took seconds).
var ZIG = (function () {
  var kn = new Float64Array(128), wn = new Float64Array(128), fn = new Float64Array(128);
  var dn = 3.442619855899, tn = dn, vn = 9.91256303526217e-3, m1 = 2147483648.0;
  var q = vn / Math.exp(-0.5 * dn * dn);
  kn[0] = Math.floor((dn / q) * m1);
  kn[1] = 0;
  wn[0] = q / m1;
  wn[127] = dn / m1;
  fn[0] = 1.0;
  fn[127] = Math.exp(-0.5 * dn * dn);
  for (var i = 126; i >= 1; i--) {
    dn = Math.sqrt(-2 * Math.log(vn / dn + Math.exp(-0.5 * dn * dn)));
    kn[i + 1] = Math.floor((dn / tn) * m1);
    tn = dn;
    fn[i] = Math.exp(-0.5 * dn * dn);
    wn[i] = dn / m1;
  }
  return {kn: kn, wn: wn, fn: fn, r: 3.442619855899};
})();

function normals(seed) {
  var a = seed | 0, kn = ZIG.kn, wn = ZIG.wn, fn = ZIG.fn;
  function next() {  // mulberry32: a signed 32-bit integer
    a = (a + 0x6d2b79f5) | 0;
    var t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return t ^ (t >>> 14);
  }
  function uniform() { return ((next() >>> 0) + 0.5) / 4294967296; }  // in (0, 1)
  function tail(hz, iz) {
    for (;;) {
      var x = hz * wn[iz];
      if (iz === 0) {  // the base layer's tail beyond r
        var y;
        do { x = -Math.log(uniform()) / ZIG.r; y = -Math.log(uniform()); } while (y + y < x * x);
        return hz > 0 ? ZIG.r + x : -ZIG.r - x;
      }
      if (fn[iz] + uniform() * (fn[iz - 1] - fn[iz]) < Math.exp(-0.5 * x * x)) return x;
      hz = next();
      iz = (next() >>> 0) & 127;  // the layer from a draw of its own
      if (Math.abs(hz) < kn[iz]) return hz * wn[iz];
    }
  }
  return function () {
    var hz = next(), iz = hz & 127;
    if (Math.abs(hz) < kn[iz]) return hz * wn[iz];
    return tail(hz, iz);
  };
}

ns.seedFrom = seedFrom;
ns.normals = normals;
