// Short Weierstrass points with a = 0 (G1 over Fq, G2 over Fq2): affine bases, Jacobian sums.
#pragma once

template <class F>
struct Affine {
  F x, y;
  // The zkey writes the point at infinity as (0, 0), which is not on the curve.
  bool isInfinity() const { return x.isZero() && y.isZero(); }
};

/** X/Z^2, Y/Z^3; Z = 0 is the point at infinity. */
template <class F>
struct Jacobian {
  F x, y, z;

  static Jacobian infinity() { return {F::one(), F::one(), F::zero()}; }
  bool isInfinity() const { return z.isZero(); }

  Jacobian dbl() const {
    if (isInfinity()) return *this;
    const F a = x.sqr(), b = y.sqr(), c = b.sqr();
    const F d = ((x + b).sqr() - a - c).dbl();
    const F e = a.dbl() + a;
    const F f = e.sqr();
    Jacobian r;
    r.x = f - d.dbl();
    r.y = e * (d - r.x) - c.dbl().dbl().dbl();
    r.z = (y * z).dbl();
    return r;
  }

  /** this + q for an affine q (madd-2007-bl). */
  Jacobian addAffine(const Affine<F>& q) const {
    if (q.isInfinity()) return *this;
    if (isInfinity()) return {q.x, q.y, F::one()};
    const F z1z1 = z.sqr();
    const F u2 = q.x * z1z1;
    const F s2 = q.y * z * z1z1;
    const F h = u2 - x;
    const F rr = (s2 - y).dbl();
    if (h.isZero()) return rr.isZero() ? dbl() : infinity();
    const F hh = h.sqr();
    const F i = hh.dbl().dbl();
    const F j = h * i;
    const F v = x * i;
    Jacobian r;
    r.x = rr.sqr() - j - v.dbl();
    r.y = rr * (v - r.x) - (y * j).dbl();
    r.z = (z + h).sqr() - z1z1 - hh;
    return r;
  }

  /** this + q (add-2007-bl). */
  Jacobian add(const Jacobian& q) const {
    if (q.isInfinity()) return *this;
    if (isInfinity()) return q;
    const F z1z1 = z.sqr(), z2z2 = q.z.sqr();
    const F u1 = x * z2z2, u2 = q.x * z1z1;
    const F s1 = y * q.z * z2z2, s2 = q.y * z * z1z1;
    const F h = u2 - u1;
    const F rr = (s2 - s1).dbl();
    if (h.isZero()) return rr.isZero() ? dbl() : infinity();
    const F i = h.dbl().sqr();
    const F j = h * i;
    const F v = u1 * i;
    Jacobian r;
    r.x = rr.sqr() - j - v.dbl();
    r.y = rr * (v - r.x) - (s1 * j).dbl();
    r.z = ((z + q.z).sqr() - z1z1 - z2z2) * h;
    return r;
  }

  Affine<F> toAffine() const {
    if (isInfinity()) return {F::zero(), F::zero()};
    const F zi = z.inverse(), zi2 = zi.sqr();
    return {x * zi2, y * zi2 * zi};
  }

  /** this * k for a standard-form scalar. */
  Jacobian times(const u64 k[4]) const {
    Jacobian r = infinity();
    for (int bit = 255; bit >= 0; bit--) {
      r = r.dbl();
      if ((k[bit / 64] >> (bit % 64)) & 1) r = r.add(*this);
    }
    return r;
  }
};

using G1Affine = Affine<Fq>;
using G1 = Jacobian<Fq>;
using G2Affine = Affine<Fq2>;
using G2 = Jacobian<Fq2>;
